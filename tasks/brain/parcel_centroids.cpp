#include "parcel_centroids.h"

#include <cmath>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "pelab/error.h"
#include "text_io.h"

namespace pelab::brain {

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
  PELAB_CHECK(columns[0] >= 0 && columns[1] >= 0 && columns[2] >= 0,
              "{}:{}: the header '{}' lacks a column x, y or z; expected x,y,z[,network]", path,
              line_number, detail::trim(line));

  ParcelCentroids centroids;
  centroids.source = path;
  std::map<std::string, std::int64_t> network_ids;
  while (std::getline(in, line)) {
    ++line_number;
    if (detail::trim(line).empty()) continue;
    const std::vector<std::string> fields = detail::split_csv_line(line);
    PELAB_CHECK(fields.size() == header.size(), "{}:{}: the row has {} fields, the header {}", path,
                line_number, fields.size(), header.size());
    for (std::ptrdiff_t c : columns) {
      double value = 0.0;
      PELAB_CHECK(detail::parse_number(fields[c], value) && std::isfinite(value),
                  "{}:{}: {} = '{}' is not a finite number (mm)", path, line_number, header[c],
                  fields[c]);
      centroids.xyz.push_back(value);
    }
    if (network_column >= 0) {
      const std::string& label = fields[network_column];
      PELAB_CHECK(!label.empty(), "{}:{}: the network label is empty", path, line_number);
      const auto [it, added] = network_ids.emplace(label, centroids.network_names.size());
      if (added) centroids.network_names.push_back(label);
      centroids.network.push_back(it->second);
    }
  }
  PELAB_CHECK(centroids.parcels() > 0, "{}: no parcel rows after the header", path);
  return centroids;
}

void write_centroids_csv(const std::string& path, const ParcelCentroids& centroids) {
  const bool networks = !centroids.network.empty();
  PELAB_CHECK(
      !networks || centroids.network.size() == static_cast<std::size_t>(centroids.parcels()),
      "{}: {} network ids for {} parcels", path, centroids.network.size(), centroids.parcels());
  std::string text = networks ? "x,y,z,network\n" : "x,y,z\n";
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
  }
  return kept;
}

}  // namespace pelab::brain
