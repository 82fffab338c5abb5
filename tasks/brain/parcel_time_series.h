#pragma once

// One subject's parcel time series, [time, parcels], and its validation: what the brain task
// trains on, whether it came from a NIfTI image and a parcellation, a CSV file or a .npy file.

#include <cstdint>
#include <string>
#include <vector>

namespace pelab::brain {

/// A [time, parcels] matrix of one subject.
struct ParcelTimeSeries {
  std::string source;  // the file it came from, for messages
  std::int64_t time_points = 0;
  std::int64_t parcels = 0;
  std::vector<float> values;  // [time_points, parcels], row-major
  /// [parcels]: the atlas label of each column when known (for messages), else empty.
  std::vector<std::int64_t> parcel_ids;
  /// [parcels]: each column's name from a CSV header, else empty.
  std::vector<std::string> column_names;
  double tr_seconds = 0.0;  // 0 when unknown

  float at(std::int64_t t, std::int64_t p) const {
    return values[static_cast<std::size_t>(t * parcels + p)];
  }
};

/// Reads a [time, parcels] matrix from a CSV file: one row per time point, one column per parcel,
/// numbers only, except for an optional header line (the first line when any of its fields is not
/// a number). Every row must have the same number of fields. Does not validate the values (NaN is
/// read as NaN): call validate(). Errors name the file and the line.
ParcelTimeSeries read_time_series_csv(const std::string& path);

/// What to do with a parcel that is constant over time (no signal: outside the brain, masked
/// out, or a broken export). A parcel is constant when its standard deviation over time is at
/// most kConstantTolerance * max(1, |mean|).
enum class ConstantParcels {
  kError,  // the default: an error naming the file and the parcels, saying how to fix it
  kDrop,   // drop them; across subjects, drop the union (validate_cohort)
};
inline constexpr double kConstantTolerance = 1e-6;

struct ValidationOptions {
  /// The number of parcels the series must have (the centroids' count); 0: any.
  std::int64_t expected_parcels = 0;
  std::string expected_from;  // where that count comes from (the centroids file), for messages
  /// The fewest time points a subject may have (e.g. the task's window length).
  std::int64_t min_time_points = 1;
  ConstantParcels constant_parcels = ConstantParcels::kError;
};

/// Checks one subject and returns its constant parcels (column indices, ascending), which is
/// empty unless the policy is kDrop. Throws pelab::Error naming series.source for: a shape that
/// does not match `values` or expected_parcels (the message gives both shapes), fewer than
/// min_time_points time points, a NaN or infinite value (the message gives the parcel and time
/// point, 0-based, and how many there are), or constant parcels under kError.
std::vector<std::int64_t> validate(const ParcelTimeSeries& series,
                                   const ValidationOptions& options);

/// `series` without the given columns (indices, in any order; duplicates allowed).
ParcelTimeSeries drop_parcels(const ParcelTimeSeries& series,
                              const std::vector<std::int64_t>& parcels);

/// The columns of `series` named `names` (from its CSV header), in that order. Throws
/// pelab::Error naming the file and a missing name (and the names it has) when one is not there,
/// or when the file had no header.
ParcelTimeSeries select_columns(const ParcelTimeSeries& series,
                                const std::vector<std::string>& names);

/// `series` with the named columns regressed out of every column (ordinary least squares with
/// an intercept, the usual nuisance regression of fMRI: white matter, ventricles, the global
/// signal), and those columns removed. Errors as select_columns.
ParcelTimeSeries regress_out(const ParcelTimeSeries& series,
                             const std::vector<std::string>& nuisance);

/// validate() for every subject; under kDrop, drops from every subject the union of all subjects'
/// constant parcels, so that all keep the same parcels, and returns that union (ascending): drop
/// the same parcels from the centroids (drop_parcels in parcel_centroids.h). Subjects must all
/// have the same number of parcels.
std::vector<std::int64_t> validate_cohort(std::vector<ParcelTimeSeries>& subjects,
                                          const ValidationOptions& options);

}  // namespace pelab::brain
