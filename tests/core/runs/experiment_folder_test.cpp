// ExperimentFolder: where a run's folder lies, which folders count as runs, and sweep.json.

#include "pelab/runs/experiment_folder.h"

#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <boost/filesystem.hpp>

#include "pelab/base/error.h"
#include "pelab/runs/run_folder.h"
#include "test_support.h"

namespace pelab {
namespace {

using ::pelab::test::ScratchDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

namespace fs = boost::filesystem;

// A folder that holds a run's configuration, as a run folder does once a run has started.
void make_run(const fs::path& dir) {
  fs::create_directories(dir);
  std::ofstream(dir / RunFolder::kConfigFile) << "[experiment]\nname = \"e\"\n";
}

TEST(ExperimentFolderTest, NamesEveryFileItHolds) {
  const ExperimentFolder folder = ExperimentFolder::of("runs", "lst");
  EXPECT_EQ(folder.dir(), "runs/lst");
  EXPECT_EQ(folder.results_file(), "runs/lst/results.csv");
  EXPECT_EQ(folder.report_markdown_file(), "runs/lst/report.md");
  EXPECT_EQ(folder.report_html_file(), "runs/lst/report.html");
  EXPECT_EQ(folder.figures_folder(), "runs/lst/figures");
  EXPECT_EQ(folder.slurm_folder(), "runs/lst/slurm");
  EXPECT_EQ(folder.sweep_record_path(), "runs/lst/sweep.json");
  EXPECT_EQ(folder.manifest_snapshot_folder("node1", 42), "runs/lst/.manifest-node1-42");
  EXPECT_EQ(folder.manifest_snapshot_folder("node1", 42)
                .rfind(folder.path(ExperimentFolder::manifest_snapshot_prefix("node1")), 0),
            0u);
}

TEST(ExperimentFolderTest, FindsItsSeedFoldersAndTheRunsAmongThem) {
  ScratchDir root;
  const fs::path experiment = fs::path(root.path()) / "e";
  make_run(experiment / "b" / "seed-2");
  make_run(experiment / "a" / "seed-1");
  fs::create_directories(experiment / "a" / "seed-9");  // not started: no configuration yet
  fs::create_directories(experiment / "a" / "notes");   // not a seed folder
  fs::create_directories(experiment / "slurm" / "logs");

  EXPECT_THAT(ExperimentFolder(experiment.string()).seed_folders(),
              ElementsAre("a/seed-1", "a/seed-9", "b/seed-2"));
  EXPECT_THAT(ExperimentFolder::run_folders(experiment.string()),
              ElementsAre((experiment / "a/seed-1").string(), (experiment / "b/seed-2").string()));
  // A run folder names itself.
  const std::string run = (experiment / "b/seed-2").string();
  EXPECT_THAT(ExperimentFolder::run_folders(run), ElementsAre(run));
}

TEST(ExperimentFolderTest, AFolderWithoutRunsIsNamedAndExplained) {
  ScratchDir root;
  try {
    ExperimentFolder::run_folders(root.path());
    FAIL() << "an empty folder was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("holds no runs: give a run folder (with config.toml) or an "
                                    "experiment folder (<out>/<experiment>, holding "
                                    "<point>/seed-<s>/ folders)"));
  }
  EXPECT_THROW(ExperimentFolder::run_folders(root.path() + "/missing"), Error);
}

TEST(ExperimentFolderTest, TheSweepRecordReadsBackAndABrokenOneSaysHowToMendIt) {
  ScratchDir root;
  const ExperimentFolder experiment(root.path());
  EXPECT_FALSE(experiment.read_sweep_record().has_value());

  SweepRecord record;
  record.manifest = "/m/quick.toml";
  record.overrides = {"train.epochs=2"};
  record.runs = {"a/seed-1", "a/seed-2"};
  experiment.write_sweep_record(record);
  const auto read = experiment.read_sweep_record();
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->manifest, record.manifest);
  EXPECT_EQ(read->overrides, record.overrides);
  EXPECT_EQ(read->runs, record.runs);

  std::ofstream(experiment.sweep_record_path()) << "{\"runs\": 3}";
  try {
    experiment.read_sweep_record();
    FAIL() << "a sweep record with a number for its runs was read";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("delete it, and `pelab run` or `pelab slurm` writes it again"));
  }
}

}  // namespace
}  // namespace pelab
