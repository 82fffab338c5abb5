#pragma once

// Where the parcels are: their centroids in world mm and, optionally, the large-scale network
// each belongs to. Read from the CSV users export with their parcellated data, or written by the
// synthetic cohort.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pelab::brain {

/// Parcel positions and networks, in the parcels' (columns') order.
struct ParcelCentroids {
  std::string source;       // the file it came from, for messages
  std::vector<double> xyz;  // [parcels, 3]: world coordinates in mm
  /// [parcels]: each parcel's network, 0 .. network_names.size()-1; empty when not known.
  std::vector<std::int64_t> network;
  /// [networks]: the label of each network id, in order of first appearance in the file.
  std::vector<std::string> network_names;
  /// [parcels]: each parcel's name (e.g. "Precentral_L"), or empty. Names ending in "_L" / "_R"
  /// pair homologous regions (homologous_pairs).
  std::vector<std::string> names;
  /// [parcels]: the column of the time-series files each parcel is read from, or empty (then
  /// the files' columns are the parcels, in order).
  std::vector<std::string> columns;

  std::int64_t parcels() const { return static_cast<std::int64_t>(xyz.size() / 3); }
};

/// Reads a CSV with a header line naming the columns `x`, `y`, `z` (mm) and optionally `network`
/// (any text label), `name` and `column` (the time-series column of the parcel); other columns
/// are ignored; one row per parcel. Network labels become ids in order of first appearance.
/// In place of x, y, z a row may name regions of a named atlas (named_atlas.h): columns `atlas`
/// ("aal", "harvard_oxford", "aicha") and `regions` (region names joined by '+', e.g.
/// "Parahippocampal_Gyrus_anterior_division_L"): the centroid of their voxels together. Errors
/// name the file and the line (an unknown region lists the atlas's names that come closest).
ParcelCentroids read_centroids_csv(const std::string& path);

/// Writes `x,y,z` (and `network` with the labels when known), one row per parcel, atomically.
void write_centroids_csv(const std::string& path, const ParcelCentroids& centroids);

/// The homologous pairs (left, right) among `names`: names equal but for a final "_L" / "_R".
std::vector<std::pair<std::int64_t, std::int64_t>> homologous_pairs(
    const std::vector<std::string>& names);

/// `centroids` without the given parcels (indices, any order); network ids are kept as they are.
ParcelCentroids drop_parcels(const ParcelCentroids& centroids,
                             const std::vector<std::int64_t>& parcels);

}  // namespace pelab::brain
