// The brain task plugin, loaded through the registry as `pelab run` loads it: the synthetic
// cohort, the real sample, the user's NIfTI and parcellated data, their errors, and the real
// sample's experiment end to end for one epoch.

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/base/error.h"
#include "pelab/config/manifest.h"
#include "pelab/io/file_io.h"
#include "pelab/plugins/registry.h"
#include "pelab/runs/run.h"
#include "test_support.h"
#include "volume.h"

namespace pelab::brain {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::ScratchDir;

class BrainPlugin : public ::testing::Test {
 protected:
  BrainPlugin() : registry_({Registry::builtin_plugin_folder()}) {}

  PluginSpec spec(const std::map<std::string, ParamValue>& overrides) {
    PluginSpec spec = registry_.default_spec(PluginKind::kTask, "brain");
    for (const auto& [name, value] : overrides)
      spec.params.set(name, value);
    return spec;
  }

  // A small synthetic cohort: 4 subjects of 40 volumes, 20 parcels in 3 networks.
  PluginSpec small_synthetic(std::map<std::string, ParamValue> overrides = {}) {
    std::map<std::string, ParamValue> params = {
        {"subjects", std::int64_t{4}},      {"volumes", std::int64_t{40}},
        {"parcels", std::int64_t{20}},      {"networks", std::int64_t{3}},
        {"window", std::int64_t{8}},        {"stride", std::int64_t{4}},
        {"test_subjects", std::int64_t{1}}, {"cache_dir", cache_.path()}};
    for (const auto& [name, value] : overrides)
      params[name] = value;
    return spec(params);
  }

  std::string error_of(const PluginSpec& spec) {
    try {
      registry_.create_task(spec);
    } catch (const Error& e) {
      return e.what();
    }
    ADD_FAILURE() << "the task was created";
    return "";
  }

  // Subjects' [time, parcels] .npy files and a centroids CSV of `parcels` parcels in 2 networks.
  std::vector<std::string> write_parcellated(const ScratchDir& dir, std::int64_t parcels,
                                             std::int64_t subjects) {
    std::vector<std::string> files;
    for (std::int64_t s = 0; s < subjects; ++s) {
      files.push_back(dir / fmt::format("sub-{}.npy", s));
      write_npy(files.back(), torch::randn({30, parcels}, torch::kFloat64));
    }
    std::string csv = "x,y,z,network\n";
    for (std::int64_t p = 0; p < parcels; ++p)
      csv += fmt::format("{},{},{},{}\n", 10 * p, -5 * p, p, p % 2 ? "visual" : "default");
    testing::write_text(dir / "parcels.csv", csv);
    return files;
  }

  ScratchDir cache_;
  Registry registry_;
};

TEST_F(BrainPlugin, TheSyntheticCohortHoldsOutSubjects) {
  const auto task = registry_.create_task(small_synthetic());
  const Layout layout = task->layout();
  EXPECT_NO_THROW(layout.validate());
  EXPECT_EQ(layout.tokens, 20);
  EXPECT_EQ(layout.dims(), 3);
  EXPECT_FALSE(layout.coordinates_visible);  // the centroids are ground truth for probes
  ASSERT_TRUE(layout.has_communities());
  EXPECT_EQ(layout.community_names.size(), 3u);
  const torch::Tensor fc = layout.relations.at("functional_connectivity");
  EXPECT_TRUE(torch::allclose(fc.diagonal(), torch::ones({20}, torch::kFloat64)));
  EXPECT_TRUE(task->objective().masked());
  EXPECT_EQ(task->input_size(), 8);

  const Dataset train = task->load("train");
  const Dataset test = task->load("test");
  const Dataset high = task->load("test_high_mask");
  // (40 - 8) / 4 + 1 = 9 windows per subject: 3 training subjects, 1 held out.
  EXPECT_EQ(train.inputs.sizes(), (std::vector<std::int64_t>{27, 20, 8}));
  EXPECT_EQ(test.inputs.sizes(), (std::vector<std::int64_t>{9, 20, 8}));
  EXPECT_EQ(train.group_names.size(), 3u);
  ASSERT_EQ(test.group_names.size(), 1u);
  for (const auto& name : train.group_names)
    EXPECT_NE(name, test.group_names.front());  // the test subject never trains
  EXPECT_THAT(test.group_names.front(), ::testing::MatchesRegex("sub-0[1-4]_bold"));
  EXPECT_EQ(train.mask_ratio, 0.5);
  EXPECT_EQ(high.mask_ratio, 0.9);
  EXPECT_TRUE(torch::equal(test.inputs, high.inputs));
  // Each parcel z-scored over its subject's series.
  EXPECT_LT(train.inputs.mean().abs().item<double>(), 0.2);

  // Read back from the cache: the same data; another split seed holds out another subject.
  EXPECT_TRUE(
      torch::equal(registry_.create_task(small_synthetic())->load("test").inputs, test.inputs));
  bool other = false;
  for (std::int64_t seed = 1; seed < 6 && !other; ++seed) {
    other = registry_.create_task(small_synthetic({{"split_seed", seed}}))
                ->load("test")
                .group_names.front() != test.group_names.front();
  }
  EXPECT_TRUE(other);
}

// A cohort that cannot fit is refused before a voxel is generated, with the figure and the memory.
TEST_F(BrainPlugin, ACohortLargerThanTheMachineIsRefusedWithItsSize) {
  // 1000 subjects x 100000 volumes x 1000 parcels: 800 GB of parcel series alone.
  const std::string message = error_of(small_synthetic({{"subjects", std::int64_t{1000}},
                                                        {"volumes", std::int64_t{100000}},
                                                        {"parcels", std::int64_t{1000}},
                                                        {"networks", std::int64_t{6}}}));
  EXPECT_THAT(message, HasSubstr("the brain task's synthetic cohort needs "));
  EXPECT_THAT(message, HasSubstr("1000 subjects x 100000 volumes of a 40x48x40 grid (61.4 GB for "
                                 "one subject's image)"));
  EXPECT_THAT(message, HasSubstr("this machine has "));
  EXPECT_THAT(message, HasSubstr("Use fewer subjects or volumes"));
  EXPECT_FALSE(std::filesystem::exists(cache_.path() + "/brain_synthetic"));  // nothing written
}

TEST_F(BrainPlugin, TheRealSampleWithAGridParcellation) {
  const auto task =
      registry_.create_task(spec({{"source", std::string("sample")},
                                  {"data_dir", std::string(PELAB_SOURCE_DIR) + "/tasks/brain/data"},
                                  {"window", std::int64_t{4}},
                                  {"stride", std::int64_t{1}},
                                  {"test_subjects", std::int64_t{0}}}));
  const Layout layout = task->layout();
  EXPECT_EQ(layout.tokens, 126);  // 3x3x1-voxel blocks inside the mean-intensity mask
  EXPECT_FALSE(layout.has_communities());
  // 20 volumes: the last 6 are the test part.
  EXPECT_EQ(task->load("train").inputs.size(0), 14 - 4 + 1);
  EXPECT_EQ(task->load("test").inputs.size(0), 6 - 4 + 1);
}

TEST_F(BrainPlugin, ParcellatedNpyFilesWithCentroids) {
  ScratchDir dir;
  const auto files = write_parcellated(dir, 6, 3);
  const auto task =
      registry_.create_task(spec({{"source", std::string("parcellated")},
                                  {"time_series", std::vector<std::string>{dir / "sub-*.npy"}},
                                  {"centroids", dir / "parcels.csv"},
                                  {"window", std::int64_t{10}},
                                  {"stride", std::int64_t{5}},
                                  {"test_subjects", std::int64_t{1}}}));
  const Layout layout = task->layout();
  EXPECT_EQ(layout.tokens, 6);
  EXPECT_DOUBLE_EQ(layout.coordinates[5][0].item<double>(), 50.0);
  EXPECT_EQ(layout.community_names, (std::vector<std::string>{"default", "visual"}));
  EXPECT_EQ(task->load("train").inputs.sizes(), (std::vector<std::int64_t>{2 * 5, 6, 10}));
}

TEST_F(BrainPlugin, TheRealRecordingWithNamedRegionsAndNuisanceRegressed) {
  // The shipped nitime recording and its regions table: 28 regions at atlas centroids, the three
  // nuisance columns regressed out, the last 30% held out, homotopy from the names.
  const std::string data = std::string(PELAB_SOURCE_DIR) + "/tasks/brain/data/";
  const auto task = registry_.create_task(
      spec({{"source", std::string("parcellated")},
            {"time_series", std::vector<std::string>{data + "nitime_fmri_timeseries.csv"}},
            {"centroids", data + "nitime_regions.csv"},
            {"nuisance_columns", std::vector<std::string>{"WM", "Vent", "Brain"}},
            {"test_subjects", std::int64_t{0}},
            {"window", std::int64_t{10}},
            {"stride", std::int64_t{1}}}));
  const Layout layout = task->layout();
  ASSERT_EQ(layout.tokens, 28);
  EXPECT_LT(layout.coordinates[0][0].item<double>(), 0.0);   // LCau, left
  EXPECT_GT(layout.coordinates[14][0].item<double>(), 0.0);  // RCau, right
  ASSERT_TRUE(layout.relations.count("homotopy"));
  const torch::Tensor homotopy = layout.relations.at("homotopy");
  EXPECT_EQ(homotopy.sum().item<double>(), 28.0);  // 14 pairs, both ways
  EXPECT_EQ(homotopy[0][14].item<double>(), 1.0);  // Caudate_L - Caudate_R
  EXPECT_EQ(homotopy[9][23].item<double>(), 1.0);  // APHG (the left anterior PHG) - RAntPHG
  // Real resting-state activity: homologues correlate more than other pairs.
  const torch::Tensor fc = layout.relations.at("functional_connectivity");
  const torch::Tensor off_diagonal = 1 - torch::eye(28, torch::kFloat64);
  const double homologues = (fc * homotopy).sum().item<double>() / 28.0;
  const double others =
      (fc * (off_diagonal - homotopy)).sum().item<double>() / (28.0 * 27.0 - 28.0);
  EXPECT_GT(homologues, others + 0.1);
  // 250 volumes: 175 to train on, 75 held out; windows of 10 at stride 1.
  EXPECT_EQ(task->load("train").inputs.sizes(), (std::vector<std::int64_t>{166, 28, 10}));
  EXPECT_EQ(task->load("test").inputs.sizes(), (std::vector<std::int64_t>{66, 28, 10}));

  // A nuisance column the file does not have is named with the ones it has.
  EXPECT_THAT(
      error_of(spec({{"source", std::string("parcellated")},
                     {"time_series", std::vector<std::string>{data + "nitime_fmri_timeseries.csv"}},
                     {"centroids", data + "nitime_regions.csv"},
                     {"nuisance_columns", std::vector<std::string>{"CSF"}},
                     {"test_subjects", std::int64_t{0}}})),
      HasSubstr("no column 'CSF'; its columns are WM, Vent, Brain, LCau"));
}

TEST_F(BrainPlugin, TheSyntheticCohortOnANamedAtlas) {
  const auto task = registry_.create_task(
      small_synthetic({{"atlas", std::string("aal")}, {"volumes", std::int64_t{24}}}));
  const Layout layout = task->layout();
  EXPECT_GE(layout.tokens, 100);  // the AAL's 116 regions less any too small for 4 mm voxels
  EXPECT_EQ(layout.community_names,
            (std::vector<std::string>{"frontal", "limbic", "occipital", "temporal", "parietal",
                                      "subcortical", "cerebellum"}));  // AAL's order of regions
  EXPECT_GE(layout.relations.at("homotopy").sum().item<double>(), 2.0 * 45);
  EXPECT_THAT(error_of(small_synthetic({{"atlas", std::string("atlas.nii.gz")}})),
              HasSubstr("builds its cohort on a named atlas (aal, harvard_oxford, aicha)"));
}

TEST_F(BrainPlugin, BadDataIsAOneLineErrorNamingTheFile) {
  ScratchDir dir;
  write_parcellated(dir, 6, 3);
  // A subject with 5 parcels where the centroids list 6.
  write_npy(dir / "sub-1.npy", torch::randn({30, 5}, torch::kFloat64));
  const PluginSpec parcellated = spec({{"source", std::string("parcellated")},
                                       {"time_series", std::vector<std::string>{dir / "sub-*.npy"}},
                                       {"centroids", dir / "parcels.csv"},
                                       {"window", std::int64_t{10}},
                                       {"test_subjects", std::int64_t{1}}});
  std::string message = error_of(parcellated);
  EXPECT_THAT(message, HasSubstr(dir / "sub-1.npy"));
  EXPECT_THAT(message, HasSubstr("5"));
  EXPECT_THAT(message, Not(HasSubstr("\n")));
  // A 3D array.
  write_npy(dir / "sub-1.npy", torch::randn({30, 6, 2}, torch::kFloat64));
  message = error_of(parcellated);
  EXPECT_THAT(message, HasSubstr(dir / "sub-1.npy"));
  EXPECT_THAT(message, HasSubstr("[time, parcels]"));

  // A malformed NIfTI: the real sample cut short.
  const std::string sample = read_file(testing::data_file("functional.nii"));
  testing::write_text(dir / "cut.nii", sample.substr(0, sample.size() / 2));
  message = error_of(spec({{"source", std::string("nifti")},
                           {"functional", std::vector<std::string>{dir / "cut.nii"}},
                           {"test_subjects", std::int64_t{0}}}));
  EXPECT_THAT(message, HasSubstr(dir / "cut.nii"));
  EXPECT_THAT(message, Not(HasSubstr("\n")));

  // An atlas on another grid: the anatomical image's (33x41x25) against the functional's.
  testing::write_text(dir / "ok.nii", sample);
  Volume atlas = read_volume(testing::data_file("anatomical.nii"));
  for (std::size_t v = 0; v < atlas.data.size(); ++v)  // two labels: the first and second half
    atlas.data[v] = atlas.data[v] > 0 ? (2 * v < atlas.data.size() ? 1.0f : 2.0f) : 0.0f;
  atlas.path = dir / "atlas.nii";
  write_volume(atlas.path, atlas);
  message = error_of(spec({{"source", std::string("nifti")},
                           {"functional", std::vector<std::string>{dir / "ok.nii"}},
                           {"atlas", atlas.path},
                           {"test_subjects", std::int64_t{0}}}));
  EXPECT_THAT(message, HasSubstr(dir / "ok.nii"));
  EXPECT_THAT(message, HasSubstr(atlas.path));
  EXPECT_THAT(message, HasSubstr("33x41x25"));
  EXPECT_THAT(message, HasSubstr("17x21x3"));

  // Holding out every subject.
  message = error_of(small_synthetic({{"test_subjects", std::int64_t{4}}}));
  EXPECT_THAT(message, HasSubstr("test_subjects = 4 leaves no subject to train on"));
}

// The real-sample experiment of tasks/brain/experiments/real_sample.toml, cut to one epoch.
// A key that the chosen source never reads was silently ignored (centroids with source = "nifti"
// and no atlas): the manifest refuses it where it is written, saying when it is read. A default
// value, as a run's config.toml writes every key, passes.
TEST_F(BrainPlugin, AKeyTheSourceDoesNotReadIsRefusedWhereItIsWritten) {
  const auto error_of_manifest = [&](const std::string& task_keys) -> std::string {
    const std::string text = "[experiment]\nname = \"b\"\n[task]\nplugin = \"brain\"\n" +
                             task_keys +
                             "\n[model]\nd_model = 16\nheads = 1\n[pe]\nplugin = \"none\"\n";
    try {
      Manifest::from_string(text, "b.toml", registry_);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_THAT(error_of_manifest("source = \"nifti\"\nfunctional = [\"x.nii\"]\n"
                                "centroids = \"parcels.csv\""),
              HasSubstr("b.toml:7:13: 'centroids' in [task] (the task plugin 'brain') is set "
                        "(\"parcels.csv\") but this configuration does not use it: it is read "
                        "only when source = \"parcellated\", or \"nifti\" with an atlas"));
  EXPECT_THAT(error_of_manifest("source = \"parcellated\"\nsubjects = 12"),
              HasSubstr("'subjects' in [task] (the task plugin 'brain') is set (12) but"));
  EXPECT_THAT(error_of_manifest("atlas = \"aal\"\nparcels = 40"),
              HasSubstr("read only when source = \"synthetic\" without an atlas"));
  EXPECT_THAT(error_of_manifest("test_subjects = 2\ntest_fraction = 0.5"),
              HasSubstr("read only when test_subjects = 0"));
  // Read, or at its default: accepted.
  EXPECT_EQ(error_of_manifest("source = \"nifti\"\nfunctional = [\"x.nii\"]\natlas = \"aal\"\n"
                              "centroids = \"parcels.csv\""),
            "");
  EXPECT_EQ(error_of_manifest("source = \"parcellated\"\nsubjects = 8\nparcels = 100"), "");
}

TEST_F(BrainPlugin, TheRealSampleExperimentRunsEndToEnd) {
  ScratchDir out;
  const std::string manifest =
      std::string(PELAB_SOURCE_DIR) + "/tasks/brain/experiments/real_sample.toml";
  const Manifest parsed =
      Manifest::from_file(manifest, registry_,
                          {"train.epochs=1", "task.data_dir=\"" + std::string(PELAB_SOURCE_DIR) +
                                                 "/tasks/brain/data\""});
  const RunOutcome outcome = execute_run(parsed.runs().front(), registry_, out.path());
  for (const std::string split : {"train", "test", "test_high_mask"}) {
    EXPECT_TRUE(std::isfinite(outcome.final_metrics.at(split + "/all/mse"))) << split;
    EXPECT_TRUE(outcome.final_metrics.count(split + "/all/r")) << split;
  }
  const std::string summary = read_file(outcome.dir + "/summary.json");
  EXPECT_THAT(summary, HasSubstr("\"rsa\""));
  EXPECT_THAT(summary, HasSubstr("\"connectivity\""));
}

}  // namespace
}  // namespace pelab::brain
