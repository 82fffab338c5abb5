#include "parcel_time_series.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include <pelab/sdk.h>

#include "text_io.h"

namespace pelab::brain {
namespace {

// "12" or "12 (label 13)" when the atlas label is known.
std::string parcel_name(const ParcelTimeSeries& series, std::int64_t p) {
  if (series.parcel_ids.size() != static_cast<std::size_t>(series.parcels))
    return fmt::format("{}", p);
  return fmt::format("{} (label {})", p, series.parcel_ids[static_cast<std::size_t>(p)]);
}

std::vector<std::int64_t> constant_parcels(const ParcelTimeSeries& series) {
  std::vector<std::int64_t> constant;
  for (std::int64_t p = 0; p < series.parcels; ++p) {
    double sum = 0.0;
    for (std::int64_t t = 0; t < series.time_points; ++t)
      sum += series.at(t, p);
    const double mean = sum / static_cast<double>(series.time_points);
    double squares = 0.0;
    for (std::int64_t t = 0; t < series.time_points; ++t) {
      const double deviation = series.at(t, p) - mean;
      squares += deviation * deviation;
    }
    const double std_dev = std::sqrt(squares / static_cast<double>(series.time_points));
    if (std_dev <= kConstantTolerance * std::max(1.0, std::abs(mean))) constant.push_back(p);
  }
  return constant;
}

}  // namespace

ParcelTimeSeries read_time_series_csv(const std::string& path) {
  std::ifstream in(path);
  PELAB_CHECK(in.is_open(), "{}: cannot open the file (does it exist?)", path);
  ParcelTimeSeries series;
  series.source = path;
  std::string line;
  int line_number = 0;
  bool first = true;
  while (std::getline(in, line)) {
    ++line_number;
    if (line_number == 1) line = detail::without_bom(line);
    if (detail::trim(line).empty()) continue;
    const std::vector<std::string> fields = detail::split_csv_line(line);
    std::vector<float> row(fields.size());
    std::size_t bad = fields.size();
    for (std::size_t f = 0; f < fields.size() && bad == fields.size(); ++f) {
      double value = 0.0;
      if (detail::parse_number(fields[f], value))
        row[f] = static_cast<float>(value);
      else
        bad = f;
    }
    if (first && bad < fields.size()) {  // the header line
      first = false;
      series.parcels = static_cast<std::int64_t>(fields.size());
      series.column_names = fields;
      continue;
    }
    PELAB_CHECK(bad == fields.size(), "{}:{}: field {} ('{}') is not a number", path, line_number,
                bad + 1, fields[bad]);
    if (first) series.parcels = static_cast<std::int64_t>(fields.size());
    first = false;
    PELAB_CHECK(static_cast<std::int64_t>(fields.size()) == series.parcels,
                "{}:{}: the row has {} fields, the first line {}; every row of a [time, parcels] "
                "matrix has one field per parcel",
                path, line_number, fields.size(), series.parcels);
    series.values.insert(series.values.end(), row.begin(), row.end());
    ++series.time_points;
  }
  PELAB_CHECK(series.time_points > 0, "{}: no data rows, expected a [time, parcels] matrix", path);
  return series;
}

std::vector<std::int64_t> validate(const ParcelTimeSeries& series,
                                   const ValidationOptions& options) {
  const std::string& name = series.source;
  PELAB_CHECK(
      series.time_points > 0 && series.parcels > 0 &&
          series.values.size() == static_cast<std::size_t>(series.time_points * series.parcels),
      "{}: the parcel time series should be {}x{} [time, parcels] but holds {} values", name,
      series.time_points, series.parcels, series.values.size());
  PELAB_CHECK(options.expected_parcels <= 0 || series.parcels == options.expected_parcels,
              "{}: a {}x{} [time, parcels] matrix, but {} has {} parcels ({}x3 centroids); the "
              "matrix needs one column per parcel, in the centroids' order (is it transposed?)",
              name, series.time_points, series.parcels,
              options.expected_from.empty() ? "the parcellation" : options.expected_from,
              options.expected_parcels, options.expected_parcels);
  PELAB_CHECK(series.time_points >= options.min_time_points,
              "{}: {} time points, fewer than the {} the task's window needs; use longer runs or "
              "a shorter window",
              name, series.time_points, options.min_time_points);

  std::int64_t non_finite = 0;
  std::int64_t first = -1;
  for (std::size_t v = 0; v < series.values.size(); ++v) {
    if (std::isfinite(series.values[v])) continue;
    if (first < 0) first = static_cast<std::int64_t>(v);
    ++non_finite;
  }
  PELAB_CHECK(non_finite == 0,
              "{}: parcel {} is {} at time point {} (0-based; {} non-finite value(s) in all); "
              "fix or remove the affected parcels or time points before use",
              name, parcel_name(series, first % series.parcels),
              series.values[static_cast<std::size_t>(first)], first / series.parcels, non_finite);

  std::vector<std::int64_t> constant = constant_parcels(series);
  if (options.constant_parcels == ConstantParcels::kError && !constant.empty()) {
    std::vector<std::string> names;
    for (std::size_t c = 0; c < constant.size() && c < 10; ++c)
      names.push_back(parcel_name(series, constant[c]));
    if (constant.size() > 10) names.push_back(fmt::format("and {} more", constant.size() - 10));
    throw Error(fmt::format(
        "{}: {} parcel(s) constant over time (no signal), 0-based: {}; drop them from the atlas, "
        "or set constant_parcels = \"drop\" to drop them from every subject",
        name, constant.size(), fmt::join(names, ", ")));
  }
  return constant;
}

ParcelTimeSeries drop_parcels(const ParcelTimeSeries& series,
                              const std::vector<std::int64_t>& parcels) {
  std::vector<bool> drop(static_cast<std::size_t>(series.parcels), false);
  for (std::int64_t p : parcels) {
    PELAB_CHECK(p >= 0 && p < series.parcels, "{}: cannot drop parcel {}: it has parcels 0-{}",
                series.source, p, series.parcels - 1);
    drop[static_cast<std::size_t>(p)] = true;
  }
  ParcelTimeSeries kept = series;
  kept.values.clear();
  kept.parcel_ids.clear();
  kept.parcels = static_cast<std::int64_t>(std::count(drop.begin(), drop.end(), false));
  for (std::int64_t t = 0; t < series.time_points; ++t)
    for (std::int64_t p = 0; p < series.parcels; ++p)
      if (!drop[static_cast<std::size_t>(p)]) kept.values.push_back(series.at(t, p));
  if (series.parcel_ids.size() == drop.size())
    for (std::size_t p = 0; p < drop.size(); ++p)
      if (!drop[p]) kept.parcel_ids.push_back(series.parcel_ids[p]);
  kept.column_names.clear();
  if (series.column_names.size() == drop.size())
    for (std::size_t p = 0; p < drop.size(); ++p)
      if (!drop[p]) kept.column_names.push_back(series.column_names[p]);
  return kept;
}

namespace {

std::int64_t column_index(const ParcelTimeSeries& series, const std::string& name) {
  PELAB_CHECK(!series.column_names.empty(),
              "{}: has no header line, so its columns cannot be chosen by name ('{}'); add a "
              "header naming the columns",
              series.source, name);
  const auto it = std::find(series.column_names.begin(), series.column_names.end(), name);
  PELAB_CHECK(it != series.column_names.end(), "{}: no column '{}'; its columns are {}",
              series.source, name, fmt::join(series.column_names, ", "));
  return static_cast<std::int64_t>(it - series.column_names.begin());
}

}  // namespace

ParcelTimeSeries select_columns(const ParcelTimeSeries& series,
                                const std::vector<std::string>& names) {
  std::vector<std::int64_t> columns;
  for (const std::string& name : names)
    columns.push_back(column_index(series, name));
  ParcelTimeSeries selected = series;
  selected.parcels = static_cast<std::int64_t>(columns.size());
  selected.values.clear();
  selected.parcel_ids.clear();
  selected.column_names = names;
  for (std::int64_t t = 0; t < series.time_points; ++t)
    for (std::int64_t c : columns)
      selected.values.push_back(series.at(t, c));
  return selected;
}

ParcelTimeSeries regress_out(const ParcelTimeSeries& series,
                             const std::vector<std::string>& nuisance) {
  std::vector<std::int64_t> regressors;
  for (const std::string& name : nuisance)
    regressors.push_back(column_index(series, name));
  const std::int64_t T = series.time_points;
  const auto K = static_cast<std::int64_t>(regressors.size()) + 1;  // and the intercept
  PELAB_CHECK(T > K, "{}: {} time points cannot be regressed on {} nuisance signals", series.source,
              T, K - 1);
  // Normal equations (X'X) b = X'y, solved once for all columns by Gauss-Jordan elimination with
  // partial pivoting on [X'X | X'Y]; the regressors are few (a handful), so this is exact enough.
  const auto x = [&](std::int64_t t, std::int64_t k) -> double {
    return k == 0 ? 1.0 : series.at(t, regressors[static_cast<std::size_t>(k - 1)]);
  };
  const std::int64_t P = series.parcels;
  std::vector<double> system(static_cast<std::size_t>(K * (K + P)), 0.0);
  const auto at = [&](std::int64_t r, std::int64_t c) -> double& {
    return system[static_cast<std::size_t>(r * (K + P) + c)];
  };
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t r = 0; r < K; ++r) {
      for (std::int64_t c = 0; c < K; ++c)
        at(r, c) += x(t, r) * x(t, c);
      for (std::int64_t p = 0; p < P; ++p)
        at(r, K + p) += x(t, r) * series.at(t, p);
    }
  for (std::int64_t col = 0; col < K; ++col) {
    std::int64_t pivot = col;
    for (std::int64_t r = col + 1; r < K; ++r)
      if (std::abs(at(r, col)) > std::abs(at(pivot, col))) pivot = r;
    PELAB_CHECK(std::abs(at(pivot, col)) > 1e-9 * std::max(1.0, std::abs(at(0, 0))),
                "{}: the nuisance signals {} are collinear (or constant); regress out fewer",
                series.source, fmt::join(nuisance, ", "));
    for (std::int64_t c = 0; c < K + P; ++c)
      std::swap(at(col, c), at(pivot, c));
    const double scale = at(col, col);
    for (std::int64_t c = 0; c < K + P; ++c)
      at(col, c) /= scale;
    for (std::int64_t r = 0; r < K; ++r) {
      if (r == col) continue;
      const double factor = at(r, col);
      for (std::int64_t c = 0; c < K + P; ++c)
        at(r, c) -= factor * at(col, c);
    }
  }
  ParcelTimeSeries residual = series;
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t p = 0; p < P; ++p) {
      double fitted = 0.0;
      for (std::int64_t k = 0; k < K; ++k)
        fitted += x(t, k) * at(k, K + p);
      residual.values[static_cast<std::size_t>(t * P + p)] =
          static_cast<float>(series.at(t, p) - fitted);
    }
  return drop_parcels(residual, regressors);
}

std::vector<std::int64_t> validate_cohort(std::vector<ParcelTimeSeries>& subjects,
                                          const ValidationOptions& options) {
  std::set<std::int64_t> dropped;
  for (const ParcelTimeSeries& subject : subjects) {
    PELAB_CHECK(subject.parcels == subjects.front().parcels,
                "{}: has {} parcels but {} has {}; every subject needs the same parcels",
                subject.source, subject.parcels, subjects.front().source, subjects.front().parcels);
    const std::vector<std::int64_t> constant = validate(subject, options);
    dropped.insert(constant.begin(), constant.end());
  }
  std::vector<std::int64_t> union_of_constant(dropped.begin(), dropped.end());
  if (!union_of_constant.empty()) {
    PELAB_CHECK(static_cast<std::int64_t>(union_of_constant.size()) < subjects.front().parcels,
                "{} and the other subjects: every parcel is constant in at least one subject",
                subjects.front().source);
    for (ParcelTimeSeries& subject : subjects)
      subject = drop_parcels(subject, union_of_constant);
  }
  return union_of_constant;
}

}  // namespace pelab::brain
