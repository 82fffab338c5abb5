#include "synthetic_cohort.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "parcel_centroids.h"
#include "parcellation.h"
#include "test_support.h"

namespace pelab::brain {
namespace {

using testing::error_of;
using testing::read_bytes;
using testing::ScratchDir;
using testing::write_text;

// Small enough to write in a fraction of a second.
SyntheticCohortOptions small_cohort() {
  SyntheticCohortOptions options;
  options.subjects = 3;
  options.volumes = 60;
  options.parcels = 30;
  options.networks = 4;
  options.grid = {20, 24, 20};
  options.voxel_mm = 8.0;
  options.seed = 7;
  return options;
}

// Mean Pearson correlation of the parcels' series over pairs in the same network and across.
std::pair<double, double> within_and_across(const ParcelTimeSeries& series,
                                            const std::vector<std::int64_t>& network) {
  const std::int64_t parcels = series.parcels, time = series.time_points;
  std::vector<double> z(series.values.begin(), series.values.end());
  for (std::int64_t p = 0; p < parcels; ++p) {
    double mean = 0.0, squares = 0.0;
    for (std::int64_t t = 0; t < time; ++t)
      mean += z[t * parcels + p] / time;
    for (std::int64_t t = 0; t < time; ++t)
      squares += (z[t * parcels + p] - mean) * (z[t * parcels + p] - mean);
    for (std::int64_t t = 0; t < time; ++t)
      z[t * parcels + p] = (z[t * parcels + p] - mean) / std::sqrt(squares / time);
  }
  double within = 0.0, across = 0.0;
  int within_pairs = 0, across_pairs = 0;
  for (std::int64_t p = 0; p < parcels; ++p)
    for (std::int64_t q = p + 1; q < parcels; ++q) {
      double r = 0.0;
      for (std::int64_t t = 0; t < time; ++t)
        r += z[t * parcels + p] * z[t * parcels + q] / time;
      if (network[p] == network[q]) {
        within += r;
        ++within_pairs;
      } else {
        across += r;
        ++across_pairs;
      }
    }
  return {within / within_pairs, across / across_pairs};
}

std::string to_csv(const ParcelTimeSeries& series) {
  std::string text;
  for (std::int64_t p = 0; p < series.parcels; ++p)
    text += fmt::format("{}parcel{}", p ? "," : "", p);
  text += "\n";
  for (std::int64_t t = 0; t < series.time_points; ++t) {
    for (std::int64_t p = 0; p < series.parcels; ++p)
      text += fmt::format("{}{}", p ? "," : "", series.at(t, p));
    text += "\n";
  }
  return text;
}

TEST(BrainSyntheticCohort, CanonicalHrfPeaksNearFiveSecondsThenUndershoots) {
  const std::vector<double> hrf = canonical_hrf(0.1);
  ASSERT_EQ(hrf.size(), 321u);  // 0 .. 32 s
  const auto peak = std::max_element(hrf.begin(), hrf.end()) - hrf.begin();
  const auto dip = std::min_element(hrf.begin(), hrf.end()) - hrf.begin();
  EXPECT_NEAR(static_cast<double>(peak) * 0.1, 5.0, 0.3);
  EXPECT_GT(static_cast<double>(dip) * 0.1, 12.0);
  EXPECT_LT(hrf[dip], 0.0);
  EXPECT_EQ(hrf[0], 0.0);
  double sum = 0.0;
  for (double h : hrf)
    sum += h;
  EXPECT_NEAR(sum, 1.0, 1e-12);
}

TEST(BrainSyntheticCohort, WritesACohortTheReadersReadBack) {
  ScratchDir dir;
  const SyntheticCohortOptions options = small_cohort();
  const SyntheticCohort cohort = write_synthetic_cohort(dir / "cohort", options);
  ASSERT_EQ(cohort.bold.size(), 3u);
  EXPECT_EQ(cohort.bold[1], dir / "cohort/sub-02_bold.nii.gz");

  // The mask: an ellipsoid of about 4/3 pi 8.4 x 10.8 x 8 voxels.
  const Volume mask = read_volume(cohort.mask, Expect::k3D);
  double in_mask = 0.0;
  for (float value : mask.data)
    in_mask += value;
  EXPECT_NEAR(in_mask, 4.0 / 3.0 * std::acos(-1.0) * 8.4 * 10.8 * 8.0, 150.0);
  EXPECT_EQ(mask.at(10, 12, 10), 1.0f);
  EXPECT_EQ(mask.at(0, 0, 0), 0.0f);
  // The grid's centre at (0, -18, 18) mm.
  const auto centre = mask.grid.world(9.5, 11.5, 9.5);
  EXPECT_DOUBLE_EQ(centre[0], 0.0);
  EXPECT_DOUBLE_EQ(centre[1], -18.0);
  EXPECT_DOUBLE_EQ(centre[2], 18.0);

  // The atlas: labels 1 .. 30, exactly on the mask.
  const Volume atlas = read_volume(cohort.atlas, Expect::k3D);
  const Parcellation parcellation = atlas_parcellation(atlas);
  ASSERT_EQ(parcellation.parcels(), 30);
  EXPECT_EQ(parcellation.ids.front(), 1);
  EXPECT_EQ(parcellation.ids.back(), 30);
  for (std::size_t v = 0; v < atlas.data.size(); ++v)
    ASSERT_EQ(atlas.data[v] > 0.0f, mask.data[v] > 0.0f) << v;

  // The centroids file: the atlas's centroids and the networks, all bilateral.
  const ParcelCentroids centroids = read_centroids_csv(cohort.centroids);
  EXPECT_EQ(centroids.xyz, parcellation.centroids);
  EXPECT_EQ(centroids.network, cohort.network);
  EXPECT_EQ(centroids.network_names,
            (std::vector<std::string>{"network-1", "network-2", "network-3", "network-4"}));
  for (std::int64_t n = 0; n < options.networks; ++n) {
    bool left = false, right = false;
    for (std::int64_t p = 0; p < centroids.parcels(); ++p) {
      if (centroids.network[p] != n) continue;
      left = left || centroids.xyz[3 * p] < 0.0;
      right = right || centroids.xyz[3 * p] > 0.0;
    }
    EXPECT_TRUE(left && right) << "network " << n << " is not bilateral";
  }

  // The subjects: 4D BOLD whose parcels correlate more within networks than across.
  double within = 0.0, across = 0.0;
  ValidationOptions validation;
  validation.expected_parcels = centroids.parcels();
  validation.min_time_points = 60;
  for (const std::string& path : cohort.bold) {
    const Volume bold = read_volume(path, Expect::k4D);
    EXPECT_EQ(bold.shape(), "20x24x20x60");
    EXPECT_DOUBLE_EQ(bold.tr_seconds, 2.0);
    const ParcelTimeSeries series = extract_time_series(bold, parcellation);
    EXPECT_TRUE(validate(series, validation).empty());
    const auto [w, a] = within_and_across(series, centroids.network);
    within += w / 3.0;
    across += a / 3.0;
  }
  std::cout << "[ INFO     ] mean correlation within networks " << within << ", across " << across
            << "\n";
  EXPECT_GT(within - across, 0.2);

  // The same data as users export them: [time, parcels] CSV plus the centroids file.
  const ParcelTimeSeries first =
      extract_time_series(read_volume(cohort.bold[0], Expect::k4D), parcellation);
  write_text(dir / "sub-01.csv", to_csv(first));
  const ParcelTimeSeries from_csv = read_time_series_csv(dir / "sub-01.csv");
  EXPECT_EQ(from_csv.time_points, 60);
  EXPECT_EQ(from_csv.parcels, 30);
  EXPECT_TRUE(validate(from_csv, validation).empty());
  for (std::size_t v = 0; v < first.values.size(); ++v)
    ASSERT_FLOAT_EQ(from_csv.values[v], first.values[v]);
}

TEST(BrainSyntheticCohort, TheSameSeedWritesTheSameBytes) {
  ScratchDir dir;
  SyntheticCohortOptions options = small_cohort();
  options.subjects = 2;
  options.volumes = 20;
  const SyntheticCohort a = write_synthetic_cohort(dir / "a", options);
  const SyntheticCohort b = write_synthetic_cohort(dir / "b", options);
  for (const auto& [x, y] : {std::pair{a.mask, b.mask},
                             {a.atlas, b.atlas},
                             {a.centroids, b.centroids},
                             {a.bold[0], b.bold[0]},
                             {a.bold[1], b.bold[1]}})
    EXPECT_EQ(read_bytes(x), read_bytes(y)) << x;
  EXPECT_NE(read_bytes(a.bold[0]), read_bytes(a.bold[1]));  // subjects differ

  options.seed += 1;
  const SyntheticCohort c = write_synthetic_cohort(dir / "c", options);
  EXPECT_NE(read_bytes(a.atlas), read_bytes(c.atlas));
  EXPECT_NE(read_bytes(a.bold[0]), read_bytes(c.bold[0]));
  EXPECT_EQ(read_bytes(a.mask), read_bytes(c.mask));  // the mask depends on the grid only
}

TEST(BrainSyntheticCohort, BadOptionsNameTheOption) {
  ScratchDir dir;
  SyntheticCohortOptions options = small_cohort();
  options.parcels = 5;  // fewer than 2 poles per network
  EXPECT_NE(error_of([&] {
              write_synthetic_cohort(dir.path(), options);
            }).find("synthetic cohort: parcels is 5, expected in [2 x networks, 32767]"),
            std::string::npos);
  options = small_cohort();
  options.tr_seconds = 0.0;
  EXPECT_NE(error_of([&] { write_synthetic_cohort(dir.path(), options); }).find("tr_seconds"),
            std::string::npos);
}

}  // namespace
}  // namespace pelab::brain
