#pragma once

// Parcellations: which voxels make up each parcel (brain region), from an atlas label image or a
// regular grid of blocks inside a brain mask, and the parcel time series they give a 4D image.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "parcel_centroids.h"
#include "parcel_time_series.h"
#include "volume.h"

namespace pelab::brain {

/// A partition of (part of) a voxel grid into parcels. Build it once and apply it to every
/// subject, so that all subjects have the same parcels in the same order.
struct Parcellation {
  std::string source;  // the atlas file, or a description of the grid parcellation
  Grid grid;
  /// [grid.voxels()]: each voxel's parcel, 0 .. parcels()-1, or -1 when in none.
  std::vector<std::int32_t> voxel_parcel;
  std::vector<std::int64_t> ids;           // [parcels]: the atlas label, or the block's number
  std::vector<double> centroids;           // [parcels, 3]: mean world position of its voxels, mm
  std::vector<std::int64_t> voxel_counts;  // [parcels]

  std::int64_t parcels() const { return static_cast<std::int64_t>(ids.size()); }
};

/// The parcels of a 3D label image: one per distinct positive label, in ascending label order;
/// 0 is background. Labels must be non-negative integers (an error names the file and a voxel).
Parcellation atlas_parcellation(const Volume& atlas);

/// The default fraction of mean_intensity_mask.
inline constexpr double kDefaultMaskFraction = 0.2;

/// A brain mask from the image itself, for data that comes without one: the voxels whose mean
/// over time exceeds `fraction` of the mean image's robust maximum (its 98th percentile over the
/// voxels with a positive mean; robust to a few very bright voxels). Returns a 3D 0/1 volume on
/// the image's grid, its path "<image> (mean-intensity mask)".
Volume mean_intensity_mask(const Volume& image, double fraction = kDefaultMaskFraction);

struct GridParcellationOptions {
  std::array<std::int64_t, 3> block{3, 3, 1};  // block size in voxels along i, j, k
  std::int64_t min_voxels = 1;                 // blocks with fewer in-mask voxels are dropped
};

/// A regular grid parcellation, for data without an atlas: the grid is cut into blocks of
/// options.block voxels from voxel (0, 0, 0) (the last block along an axis may be smaller); a
/// parcel is a block's voxels inside the mask (the non-zero voxels of the 3D `mask`), kept when
/// there are at least min_voxels of them. Parcels are in block order (i fastest); ids are the
/// block numbers.
Parcellation grid_parcellation(const Volume& mask, const GridParcellationOptions& options = {});

/// The parcel time series of an image on the parcellation's grid: at each time point, the mean
/// over each parcel's voxels. A grid or affine mismatch is an error naming both files.
ParcelTimeSeries extract_time_series(const Volume& image, const Parcellation& parcellation);

/// The parcellation's centroids (without networks), for write_centroids_csv or the task.
ParcelCentroids centroids_of(const Parcellation& parcellation);

}  // namespace pelab::brain
