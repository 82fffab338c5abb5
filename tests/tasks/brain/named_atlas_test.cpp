// Real atlases by name (Debian's mricron-data, installed by `make deps`): the AAL's centroids
// against published MNI coordinates, hemisphere symmetry, the Harvard-Oxford and AICHA
// lateralisation, lobes from names, nearest-neighbour resampling, centroids from named regions,
// and a missing package; the synthetic cohort on the AAL; nuisance regression.

#include <cmath>
#include <cstdlib>
#include <map>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "named_atlas.h"
#include "parcel_centroids.h"
#include "parcel_time_series.h"
#include "parcellation.h"
#include "synthetic_cohort.h"
#include "test_support.h"

namespace pelab::brain {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using testing::ScratchDir;

// Each region's centroid (mm), by name, of a named atlas on its own grid.
std::map<std::string, std::array<double, 3>> centroids_by_name(const std::string& key) {
  const NamedAtlasImage atlas = read_named_atlas(key);
  const Parcellation parcellation = atlas_parcellation(atlas.labels);
  std::map<std::int64_t, std::size_t> parcel;
  for (std::size_t p = 0; p < parcellation.ids.size(); ++p)
    parcel[parcellation.ids[p]] = p;
  std::map<std::string, std::array<double, 3>> centroids;
  for (const AtlasRegion& region : atlas.regions) {
    const auto it = parcel.find(region.label);
    if (it == parcel.end()) continue;
    const double* xyz = &parcellation.centroids[3 * it->second];
    centroids[region.name] = {xyz[0], xyz[1], xyz[2]};
  }
  return centroids;
}

// Sets an environment variable for one test, restoring the old value.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnvironment() { had_ ? setenv(name_, old_.c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(NamedAtlas, AalCentroidsAgreeWithPublishedMniCoordinates) {
  // The AAL's region centroids as published with the atlas's node files (e.g. BrainNet Viewer's
  // AAL90 nodes, from Tzourio-Mazoyer et al. 2002); within 2 mm.
  const std::map<std::string, std::array<double, 3>> published = {
      {"Precentral_L", {-38.65, -5.68, 50.94}},    {"Precentral_R", {41.37, -8.21, 52.09}},
      {"Hippocampus_L", {-25.03, -20.74, -10.13}}, {"Hippocampus_R", {29.23, -19.78, -10.33}},
      {"Thalamus_L", {-10.85, -17.56, 7.98}},      {"Thalamus_R", {13.00, -17.55, 8.09}},
      {"Caudate_L", {-11.46, 11.00, 9.24}},        {"Caudate_R", {14.84, 12.07, 9.42}},
      {"Amygdala_L", {-23.27, -0.67, -17.14}},     {"Precuneus_L", {-7.24, -56.07, 48.01}},
  };
  const auto centroids = centroids_by_name("aal");
  EXPECT_EQ(centroids.size(), 116u);
  for (const auto& [name, expected] : published) {
    ASSERT_TRUE(centroids.count(name)) << name;
    const auto& got = centroids.at(name);
    const double distance =
        std::hypot(got[0] - expected[0], got[1] - expected[1], got[2] - expected[2]);
    EXPECT_LT(distance, 2.0) << name << " at (" << got[0] << ", " << got[1] << ", " << got[2]
                             << ")";
  }
}

TEST(NamedAtlas, HomologuesLieMirroredAcrossTheMidline) {
  for (const std::string key : {"aal", "harvard_oxford", "aicha"}) {
    const auto centroids = centroids_by_name(key);
    std::vector<std::string> names;
    for (const auto& [name, xyz] : centroids)
      names.push_back(name);
    const auto pairs = homologous_pairs(names);
    EXPECT_GE(pairs.size(), 45u) << key;
    double asymmetry = 0.0;
    for (const auto& [left, right] : pairs) {
      const auto& l = centroids.at(names[left]);
      const auto& r = centroids.at(names[right]);
      EXPECT_LT(l[0], 0.0) << names[left];
      EXPECT_GT(r[0], 0.0) << names[right];
      EXPECT_LT(std::abs(l[0] + r[0]), 8.0) << names[left];  // x mirrored, within 8 mm
      EXPECT_LT(std::abs(l[1] - r[1]), 10.0) << names[left];
      asymmetry += std::abs(l[0] + r[0]);
    }
    EXPECT_LT(asymmetry / static_cast<double>(pairs.size()), 3.0) << key;
  }
}

TEST(NamedAtlas, BilateralLabelsAreSplitAtTheMidline) {
  const NamedAtlasImage ho = read_named_atlas("harvard_oxford");
  ASSERT_EQ(ho.regions.size(), 96u);
  EXPECT_EQ(ho.regions[0].name, "Frontal_Pole_L");
  EXPECT_EQ(ho.regions[0].hemisphere, 'L');
  EXPECT_EQ(ho.regions[1].name, "Frontal_Pole_R");
  EXPECT_EQ(ho.regions[1].homologue, "Frontal_Pole");
  const auto centroids = centroids_by_name("harvard_oxford");
  EXPECT_GT(centroids.at("Frontal_Pole_L")[1], 40.0);     // the front of the brain
  EXPECT_LT(centroids.at("Occipital_Pole_R")[1], -80.0);  // the back
  EXPECT_GT(centroids.at("Superior_Parietal_Lobule_L")[2], 40.0);
  EXPECT_EQ(read_named_atlas("aicha").regions.size(), 384u);
}

TEST(NamedAtlas, LobesComeFromTheNames) {
  EXPECT_EQ(lobe_of("Precentral_L"), "frontal");
  EXPECT_EQ(lobe_of("Frontal_Operculum_Cortex_R"), "frontal");
  EXPECT_EQ(lobe_of("Parietal_Operculum_Cortex_R"), "parietal");
  EXPECT_EQ(lobe_of("Precuneus_L"), "parietal");
  EXPECT_EQ(lobe_of("Cuneus_L"), "occipital");
  EXPECT_EQ(lobe_of("Occipital_Fusiform_Gyrus_L"), "occipital");
  EXPECT_EQ(lobe_of("Temporal_Occipital_Fusiform_Cortex_L"), "temporal");
  EXPECT_EQ(lobe_of("ParaHippocampal_R"), "limbic");
  EXPECT_EQ(lobe_of("N_Thalamus-2_R"), "subcortical");
  EXPECT_EQ(lobe_of("Vermis_1_2"), "cerebellum");
  EXPECT_EQ(lobe_of("Nowhere"), "other");
  EXPECT_EQ(identifier("Heschl's Gyrus (includes H1 and H2)"), "Heschl_s_Gyrus_includes_H1_and_H2");
  // Every AAL region has a lobe.
  for (const AtlasRegion& region : read_named_atlas("aal").regions)
    EXPECT_NE(region.lobe, "other") << region.name;
}

TEST(NamedAtlas, ResamplingTakesTheNearestVoxel) {
  // Labels 1-4 in the four quadrants of a 1 mm 8x8x2 grid, resampled onto a 2 mm grid whose
  // voxel centres sit at odd millimetres (0.5 mm from a source voxel centre: no ties).
  const Volume labels =
      testing::make_volume("labels.nii", 8, 8, 2, 1, 1.0, {0, 0, 0},
                           [](std::int64_t i, std::int64_t j, std::int64_t, std::int64_t) {
                             return static_cast<float>(1 + (i >= 4) + 2 * (j >= 4));
                           });
  Grid coarse{4, 4, 1, {2, 0, 0, 0.6, 0, 2, 0, 0.6, 0, 0, 2, 0, 0, 0, 0, 1}};
  const Volume out = resample_labels(labels, coarse, "coarse.nii");
  EXPECT_EQ(out.at(0, 0, 0), 1.0f);
  EXPECT_EQ(out.at(3, 0, 0), 2.0f);
  EXPECT_EQ(out.at(0, 3, 0), 3.0f);
  EXPECT_EQ(out.at(3, 3, 0), 4.0f);
  // A target voxel outside the source is background.
  Grid shifted{2, 1, 1, {1, 0, 0, 7.0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}};
  const Volume edge = resample_labels(labels, shifted, "edge.nii");
  EXPECT_EQ(edge.at(0, 0, 0), 2.0f);
  EXPECT_EQ(edge.at(1, 0, 0), 0.0f);
  // The same grid gives the same labels.
  EXPECT_EQ(resample_labels(labels, labels.grid, "same.nii").data, labels.data);
}

TEST(NamedAtlas, AMissingPackageOrNameSaysWhatToDo) {
  EXPECT_THAT(error_of([] { resolve_named_atlas("destrieux"); }),
              HasSubstr("the named atlases are aal, harvard_oxford, aicha"));
  ScratchDir empty;
  const ScopedEnvironment dir("PELAB_ATLAS_DIR", empty.path());
  const std::string message = error_of([] { resolve_named_atlas("aal"); });
  EXPECT_THAT(message, HasSubstr("aal.nii.gz, which is missing"));
  EXPECT_THAT(message, HasSubstr("PELAB_ATLAS_DIR"));
  EXPECT_THAT(message, HasSubstr("mricron-data"));
}

TEST(NamedAtlas, CentroidsOfNamedRegions) {
  ScratchDir dir;
  testing::write_text(dir / "regions.csv",
                      "name,column,atlas,regions\n"
                      "Caudate_L,LCau,aal,Caudate_L\n"
                      "Striatum_L,LStr,aal,Caudate_L+Putamen_L\n"
                      "PHG_L,LPHG,harvard_oxford,Parahippocampal_Gyrus_anterior_division_L\n");
  const ParcelCentroids centroids = read_centroids_csv(dir / "regions.csv");
  ASSERT_EQ(centroids.parcels(), 3);
  const auto aal = centroids_by_name("aal");
  for (int d = 0; d < 3; ++d)
    EXPECT_DOUBLE_EQ(centroids.xyz[d], aal.at("Caudate_L")[d]);
  // Two regions together: between them, nearer the larger (the putamen).
  EXPECT_GT(centroids.xyz[3], aal.at("Putamen_L")[0]);
  EXPECT_LT(centroids.xyz[3], aal.at("Caudate_L")[0]);
  EXPECT_LT(centroids.xyz[6], 0.0);
  EXPECT_EQ(centroids.columns, (std::vector<std::string>{"LCau", "LStr", "LPHG"}));
  EXPECT_EQ(centroids.names[1], "Striatum_L");

  testing::write_text(dir / "bad.csv", "atlas,regions\naal,Caudate\n");
  const std::string message = error_of([&] { read_centroids_csv(dir / "bad.csv"); });
  EXPECT_THAT(message, HasSubstr("bad.csv:2: the atlas 'aal' has no region 'Caudate'"));
  EXPECT_THAT(message, HasSubstr("Caudate_L, Caudate_R"));
}

TEST(NamedAtlas, HomologousPairsFromNames) {
  const std::vector<std::string> names = {"Cau_L", "Vermis", "Put_R", "Cau_R", "Put_L", "Amy_L"};
  const auto pairs = homologous_pairs(names);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0], (std::pair<std::int64_t, std::int64_t>{4, 2}));
  EXPECT_EQ(pairs[1], (std::pair<std::int64_t, std::int64_t>{0, 3}));
}

TEST(SyntheticCohortOnAal, ItsParcelsAreTheAtlasRegions) {
  ScratchDir dir;
  SyntheticCohortOptions options;
  options.atlas = "aal";
  options.subjects = 1;
  options.volumes = 12;
  options.voxel_mm = 6.0;
  const SyntheticCohort cohort = write_synthetic_cohort(dir.path(), options);
  const ParcelCentroids truth = read_centroids_csv(cohort.centroids);
  EXPECT_EQ(truth.parcels() + static_cast<std::int64_t>(cohort.dropped.size()), 116);
  EXPECT_GE(truth.parcels(), 100);  // at 6 mm only the smallest regions (vermis) may vanish
  const auto native = centroids_by_name("aal");
  for (std::int64_t p = 0; p < truth.parcels(); ++p) {
    const std::string& name = truth.names[p];
    for (int d = 0; d < 3; ++d)
      EXPECT_DOUBLE_EQ(truth.xyz[3 * p + d], native.at(name)[d]) << name;
    EXPECT_EQ(truth.network_names[truth.network[p]], lobe_of(name)) << name;
  }
  // The resampled atlas puts each region near its real centroid.
  const Parcellation resampled = atlas_parcellation(read_volume(cohort.atlas, Expect::k3D));
  ASSERT_EQ(resampled.parcels(), truth.parcels());
  for (std::int64_t p = 0; p < truth.parcels(); ++p) {
    double distance = 0.0;
    for (int d = 0; d < 3; ++d)
      distance += std::pow(resampled.centroids[3 * p + d] - truth.xyz[3 * p + d], 2.0);
    EXPECT_LT(std::sqrt(distance), 6.0) << truth.names[p];
  }
  const Volume bold = read_volume(cohort.bold.front(), Expect::k4D);
  EXPECT_EQ(bold.nt, 12);
  EXPECT_NO_THROW(check_same_grid(bold.grid, bold.path, resampled.grid, cohort.atlas));
}

TEST(NuisanceRegression, RemovesWhatTheRegressorsExplain) {
  ScratchDir dir;
  // parcel = 2 wm - global + 3 + e, with e orthogonal to wm, global and the intercept.
  std::string csv = "\"WM\",\"Brain\",\"LCau\",\"RCau\"\n";
  const double wm[8] = {1, 2, 0, 3, 1, 4, 2, 0};
  const double global[8] = {0, 1, 1, 0, 2, 1, 0, 3};
  for (int t = 0; t < 8; ++t)
    csv += fmt::format("{},{},{},{}\n", wm[t], global[t], 2 * wm[t] - global[t] + 3, t % 2);
  testing::write_text(dir / "series.csv", csv);
  const ParcelTimeSeries series = read_time_series_csv(dir / "series.csv");
  EXPECT_EQ(series.column_names, (std::vector<std::string>{"WM", "Brain", "LCau", "RCau"}));
  const ParcelTimeSeries residual = regress_out(series, {"WM", "Brain"});
  ASSERT_EQ(residual.parcels, 2);
  EXPECT_EQ(residual.column_names, (std::vector<std::string>{"LCau", "RCau"}));
  for (int t = 0; t < 8; ++t)
    EXPECT_NEAR(residual.at(t, 0), 0.0, 1e-4) << t;  // wholly explained
  // What is left of the second parcel is uncorrelated with the regressors.
  double with_wm = 0.0, with_global = 0.0, sum = 0.0;
  for (int t = 0; t < 8; ++t) {
    with_wm += residual.at(t, 1) * wm[t];
    with_global += residual.at(t, 1) * global[t];
    sum += residual.at(t, 1);
  }
  EXPECT_NEAR(with_wm, 0.0, 1e-4);
  EXPECT_NEAR(with_global, 0.0, 1e-4);
  EXPECT_NEAR(sum, 0.0, 1e-4);
  EXPECT_THAT(error_of([&] {
                select_columns(series, {"LCau", "Vent"});
              }),
              HasSubstr("no column 'Vent'; its columns are WM, Brain, LCau, RCau"));
}

}  // namespace
}  // namespace pelab::brain
