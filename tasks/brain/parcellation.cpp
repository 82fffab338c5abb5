#include "parcellation.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include <pelab/sdk.h>

namespace pelab::brain {
namespace {

// Fills voxel_counts and centroids from voxel_parcel.
void compute_centroids(Parcellation& parcellation) {
  const Grid& grid = parcellation.grid;
  const auto parcels = static_cast<std::size_t>(parcellation.parcels());
  parcellation.voxel_counts.assign(parcels, 0);
  std::vector<double> sums(3 * parcels, 0.0);
  for (std::int64_t k = 0; k < grid.nz; ++k)
    for (std::int64_t j = 0; j < grid.ny; ++j)
      for (std::int64_t i = 0; i < grid.nx; ++i) {
        const std::int32_t p = parcellation.voxel_parcel[grid.index(i, j, k)];
        if (p < 0) continue;
        const std::array<double, 3> xyz =
            grid.world(static_cast<double>(i), static_cast<double>(j), static_cast<double>(k));
        for (int d = 0; d < 3; ++d)
          sums[3 * p + d] += xyz[d];
        ++parcellation.voxel_counts[p];
      }
  parcellation.centroids.resize(3 * parcels);
  for (std::size_t p = 0; p < parcels; ++p)
    for (int d = 0; d < 3; ++d)
      parcellation.centroids[3 * p + d] =
          sums[3 * p + d] / static_cast<double>(parcellation.voxel_counts[p]);
}

void check_3d(const Volume& volume, const char* what) {
  PELAB_CHECK(volume.nt == 1, "{}: is a 4D image ({}), expected a 3D {}", volume.path,
              volume.shape(), what);
  PELAB_CHECK(volume.data.size() == static_cast<std::size_t>(volume.grid.voxels()),
              "{}: a {} volume holding {} values", volume.path, volume.shape(), volume.data.size());
}

}  // namespace

Parcellation atlas_parcellation(const Volume& atlas) {
  check_3d(atlas, "label image (the atlas)");
  const Grid& grid = atlas.grid;
  std::map<std::int64_t, std::int32_t> parcel_of_label;
  for (std::int64_t v = 0; v < grid.voxels(); ++v) {
    const float value = atlas.data[v];
    if (value == 0.0f) continue;
    if (value < 0.0f || value != std::round(value) || value > 2147483647.0f) {
      const std::int64_t i = v % grid.nx, j = (v / grid.nx) % grid.ny, k = v / (grid.nx * grid.ny);
      throw Error(
          fmt::format("{}: voxel ({}, {}, {}) has label {}; an atlas holds non-negative "
                      "integer labels (0 = background)",
                      atlas.path, i, j, k, value));
    }
    parcel_of_label.emplace(static_cast<std::int64_t>(value), 0);
  }
  PELAB_CHECK(!parcel_of_label.empty(), "{}: no labelled voxel (every voxel is 0, background)",
              atlas.path);

  Parcellation parcellation;
  parcellation.source = atlas.path;
  parcellation.grid = grid;
  for (auto& [label, parcel] : parcel_of_label) {
    parcel = static_cast<std::int32_t>(parcellation.ids.size());
    parcellation.ids.push_back(label);
  }
  parcellation.voxel_parcel.resize(static_cast<std::size_t>(grid.voxels()));
  for (std::int64_t v = 0; v < grid.voxels(); ++v) {
    const float value = atlas.data[v];
    parcellation.voxel_parcel[v] =
        value == 0.0f ? -1 : parcel_of_label.at(static_cast<std::int64_t>(value));
  }
  compute_centroids(parcellation);
  return parcellation;
}

Volume mean_intensity_mask(const Volume& image, double fraction) {
  PELAB_CHECK(fraction > 0.0 && fraction < 1.0,
              "{}: the mask fraction is {}, expected a number in (0, 1)", image.path, fraction);
  const std::int64_t voxels = image.grid.voxels();
  PELAB_CHECK(image.data.size() == static_cast<std::size_t>(voxels * image.nt),
              "{}: a {} image holding {} values", image.path, image.shape(), image.data.size());
  std::vector<double> mean(static_cast<std::size_t>(voxels), 0.0);
  for (std::int64_t t = 0; t < image.nt; ++t)
    for (std::int64_t v = 0; v < voxels; ++v)
      mean[v] += image.data[v + voxels * t];
  for (double& m : mean)
    m /= static_cast<double>(image.nt);

  std::vector<double> positive;
  for (double m : mean)
    if (m > 0.0) positive.push_back(m);
  PELAB_CHECK(!positive.empty(),
              "{}: no voxel has a positive mean intensity, so no brain mask can be derived from "
              "it; give a mask image",
              image.path);
  const auto rank = static_cast<std::size_t>(0.98 * static_cast<double>(positive.size() - 1));
  std::nth_element(positive.begin(), positive.begin() + rank, positive.end());
  const double threshold = fraction * positive[rank];

  Volume mask;
  mask.path = image.path + " (mean-intensity mask)";
  mask.grid = image.grid;
  mask.affine_source = image.affine_source;
  mask.voxel_size_mm = image.voxel_size_mm;
  mask.nifti_version = image.nifti_version;
  mask.data.resize(mean.size());
  for (std::size_t v = 0; v < mean.size(); ++v)
    mask.data[v] = mean[v] > threshold ? 1.0f : 0.0f;
  return mask;
}

Parcellation grid_parcellation(const Volume& mask, const GridParcellationOptions& options) {
  check_3d(mask, "mask");
  const auto& block = options.block;
  PELAB_CHECK(block[0] >= 1 && block[1] >= 1 && block[2] >= 1,
              "grid parcellation of {}: block size {}x{}x{} voxels, each side must be >= 1",
              mask.path, block[0], block[1], block[2]);
  PELAB_CHECK(options.min_voxels >= 1, "grid parcellation of {}: min_voxels is {}, expected >= 1",
              mask.path, options.min_voxels);
  const Grid& grid = mask.grid;
  const std::int64_t blocks_i = (grid.nx + block[0] - 1) / block[0];
  const std::int64_t blocks_j = (grid.ny + block[1] - 1) / block[1];
  const std::int64_t blocks_k = (grid.nz + block[2] - 1) / block[2];
  const auto block_of = [&](std::int64_t i, std::int64_t j, std::int64_t k) {
    return i / block[0] + blocks_i * (j / block[1] + blocks_j * (k / block[2]));
  };

  std::vector<std::int64_t> in_mask(static_cast<std::size_t>(blocks_i * blocks_j * blocks_k), 0);
  for (std::int64_t k = 0; k < grid.nz; ++k)
    for (std::int64_t j = 0; j < grid.ny; ++j)
      for (std::int64_t i = 0; i < grid.nx; ++i)
        if (mask.data[grid.index(i, j, k)] != 0.0f) ++in_mask[block_of(i, j, k)];

  Parcellation parcellation;
  parcellation.source =
      fmt::format("the grid parcellation of {} (blocks of {}x{}x{} voxels, >= {} in the mask)",
                  mask.path, block[0], block[1], block[2], options.min_voxels);
  parcellation.grid = grid;
  std::vector<std::int32_t> parcel_of_block(in_mask.size(), -1);
  for (std::size_t b = 0; b < in_mask.size(); ++b) {
    if (in_mask[b] < options.min_voxels) continue;
    parcel_of_block[b] = static_cast<std::int32_t>(parcellation.ids.size());
    parcellation.ids.push_back(static_cast<std::int64_t>(b));
  }
  PELAB_CHECK(parcellation.parcels() > 0,
              "{}: no block of {}x{}x{} voxels has {} voxels in the mask; use smaller blocks, a "
              "lower min_voxels or a larger mask",
              parcellation.source, block[0], block[1], block[2], options.min_voxels);
  parcellation.voxel_parcel.assign(static_cast<std::size_t>(grid.voxels()), -1);
  for (std::int64_t k = 0; k < grid.nz; ++k)
    for (std::int64_t j = 0; j < grid.ny; ++j)
      for (std::int64_t i = 0; i < grid.nx; ++i)
        if (mask.data[grid.index(i, j, k)] != 0.0f)
          parcellation.voxel_parcel[grid.index(i, j, k)] = parcel_of_block[block_of(i, j, k)];
  compute_centroids(parcellation);
  return parcellation;
}

ParcelTimeSeries extract_time_series(const Volume& image, const Parcellation& parcellation) {
  check_same_grid(image.grid, image.path, parcellation.grid, parcellation.source);
  const std::int64_t voxels = image.grid.voxels();
  PELAB_CHECK(image.data.size() == static_cast<std::size_t>(voxels * image.nt),
              "{}: a {} image holding {} values", image.path, image.shape(), image.data.size());
  const std::int64_t parcels = parcellation.parcels();

  ParcelTimeSeries series;
  series.source = image.path;
  series.time_points = image.nt;
  series.parcels = parcels;
  series.parcel_ids = parcellation.ids;
  series.tr_seconds = image.tr_seconds;
  series.values.resize(static_cast<std::size_t>(image.nt * parcels));
  std::vector<double> sums(static_cast<std::size_t>(parcels));
  for (std::int64_t t = 0; t < image.nt; ++t) {
    std::fill(sums.begin(), sums.end(), 0.0);
    const float* volume = image.data.data() + voxels * t;
    for (std::int64_t v = 0; v < voxels; ++v) {
      const std::int32_t p = parcellation.voxel_parcel[v];
      if (p >= 0) sums[p] += volume[v];
    }
    for (std::int64_t p = 0; p < parcels; ++p)
      series.values[t * parcels + p] =
          static_cast<float>(sums[p] / static_cast<double>(parcellation.voxel_counts[p]));
  }
  return series;
}

ParcelCentroids centroids_of(const Parcellation& parcellation) {
  ParcelCentroids centroids;
  centroids.source = parcellation.source;
  centroids.xyz = parcellation.centroids;
  return centroids;
}

}  // namespace pelab::brain
