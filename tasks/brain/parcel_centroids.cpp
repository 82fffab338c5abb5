#include "parcel_centroids.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include <pelab/sdk.h>

#include "named_atlas.h"
#include "parcellation.h"
#include "text_io.h"

namespace pelab::brain {

namespace {

// Centroids of named-atlas regions, each atlas read once per file being read.
class AtlasRegions {
 public:
  // The centroid of `regions` ('+'-joined names) together, weighted by their voxels.
  std::array<double, 3> centroid(const std::string& key, const std::string& regions,
                                 const std::string& where) {
    PELAB_CHECK(is_named_atlas(key),
                "{}: atlas = '{}' is not a named atlas; the named atlases are {}", where, key,
                fmt::join(named_atlas_keys(), ", "));
    Atlas& atlas = atlases_.count(key) ? atlases_.at(key) : load(key);
    std::array<double, 3> sum{0.0, 0.0, 0.0};
    std::int64_t voxels = 0;
    std::size_t begin = 0;
    while (begin <= regions.size()) {
      const std::size_t end = std::min(regions.find('+', begin), regions.size());
      const std::string name = detail::trim(regions.substr(begin, end - begin));
      begin = end + 1;
      const auto it = atlas.parcel_of_name.find(name);
      if (it == atlas.parcel_of_name.end()) throw Error(unknown_region(where, key, name, atlas));
      const auto p = static_cast<std::size_t>(it->second);
      const auto count = atlas.parcellation.voxel_counts[p];
      for (int d = 0; d < 3; ++d)
        sum[d] += atlas.parcellation.centroids[3 * p + d] * static_cast<double>(count);
      voxels += count;
    }
    for (double& value : sum)
      value /= static_cast<double>(voxels);
    return sum;
  }

 private:
  struct Atlas {
    Parcellation parcellation;
    std::map<std::string, std::int64_t> parcel_of_name;  // region name -> parcel index
  };

  Atlas& load(const std::string& key) {
    const NamedAtlasImage image = read_named_atlas(key);
    Atlas atlas;
    atlas.parcellation = atlas_parcellation(image.labels);
    std::map<std::int64_t, std::int64_t> parcel_of_label;
    for (std::size_t p = 0; p < atlas.parcellation.ids.size(); ++p)
      parcel_of_label[atlas.parcellation.ids[p]] = static_cast<std::int64_t>(p);
    for (const AtlasRegion& region : image.regions) {
      const auto it = parcel_of_label.find(region.label);
      if (it != parcel_of_label.end()) atlas.parcel_of_name[region.name] = it->second;
    }
    return atlases_[key] = std::move(atlas);
  }

  static std::string unknown_region(const std::string& where, const std::string& key,
                                    const std::string& name, const Atlas& atlas) {
    const std::string word = name.substr(0, name.find('_'));
    std::vector<std::string> similar;
    for (const auto& [known, parcel] : atlas.parcel_of_name)
      if (!word.empty() && known.find(word) != std::string::npos) similar.push_back(known);
    return fmt::format("{}: the atlas '{}' has no region '{}'{}", where, key, name,
                       similar.empty()
                           ? std::string("")
                           : fmt::format("; regions like it: {}", fmt::join(similar, ", ")));
  }

  std::map<std::string, Atlas> atlases_;
};

}  // namespace

ParcelCentroids read_centroids_csv(const std::string& path) {
  std::ifstream in(path);
  PELAB_CHECK(in.is_open(), "{}: cannot open the file (does it exist?)", path);
  std::string line;
  int line_number = 0;
  std::vector<std::string> header;
  while (header.empty() && std::getline(in, line)) {
    ++line_number;
    if (line_number == 1) line = detail::without_bom(line);
    if (!detail::trim(line).empty()) header = detail::split_csv_line(line);
  }
  PELAB_CHECK(!header.empty(), "{}: the file is empty, expected a header line x,y,z[,network]",
              path);
  const auto column = [&](const std::string& name) -> std::ptrdiff_t {
    for (std::size_t c = 0; c < header.size(); ++c)
      if (header[c] == name) return static_cast<std::ptrdiff_t>(c);
    return -1;
  };
  const std::ptrdiff_t columns[3] = {column("x"), column("y"), column("z")};
  const std::ptrdiff_t network_column = column("network");
  const std::ptrdiff_t name_column = column("name");
  const std::ptrdiff_t series_column = column("column");
  const std::ptrdiff_t atlas_column = column("atlas");
  const std::ptrdiff_t regions_column = column("regions");
  const bool from_atlas = columns[0] < 0 && columns[1] < 0 && columns[2] < 0 && atlas_column >= 0 &&
                          regions_column >= 0;
  PELAB_CHECK(from_atlas || (columns[0] >= 0 && columns[1] >= 0 && columns[2] >= 0),
              "{}:{}: the header '{}' lacks a column x, y or z; expected x,y,z[,network] (or "
              "atlas,regions in place of x,y,z)",
              path, line_number, detail::trim(line));

  ParcelCentroids centroids;
  centroids.source = path;
  std::map<std::string, std::int64_t> network_ids;
  AtlasRegions atlas_regions;
  while (std::getline(in, line)) {
    ++line_number;
    if (detail::trim(line).empty()) continue;
    const std::vector<std::string> fields = detail::split_csv_line(line);
    PELAB_CHECK(fields.size() == header.size(), "{}:{}: the row has {} fields, the header {}", path,
                line_number, fields.size(), header.size());
    if (from_atlas) {
      const std::array<double, 3> xyz = atlas_regions.centroid(
          fields[atlas_column], fields[regions_column], fmt::format("{}:{}", path, line_number));
      centroids.xyz.insert(centroids.xyz.end(), xyz.begin(), xyz.end());
    } else {
      for (std::ptrdiff_t c : columns) {
        double value = 0.0;
        PELAB_CHECK(detail::parse_number(fields[c], value) && std::isfinite(value),
                    "{}:{}: {} = '{}' is not a finite number (mm)", path, line_number, header[c],
                    fields[c]);
        centroids.xyz.push_back(value);
      }
    }
    if (network_column >= 0) {
      const std::string& label = fields[network_column];
      PELAB_CHECK(!label.empty(), "{}:{}: the network label is empty", path, line_number);
      const auto [it, added] = network_ids.emplace(label, centroids.network_names.size());
      if (added) centroids.network_names.push_back(label);
      centroids.network.push_back(it->second);
    }
    if (name_column >= 0) centroids.names.push_back(fields[name_column]);
    if (series_column >= 0) {
      PELAB_CHECK(!fields[series_column].empty(), "{}:{}: the column name is empty", path,
                  line_number);
      centroids.columns.push_back(fields[series_column]);
    }
  }
  PELAB_CHECK(centroids.parcels() > 0, "{}: no parcel rows after the header", path);
  return centroids;
}

std::vector<std::pair<std::int64_t, std::int64_t>> homologous_pairs(
    const std::vector<std::string>& names) {
  std::map<std::string, std::int64_t> left;
  for (std::size_t p = 0; p < names.size(); ++p) {
    const std::string& name = names[p];
    if (name.size() > 2 && name.compare(name.size() - 2, 2, "_L") == 0)
      left[name.substr(0, name.size() - 2)] = static_cast<std::int64_t>(p);
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
  for (std::size_t p = 0; p < names.size(); ++p) {
    const std::string& name = names[p];
    if (name.size() <= 2 || name.compare(name.size() - 2, 2, "_R") != 0) continue;
    const auto it = left.find(name.substr(0, name.size() - 2));
    if (it != left.end()) pairs.emplace_back(it->second, static_cast<std::int64_t>(p));
  }
  return pairs;
}

void write_centroids_csv(const std::string& path, const ParcelCentroids& centroids) {
  const bool networks = !centroids.network.empty();
  PELAB_CHECK(
      !networks || centroids.network.size() == static_cast<std::size_t>(centroids.parcels()),
      "{}: {} network ids for {} parcels", path, centroids.network.size(), centroids.parcels());
  const bool names = !centroids.names.empty();
  PELAB_CHECK(!names || centroids.names.size() == static_cast<std::size_t>(centroids.parcels()),
              "{}: {} names for {} parcels", path, centroids.names.size(), centroids.parcels());
  std::string text = std::string(networks ? "x,y,z,network" : "x,y,z") + (names ? ",name\n" : "\n");
  for (std::int64_t p = 0; p < centroids.parcels(); ++p) {
    const double* xyz = &centroids.xyz[static_cast<std::size_t>(3 * p)];
    text += fmt::format("{},{},{}", detail::format_number(xyz[0]), detail::format_number(xyz[1]),
                        detail::format_number(xyz[2]));
    if (networks) {
      const std::int64_t id = centroids.network[static_cast<std::size_t>(p)];
      PELAB_CHECK(id >= 0 && id < static_cast<std::int64_t>(centroids.network_names.size()),
                  "{}: parcel {} has network id {} but there are {} network names", path, p, id,
                  centroids.network_names.size());
      text += "," + detail::csv_field(centroids.network_names[static_cast<std::size_t>(id)]);
    }
    if (names) text += "," + detail::csv_field(centroids.names[static_cast<std::size_t>(p)]);
    text += "\n";
  }
  detail::write_text_atomically(path, text);
}

ParcelCentroids drop_parcels(const ParcelCentroids& centroids,
                             const std::vector<std::int64_t>& parcels) {
  std::vector<bool> drop(static_cast<std::size_t>(centroids.parcels()), false);
  for (std::int64_t p : parcels) {
    PELAB_CHECK(p >= 0 && p < centroids.parcels(), "{}: cannot drop parcel {}: it has parcels 0-{}",
                centroids.source, p, centroids.parcels() - 1);
    drop[static_cast<std::size_t>(p)] = true;
  }
  ParcelCentroids kept;
  kept.source = centroids.source;
  kept.network_names = centroids.network_names;
  const bool networks = centroids.network.size() == drop.size();
  for (std::size_t p = 0; p < drop.size(); ++p) {
    if (drop[p]) continue;
    kept.xyz.insert(kept.xyz.end(), centroids.xyz.begin() + 3 * p,
                    centroids.xyz.begin() + 3 * p + 3);
    if (networks) kept.network.push_back(centroids.network[p]);
    if (centroids.names.size() == drop.size()) kept.names.push_back(centroids.names[p]);
    if (centroids.columns.size() == drop.size()) kept.columns.push_back(centroids.columns[p]);
  }
  return kept;
}

}  // namespace pelab::brain
