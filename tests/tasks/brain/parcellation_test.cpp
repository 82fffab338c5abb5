#include "parcellation.h"

#include <iostream>
#include <numeric>

#include <gtest/gtest.h>

#include "test_support.h"

namespace pelab::brain {
namespace {

using testing::data_file;
using testing::error_of;
using testing::make_volume;
using testing::ScratchDir;

// A 4x3x2 atlas (2 mm voxels, origin (10, 20, 30)): label 5 on voxels (0,0,0), (1,0,0), (0,1,0);
// label 7 on (2,2,1), (3,2,1); background elsewhere.
Volume tiny_atlas(const std::string& path) {
  return make_volume(path, 4, 3, 2, 1, 2.0, {10, 20, 30}, [](auto i, auto j, auto k, auto) {
    if (k == 0 && i + j <= 1 && j <= 1 && i <= 1) return 5;
    if (k == 1 && j == 2 && i >= 2) return 7;
    return 0;
  });
}

Volume tiny_bold(const std::string& path) {
  return make_volume(path, 4, 3, 2, 3, 2.0, {10, 20, 30}, [](auto i, auto j, auto k, auto t) {
    return i + 10 * j + 100 * k + 1000 * t;
  });
}

TEST(BrainParcellation, AtlasGivesParcelMeansAndCentroids) {
  ScratchDir dir;
  // Through a file, as an atlas comes: int16 labels.
  WriteOptions int16;
  int16.type = StorageType::kInt16;
  write_volume(dir / "atlas.nii.gz", tiny_atlas(dir / "atlas.nii.gz"), int16);
  const Parcellation parcellation =
      atlas_parcellation(read_volume(dir / "atlas.nii.gz", Expect::k3D));
  ASSERT_EQ(parcellation.parcels(), 2);
  EXPECT_EQ(parcellation.ids, (std::vector<std::int64_t>{5, 7}));
  EXPECT_EQ(parcellation.voxel_counts, (std::vector<std::int64_t>{3, 2}));
  const std::vector<double> expected{10 + 2.0 / 3, 20 + 2.0 / 3, 30, 15, 24, 32};
  ASSERT_EQ(parcellation.centroids.size(), expected.size());
  for (std::size_t c = 0; c < expected.size(); ++c)
    EXPECT_NEAR(parcellation.centroids[c], expected[c], 1e-12) << c;
  EXPECT_EQ(parcellation.voxel_parcel[parcellation.grid.index(1, 0, 0)], 0);
  EXPECT_EQ(parcellation.voxel_parcel[parcellation.grid.index(3, 2, 1)], 1);
  EXPECT_EQ(parcellation.voxel_parcel[parcellation.grid.index(1, 1, 0)], -1);

  const ParcelTimeSeries series = extract_time_series(tiny_bold(dir / "bold.nii.gz"), parcellation);
  EXPECT_EQ(series.time_points, 3);
  EXPECT_EQ(series.parcels, 2);
  EXPECT_EQ(series.parcel_ids, parcellation.ids);
  EXPECT_DOUBLE_EQ(series.tr_seconds, 2.0);
  for (std::int64_t t = 0; t < 3; ++t) {
    EXPECT_FLOAT_EQ(series.at(t, 0), static_cast<float>(11.0 / 3 + 1000 * t));
    EXPECT_FLOAT_EQ(series.at(t, 1), static_cast<float>(122.5 + 1000 * t));
  }
  const ParcelCentroids centroids = centroids_of(parcellation);
  EXPECT_EQ(centroids.parcels(), 2);
  EXPECT_TRUE(centroids.network.empty());
}

TEST(BrainParcellation, AtlasLabelsMustBeNonNegativeIntegers) {
  Volume atlas = tiny_atlas("bad_atlas.nii");
  atlas.data[atlas.grid.index(2, 1, 0)] = 2.5f;
  std::string message = error_of([&] { atlas_parcellation(atlas); });
  EXPECT_NE(message.find("bad_atlas.nii: voxel (2, 1, 0) has label 2.5"), std::string::npos)
      << message;
  atlas.data[atlas.grid.index(2, 1, 0)] = -1.0f;
  message = error_of([&] { atlas_parcellation(atlas); });
  EXPECT_NE(message.find("has label -1"), std::string::npos) << message;
  const Volume empty = make_volume("empty.nii", 2, 2, 2, 1, 1.0, {0, 0, 0},
                                   [](auto, auto, auto, auto) { return 0; });
  message = error_of([&] { atlas_parcellation(empty); });
  EXPECT_NE(message.find("empty.nii: no labelled voxel"), std::string::npos) << message;
  message = error_of([&] { atlas_parcellation(tiny_bold("bold.nii")); });
  EXPECT_NE(message.find("bold.nii: is a 4D image (4x3x2x3)"), std::string::npos) << message;
}

TEST(BrainParcellation, GridMismatchNamesBothFilesAndShapes) {
  const Parcellation parcellation = atlas_parcellation(tiny_atlas("atlas.nii.gz"));
  const Volume taller = make_volume("sub-01_bold.nii.gz", 4, 3, 3, 3, 2.0, {10, 20, 30},
                                    [](auto, auto, auto, auto) { return 1; });
  std::string message = error_of([&] { extract_time_series(taller, parcellation); });
  EXPECT_NE(message.find("sub-01_bold.nii.gz is 4x3x3 with affine"), std::string::npos) << message;
  EXPECT_NE(message.find("atlas.nii.gz is 4x3x2 with affine"), std::string::npos) << message;

  Volume shifted = tiny_bold("sub-02_bold.nii.gz");
  shifted.grid.affine[7] += 0.01;  // 10 micrometres: more than the tolerance
  message = error_of([&] { extract_time_series(shifted, parcellation); });
  EXPECT_NE(
      message.find("sub-02_bold.nii.gz is 4x3x2 with affine [[2, 0, 0, 10], [0, 2, 0, 20.01]"),
      std::string::npos)
      << message;
  EXPECT_NE(message.find("atlas.nii.gz is 4x3x2 with affine [[2, 0, 0, 10], [0, 2, 0, 20]"),
            std::string::npos)
      << message;
  shifted.grid.affine[7] -= 0.0095;  // within 1e-3 mm: the same grid
  EXPECT_NO_THROW(extract_time_series(shifted, parcellation));
}

TEST(BrainParcellation, MeanIntensityMaskIgnoresAFewBrightVoxels) {
  // 10x10: a 6x6 "brain" of intensity 100 on a background of 5, and one voxel at 10000.
  Volume image =
      make_volume("epi.nii", 10, 10, 1, 4, 3.0, {0, 0, 0}, [](auto i, auto j, auto, auto t) {
        if (i == 9 && j == 9) return 10000.0;
        return (i >= 2 && i < 8 && j >= 2 && j < 8 ? 100.0 : 5.0) + (t % 2 == 0 ? 1.0 : -1.0);
      });
  const Volume mask = mean_intensity_mask(image);
  EXPECT_EQ(mask.nt, 1);
  EXPECT_EQ(mask.path, "epi.nii (mean-intensity mask)");
  EXPECT_EQ(std::accumulate(mask.data.begin(), mask.data.end(), 0.0), 37.0);
  EXPECT_EQ(mask.at(2, 2, 0), 1.0f);
  EXPECT_EQ(mask.at(1, 2, 0), 0.0f);
  // With a robust maximum of 100, a fraction of 0.5 still keeps the brain.
  const Volume half = mean_intensity_mask(image, 0.5);
  EXPECT_EQ(std::accumulate(half.data.begin(), half.data.end(), 0.0), 37.0);
  EXPECT_NE(error_of([&] { mean_intensity_mask(image, 1.5); }).find("epi.nii"), std::string::npos);
}

TEST(BrainParcellation, GridBlocksKeepThoseWithEnoughMaskVoxels) {
  // A 5x4x1 mask, all in; blocks of 2x2x1: columns of blocks at i = 0-1, 2-3 and 4 (2 voxels).
  const Volume mask =
      make_volume("mask.nii", 5, 4, 1, 1, 2.0, {0, 0, 0}, [](auto, auto, auto, auto) { return 1; });
  GridParcellationOptions options;
  options.block = {2, 2, 1};
  options.min_voxels = 3;
  const Parcellation parcellation = grid_parcellation(mask, options);
  EXPECT_EQ(parcellation.ids, (std::vector<std::int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(parcellation.voxel_counts, (std::vector<std::int64_t>{4, 4, 4, 4}));
  EXPECT_EQ(parcellation.voxel_parcel[parcellation.grid.index(4, 0, 0)], -1);
  EXPECT_EQ(parcellation.voxel_parcel[parcellation.grid.index(3, 3, 0)], 3);
  EXPECT_DOUBLE_EQ(parcellation.centroids[0], 1.0);  // voxels 0 and 1 at 0 and 2 mm
  EXPECT_DOUBLE_EQ(parcellation.centroids[3 * 3 + 1], 5.0);
  options.min_voxels = 2;
  EXPECT_EQ(grid_parcellation(mask, options).parcels(), 6);
  options.min_voxels = 5;
  EXPECT_NE(error_of([&] { grid_parcellation(mask, options); }).find("no block of 2x2x1 voxels"),
            std::string::npos);
}

TEST(BrainParcellation, GridParcellationOfTheRealSample) {
  const Volume functional = read_volume(data_file("functional.nii"), Expect::k4D);
  const Volume mask = mean_intensity_mask(functional);  // fraction 0.2
  const double in_mask = std::accumulate(mask.data.begin(), mask.data.end(), 0.0);
  GridParcellationOptions options;  // blocks of 3x3x1 voxels (12x12x8 mm), >= 1 in the mask
  const Parcellation parcellation = grid_parcellation(mask, options);
  std::cout << "[ INFO     ] real sample: mask " << in_mask << " of " << mask.data.size()
            << " voxels, grid parcellation 3x3x1 -> " << parcellation.parcels() << " parcels\n";
  // 17x21x3 voxels in blocks of 3x3x1: 6 x 7 x 3 blocks, all of them in the brain.
  EXPECT_EQ(parcellation.parcels(), 126);
  EXPECT_GT(in_mask, 0.9 * static_cast<double>(mask.data.size()));
  EXPECT_EQ(std::accumulate(parcellation.voxel_counts.begin(), parcellation.voxel_counts.end(),
                            std::int64_t{0}),
            static_cast<std::int64_t>(in_mask));
  for (std::int64_t count : parcellation.voxel_counts)
    EXPECT_GE(count, 1);

  const ParcelTimeSeries series = extract_time_series(functional, parcellation);
  EXPECT_EQ(series.time_points, 20);
  EXPECT_EQ(series.parcels, 126);
  ValidationOptions validation;
  validation.min_time_points = 16;
  EXPECT_TRUE(validate(series, validation).empty());  // finite, no constant parcel
}

}  // namespace
}  // namespace pelab::brain
