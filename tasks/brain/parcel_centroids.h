#pragma once

// Where the parcels are: their centroids in world mm and, optionally, the large-scale network
// each belongs to. Read from the CSV users export with their parcellated data, or written by the
// synthetic cohort.

#include <cstdint>
#include <string>
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

  std::int64_t parcels() const { return static_cast<std::int64_t>(xyz.size() / 3); }
};

/// Reads a CSV with a header line naming the columns `x`, `y`, `z` (mm) and optionally `network`
/// (any text label); other columns are ignored; one row per parcel. Network labels become ids in
/// order of first appearance. Errors name the file and the line.
ParcelCentroids read_centroids_csv(const std::string& path);

/// Writes `x,y,z` (and `network` with the labels when known), one row per parcel, atomically.
void write_centroids_csv(const std::string& path, const ParcelCentroids& centroids);

/// `centroids` without the given parcels (indices, any order); network ids are kept as they are.
ParcelCentroids drop_parcels(const ParcelCentroids& centroids,
                             const std::vector<std::int64_t>& parcels);

}  // namespace pelab::brain
