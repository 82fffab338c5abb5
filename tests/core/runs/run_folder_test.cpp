// RunFolder: the run folder's formats read back, a folder written before the sweep point was a key,
// and what happens to corrupt or truncated files.

#include "pelab/runs/run_folder.h"

#include <cmath>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <boost/filesystem.hpp>

#include "pelab/base/error.h"
#include "pelab/io/file_io.h"
#include "pelab/model/transformer_encoder.h"
#include "pelab/plugins/registry.h"
#include "pelab/runs/run.h"
#include "pelab/runs/run_loader.h"
#include "test_support.h"

namespace pelab {
namespace {

using ::pelab::test::builtin_registry;
using ::pelab::test::ScratchDir;
using ::testing::HasSubstr;
using ::testing::Not;

namespace fs = boost::filesystem;

// Written by pelab 0.1 before the sweep point was [experiment] point: a `# sweep point:` comment.
const std::string kLegacyRun =
    std::string(PELAB_SOURCE_DIR) + "/tests/fixtures/run_folders/legacy/pe.init.std=0.2/seed-3";

void truncate_file(const std::string& path, std::size_t bytes) {
  const std::string contents = read_file(path);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << contents.substr(0, bytes);
}

TEST(RunFolderTest, AFolderWrittenBeforeThePointWasAKeyStillLoads) {
  Registry registry = builtin_registry();
  const RunFolder folder(kLegacyRun);
  const RunConfig config = folder.read_config(registry);
  EXPECT_EQ(config.point, "pe.init.std=0.2");
  EXPECT_EQ(config.experiment, "legacy");
  EXPECT_EQ(config.seed, 3);
  EXPECT_THAT(config.to_toml(), HasSubstr("point = \"pe.init.std=0.2\""));

  const auto summary = folder.read_summary();
  ASSERT_TRUE(summary.has_value());
  EXPECT_TRUE(summary->finished());
  EXPECT_EQ(summary->point, "pe.init.std=0.2");
  EXPECT_EQ(summary->epoch, 2);
  EXPECT_EQ(summary->final_metrics.count("test/all/accuracy"), 1u);
  EXPECT_EQ(folder.read_metrics().back().epoch, 2);
  EXPECT_EQ(folder.read_snapshots().size(), 3u);

  const LoadedRun run = load_run(kLegacyRun, registry);
  EXPECT_EQ(run.config.point, "pe.init.std=0.2");
  ASSERT_NE(run.model, nullptr);
  EXPECT_EQ(run.checkpoint_epoch, 2);
  EXPECT_EQ(run.snapshots.size(), 3u);
}

TEST(RunFolderTest, TheSweepPointIsAKeyOfTheConfig) {
  Registry registry = builtin_registry();
  ScratchDir dir;
  const RunFolder folder(dir.path());
  RunConfig config = RunFolder(kLegacyRun).read_config(registry);
  config.point = "pe.init.std=0.5";
  folder.write_config(config);
  EXPECT_THAT(folder.read_config_text(), HasSubstr("point = \"pe.init.std=0.5\""));
  EXPECT_EQ(folder.read_config(registry).point, "pe.init.std=0.5");
}

TEST(RunFolderTest, MetricsRoundTripAndAMalformedRowNamesFileAndLine) {
  ScratchDir dir;
  const RunFolder folder(dir.path());
  EXPECT_TRUE(folder.read_metrics().empty());
  const std::vector<MetricRow> rows = {{0, "test", "all", "accuracy", 0.25},
                                       {1, "train_epoch", "all", "loss", std::nan("")},
                                       {1, "test", "a,b", "accuracy", 0.5}};
  folder.write_metrics(rows);
  const auto read = folder.read_metrics();
  ASSERT_EQ(read.size(), 3u);
  EXPECT_EQ(read[2].group, "a,b");
  EXPECT_TRUE(std::isnan(read[1].value));
  EXPECT_EQ(folder.read_metrics(0).size(), 1u);

  std::ofstream(folder.path("metrics.csv"), std::ios::app) << "2,test,all,accuracy,oops\n";
  try {
    folder.read_metrics();
    FAIL() << "a malformed row was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("metrics.csv:5: malformed row '2,test,all,accuracy,oops'"));
  }
}

// A summary.json is written whole at the end of a run: one that does not parse was damaged after
// it, and once read as "not ended" (so the finished run was trained over). Now an error naming it.
TEST(RunFolderTest, AnUnreadableSummaryIsAnErrorNotARunThatHasNotEnded) {
  ScratchDir dir;
  const RunFolder folder(dir.path());
  EXPECT_FALSE(folder.read_summary().has_value());
  RunSummary summary;
  summary.status = "failed";
  summary.error = "boom";
  summary.epoch = 4;
  folder.write_summary(summary);
  ASSERT_TRUE(folder.read_summary().has_value());
  EXPECT_EQ(folder.read_summary()->error, "boom");
  EXPECT_FALSE(folder.read_summary()->finished());
  truncate_file(folder.path("summary.json"), 20);
  try {
    folder.read_summary();
    FAIL() << "a cut summary.json was read";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(folder.path("summary.json") + " is not JSON (byte"));
    EXPECT_THAT(e.what(), HasSubstr("delete it to train the run again"));
  }
  write_file_atomically(folder.path("summary.json"), R"({"status": "running", "seed": 1})");
  EXPECT_THROW(folder.read_summary(), Error);
}

// A file name or a data file's text in another encoding once aborted the JSON writer ("invalid
// UTF-8 byte") and left the run without its summary: it is written, its bytes escaped.
TEST(RunFolderTest, ASummaryHoldsTextThatIsNotUtf8Escaped) {
  ScratchDir dir;
  const RunFolder folder(dir.path());
  RunSummary summary;
  summary.status = "failed";
  summary.error = "cannot read 'sub-01_\xe9t\xe9.csv'";
  folder.write_summary(summary);
  EXPECT_EQ(folder.read_summary()->error, "cannot read 'sub-01_\\xE9t\\xE9.csv'");
}

// The compute record reads back; one written before pelab recorded the subnormal mode says nothing
// of it, and the report's "computed with" shows what there is.
TEST(RunFolderTest, TheComputeRecordReadsBackWithTheSubnormalMode) {
  ScratchDir dir;
  const RunFolder folder(dir.path());
  RunSummary summary;
  summary.status = "finished";
  summary.compute.blas_kernel = "SkylakeX";
  summary.compute.aten_kernels = "AVX512";
  summary.compute.precision = "fp32";
  summary.compute.subnormals = "flushed";
  folder.write_summary(summary);
  const RunCompute read = folder.read_summary()->compute;
  EXPECT_EQ(read.subnormals, "flushed");
  EXPECT_EQ(read.short_text(), "SkylakeX, AVX512, fp32, subnormals flushed");

  write_file_atomically(
      folder.path("summary.json"),
      R"({"status": "finished", "seed": 1, "epochs": 4, "compute": {"blas_kernel": "SkylakeX",
          "aten_kernels": "AVX512", "precision": "fp32"}})");
  const RunCompute older = folder.read_summary()->compute;
  EXPECT_EQ(older.subnormals, "");
  EXPECT_EQ(older.short_text(), "SkylakeX, AVX512, fp32");
}

// Found by the run_folder fuzzer: a floating-point number where an integer belongs was cast,
// undefined behaviour out of range. Such a summary is not one this pelab wrote.
TEST(RunFolderTest, ASummaryWithAFractionOrHugeNumberForAnIntegerIsRefused) {
  ScratchDir dir;
  const RunFolder folder(dir.path());
  const auto summary_with_seed = [](const char* seed) {
    return fmt::format(R"({{"status": "finished", "seed": {}, "epochs": 4}})", seed);
  };
  for (const char* seed : {"4.5e63", "2235.5", "\"2235\""}) {
    write_file_atomically(folder.path("summary.json"), summary_with_seed(seed));
    try {
      folder.read_summary();
      ADD_FAILURE() << "seed " << seed << " was read";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("has no whole number under \"seed\"")) << seed;
    }
  }
  write_file_atomically(folder.path("summary.json"), summary_with_seed("2235"));
  ASSERT_TRUE(folder.read_summary().has_value());
  EXPECT_EQ(folder.read_summary()->seed, 2235);
  EXPECT_EQ(folder.read_summary()->epoch, 4);
}

class CheckpointTest : public ::testing::Test {
 protected:
  CheckpointTest() : registry_(builtin_registry()) {
    config_ = RunFolder(kLegacyRun).read_config(registry_);
  }
  BuiltRun build() { return build_run(config_, registry_); }
  RunConfig with_epochs(std::int64_t epochs) const {
    RunConfig config = config_;
    config.train.set("epochs", epochs);
    return config;
  }
  // The metrics.csv of the run trained for 2 epochs without a stop, in a folder of its own.
  std::string straight_metrics() {
    const RunOutcome straight = execute_run(with_epochs(2), registry_, straight_root_.path());
    return read_file(RunFolder(straight.dir).path("metrics.csv"));
  }
  // The run stopped after epoch 1 as if killed before it finished: no summary.json.
  RunFolder stopped_after_one_epoch() {
    const RunFolder folder(execute_run(with_epochs(1), registry_, dir_.path()).dir);
    fs::remove(folder.path("summary.json"));
    return folder;
  }

  Registry registry_;
  RunConfig config_;
  ScratchDir dir_;
  ScratchDir straight_root_;
};

TEST_F(CheckpointTest, ACorruptCheckpointFallsBackToThePreviousOne) {
  const RunFolder folder(dir_.path());
  BuiltRun run = build();
  folder.save_checkpoint(*run.model, run.trainer->optimizer(), 1, {});
  folder.save_checkpoint(*run.model, run.trainer->optimizer(), 2, {});
  EXPECT_TRUE(fs::exists(folder.path("checkpoint.previous.pt")));
  EXPECT_EQ(folder.load_checkpoint(*run.model, &run.trainer->optimizer()).epoch, 2);

  truncate_file(folder.path("checkpoint.pt"), 100);
  const auto loaded = folder.load_checkpoint(*run.model, &run.trainer->optimizer());
  EXPECT_EQ(loaded.epoch, 1);
  EXPECT_EQ(loaded.file, folder.path("checkpoint.previous.pt"));
  EXPECT_THAT(loaded.warning, HasSubstr("checkpoint.pt is unreadable"));

  truncate_file(folder.path("checkpoint.previous.pt"), 100);
  try {
    folder.load_checkpoint(*run.model, nullptr);
    FAIL() << "two unreadable checkpoints were accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("checkpoint.previous.pt is unreadable"));
    EXPECT_THAT(e.what(), HasSubstr("delete it to start the run over"));
    EXPECT_THAT(e.what(), ::testing::Not(HasSubstr("Exception raised from")));  // no backtrace
  }
}

TEST_F(CheckpointTest, ARunWhoseLastCheckpointIsCorruptResumesFromThePreviousOne) {
  const std::string straight = straight_metrics();
  // Its checkpoint.pt then damaged, with the checkpoint of epoch 1 kept as checkpoint.previous.pt.
  const RunFolder folder = stopped_after_one_epoch();
  fs::copy_file(folder.path("checkpoint.pt"), folder.path("checkpoint.previous.pt"));
  truncate_file(folder.path("checkpoint.pt"), 64);

  const RunOutcome resumed = execute_run(with_epochs(2), registry_, dir_.path());
  EXPECT_FALSE(resumed.skipped);
  const std::string log = read_file(folder.path("run.log"));
  EXPECT_THAT(log, HasSubstr("checkpoint.pt is unreadable"));
  EXPECT_THAT(log, HasSubstr("resumed from the checkpoint of epoch 1"));
  EXPECT_EQ(read_file(folder.path("metrics.csv")), straight);
  EXPECT_FALSE(fs::exists(folder.path("checkpoint.previous.pt")));
}

TEST_F(CheckpointTest, ARunWhoseMetricsAreDamagedRestoresThemFromItsCheckpoint) {
  const std::string straight = straight_metrics();
  const RunFolder folder = stopped_after_one_epoch();
  write_file_atomically(folder.path("metrics.csv"), "epoch,split,group,metric,value\n1,tr");

  execute_run(with_epochs(2), registry_, dir_.path());
  const std::string log = read_file(folder.path("run.log"));
  EXPECT_THAT(log, HasSubstr("metrics.csv is unreadable"));
  EXPECT_THAT(log, HasSubstr("restored its rows up to epoch 1 from"));
  EXPECT_EQ(read_file(folder.path("metrics.csv")), straight);
}

// A checkpoint that no longer fits the model its folder's config.toml builds (the file was edited
// after the run) is refused saying so; it used to load, and the run's probes then computed on a
// model of the wrong shape, or died inside LibTorch.
TEST_F(CheckpointTest, ACheckpointThatDoesNotFitItsConfigurationIsRefused) {
  const RunFolder folder = stopped_after_one_epoch();
  RunConfig edited = config_;
  edited.model.set("d_model", edited.model.integer("d_model") * 2);
  BuiltRun run = build_run(edited, registry_);
  try {
    folder.load_checkpoint(*run.model, nullptr);
    FAIL() << "the checkpoint loaded into a model of another width";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("checkpoint.pt does not fit the model that its folder's "
                                    "config.toml builds"));
    EXPECT_THAT(e.what(), HasSubstr("the run folder was changed after the run"));
    EXPECT_THAT(e.what(), Not(HasSubstr("truncated")));
  }
}

// An edit that keeps every shape (the heads of a 1-head model's attention, a PE's parameter) loads
// without a shape error: the configuration the checkpoint records is compared instead, and every
// reader of the finished run refuses the edited folder, naming the key.
TEST_F(CheckpointTest, AConfigurationEditedAfterTheRunIsRefusedByEveryReader) {
  const RunFolder folder(execute_run(with_epochs(1), registry_, dir_.path()).dir);
  ASSERT_FALSE(folder.read_summary()->configuration.empty());
  EXPECT_NO_THROW(load_run(folder.dir(), registry_));
  const std::string original = read_file(folder.config_path());
  const std::string heads = fmt::format("heads = {}", config_.model.integer("heads"));
  ASSERT_NE(original.find(heads), std::string::npos);
  std::string edited = original;
  edited.replace(edited.find(heads), heads.size(), "heads = 4");
  write_file_atomically(folder.config_path(), edited);

  try {
    load_run(folder.dir(), registry_);  // what `pelab probe` and from_run read
    FAIL() << "a run whose config.toml was edited after it ended loaded";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("config.toml was changed after the run ended: model.heads: "));
    EXPECT_THAT(e.what(), HasSubstr("-> 4"));
  }
  // The checkpoint says the same on its own (a run resumed from an edited folder).
  fs::remove(folder.path("summary.json"));
  try {
    load_run(folder.dir(), registry_);
    FAIL() << "the checkpoint loaded into an edited configuration";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("was trained with another configuration than its folder's "
                                    "config.toml now holds (model.heads: "));
  }
  // What may change without changing the run: the threads, the description, the probes.
  write_file_atomically(folder.config_path(), original + "\n[[probe]]\nplugin = \"pe_norm\"\n");
  EXPECT_NO_THROW(load_run(folder.dir(), registry_));
}

// A metrics.csv cut inside its last row (whose value still parses) or at a row boundary was
// once resumed as it was, and the run finished with rows missing: now it is whole or restored.
class CutMetricsTest : public CheckpointTest, public ::testing::WithParamInterface<bool> {};

TEST_P(CutMetricsTest, AreRestoredFromTheCheckpoint) {
  const bool inside_a_row = GetParam();
  const std::string straight = straight_metrics();
  EXPECT_EQ(RunFolder::missing_metrics(RunFolder::parse_metrics(straight, "m", 2), 2, 1), "");
  const RunFolder folder = stopped_after_one_epoch();
  std::string metrics = read_file(folder.path("metrics.csv"));
  if (inside_a_row) {
    metrics.resize(metrics.size() - 3);  // "...,0.6931\n" -> "...,0.69"
  } else {
    metrics = metrics.substr(0, metrics.find("\n1,") + 1);  // every row of epoch 1 gone
  }
  write_file_atomically(folder.path("metrics.csv"), metrics);

  execute_run(with_epochs(2), registry_, dir_.path());
  const std::string log = read_file(folder.path("run.log"));
  EXPECT_THAT(log, HasSubstr(inside_a_row ? "its last row is cut short"
                                          : "lacks the training loss of epoch 1"));
  EXPECT_THAT(log, HasSubstr("restored its rows up to epoch 1 from"));
  EXPECT_EQ(read_file(folder.path("metrics.csv")), straight);
}

INSTANTIATE_TEST_SUITE_P(InsideARowOrAtARowBoundary, CutMetricsTest, ::testing::Bool());

TEST_F(CheckpointTest, KeepsTheTimeSpentSoThatAResumedRunReportsAllOfIt) {
  BuiltRun run = build();
  // A checkpoint of an older pelab has no time: the resumed run counts from there.
  EXPECT_FALSE(RunFolder(kLegacyRun).load_checkpoint(*run.model, nullptr).time.has_value());

  const RunFolder folder = stopped_after_one_epoch();
  const auto first = folder.load_checkpoint(*run.model, nullptr).time;
  ASSERT_TRUE(first.has_value());
  const std::int64_t steps_per_epoch = run.trainer->steps_per_epoch();
  EXPECT_EQ(first->epochs, 1);
  EXPECT_EQ(first->steps, steps_per_epoch);
  EXPECT_GT(first->train_seconds, 0.0);
  EXPECT_GE(first->wall_seconds, first->train_seconds);

  execute_run(with_epochs(2), registry_, dir_.path());
  const auto both = folder.load_checkpoint(*run.model, nullptr).time;
  ASSERT_TRUE(both.has_value());
  EXPECT_EQ(both->epochs, 2);
  EXPECT_EQ(both->steps, 2 * steps_per_epoch);
  EXPECT_GT(both->train_seconds, first->train_seconds);
  EXPECT_GT(both->wall_seconds, first->wall_seconds);
  const auto summary = folder.read_summary();
  ASSERT_TRUE(summary.has_value());
  EXPECT_GE(summary->wall_seconds, both->wall_seconds);  // the probes come after the checkpoint
  EXPECT_NEAR(summary->steps_per_second, both->steps / both->train_seconds,
              1e-9 * summary->steps_per_second);
}

}  // namespace
}  // namespace pelab

namespace pelab {
namespace {

// config.toml as stored: the flat keys that the check of a reused folder, `pelab status` and
// `pelab report` read, with or without the run's plugins.
TEST(StoredConfigTest, FlattensInlineTablesAndProbeTablesIntoDottedKeys) {
  const StoredConfig config = StoredConfig::parse(R"([experiment]
name = "e"
seeds = [3]

[pe]
plugin = "learned"
init = { plugin = "normal", std = 2.0 }

[train]
epochs = 40
lr = 0.001
optimizer = "adamw"

[[probe]]
plugin = "rsa"
permutations = 100

[[probe]]
plugin = "pe_norm"
)",
                                                  "config.toml");
  EXPECT_EQ(config.toml("pe.init.plugin"), "\"normal\"");
  EXPECT_EQ(config.shown("pe.init.plugin"), "normal");
  // As TOML writes a float, and as a reader is shown it.
  EXPECT_EQ(config.toml("pe.init.std"), "2.0");
  EXPECT_EQ(config.shown("pe.init.std"), "2");
  EXPECT_EQ(config.number("pe.init.std"), 2.0);
  EXPECT_EQ(config.integer("train.epochs"), 40);
  EXPECT_EQ(config.integer("train.lr"), std::nullopt);
  EXPECT_EQ(config.integer("train.optimizer"), std::nullopt);
  EXPECT_EQ(config.toml("experiment.seeds"), "[3]");
  EXPECT_EQ(config.toml("probe.0.permutations"), "100");
  EXPECT_EQ(config.toml("train.missing"), "(absent)");
  EXPECT_EQ(config.shown("train.missing"), std::nullopt);
  EXPECT_THAT(config.probe_plugins(), ::testing::ElementsAre("rsa", "pe_norm"));
}

TEST(StoredConfigTest, InvalidTomlNamesTheFileAndLine) {
  try {
    StoredConfig::parse("[train]\nepochs = 4\nlr = = 1\n", "runs/e/p/seed-1/config.toml");
    FAIL() << "invalid TOML was read";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("runs/e/p/seed-1/config.toml:3: invalid TOML"));
  }
}

// What a resolved configuration writes reads back as the same flat keys, whatever it holds.
TEST(StoredConfigTest, AResolvedConfigurationReadsBackAsWritten) {
  Registry registry = builtin_registry();
  const RunFolder folder(kLegacyRun);
  const RunConfig config = folder.read_config(registry);
  const StoredConfig stored = StoredConfig::parse(config.to_toml(), "config.toml");
  EXPECT_EQ(stored.shown("experiment.point"), "pe.init.std=0.2");
  EXPECT_EQ(stored.shown("pe.plugin"), config.pe.name);
  EXPECT_EQ(stored.number("pe.init.std"), 0.2);
  EXPECT_EQ(stored.integer("train.epochs"), config.train.integer("epochs"));
}

TEST(RunFolderTest, AProbeRecordReadsBackWithItsHeadlinesAndNaN) {
  ScratchDir dir;
  const RunFolder folder(dir.path());
  ProbeOutcome outcome;
  outcome.name = "rsa_2";
  outcome.plugin = "rsa";
  outcome.epoch = 40;
  outcome.scalars = {{"spearman", 0.25}, {"p", std::nan("")}};
  outcome.headlines = {{"spearman", Better::kHigher, "1: mirrors the layout"},
                       {"p", Better::kLower, ""}};
  outcome.arrays.push_back(folder.write_probe_array("rsa_2", "similarity", torch::eye(3)));
  outcome.note = "a note";
  folder.write_probe_record(outcome);

  const auto read = folder.read_probe_record("rsa_2");
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->plugin, "rsa");
  EXPECT_EQ(read->epoch, 40);
  EXPECT_EQ(read->scalars.at("spearman"), 0.25);
  EXPECT_TRUE(std::isnan(read->scalars.at("p")));  // JSON's null
  ASSERT_EQ(read->headlines.size(), 2u);
  EXPECT_EQ(read->headlines[0].better, Better::kHigher);
  EXPECT_EQ(read->headlines[0].meaning, "1: mirrors the layout");
  EXPECT_EQ(read->headlines[1].better, Better::kLower);
  EXPECT_EQ(read->arrays,
            std::vector<std::string>{RunFolder::probe_array_file("rsa_2", "similarity")});
  EXPECT_TRUE(torch::equal(read_npy(folder.path(read->arrays.front())), torch::eye(3)));
  EXPECT_EQ(read->note, "a note");
  EXPECT_FALSE(folder.read_probe_record("rsa").has_value());

  // A later run of the probe starts from no arrays: a renamed array must not outlive it.
  folder.remove_probe_arrays("rsa_2");
  EXPECT_FALSE(fs::exists(folder.path(read->arrays.front())));
}

// A damaged probe record once read as absent, and its headlines and notes left the report.
TEST(RunFolderTest, ADamagedProbeRecordIsAnErrorNamingIt) {
  ScratchDir dir;
  const RunFolder folder(dir.path());
  EXPECT_FALSE(folder.read_probe_record("rsa").has_value());
  write_file_atomically(folder.path("probes/rsa.json"), "{\"probe\": \"rsa\", \"scal");
  try {
    folder.read_probe_record("rsa");
    FAIL() << "a cut probe record was read";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("probes/rsa.json is not a JSON object"));
    EXPECT_THAT(e.what(), HasSubstr("--probe rsa"));
  }
}

TEST(RunFolderTest, TheFinalTablesAreTheLastSnapshotWithTables) {
  ScratchDir dir;
  const RunFolder folder(dir.path());
  EXPECT_FALSE(folder.read_final_tables().defined());
  for (std::int64_t epoch : {0, 5, 10}) {
    PESnapshot snapshot;
    snapshot.epoch = epoch;
    snapshot.tables = torch::full({1, 2, 2}, static_cast<double>(epoch));
    folder.write_snapshot(snapshot);
  }
  EXPECT_TRUE(torch::equal(folder.read_final_tables(), torch::full({1, 2, 2}, 10.0)));
}

TEST(RunFolderTest, EveryParameterIsWrittenAndTheLastIsReadByName) {
  ScratchDir dir;
  const RunFolder folder(dir.path());
  EXPECT_FALSE(folder.read_final_parameter("positions").defined());
  for (std::int64_t epoch : {0, 5}) {
    PESnapshot snapshot;
    snapshot.epoch = epoch;
    snapshot.kernels = torch::eye(3).unsqueeze(0);
    snapshot.tensors["positions"] = torch::full({1, 3, 2}, static_cast<double>(epoch));
    snapshot.tensors["frequencies"] = torch::ones({1, 4, 2});
    folder.write_snapshot(snapshot);
  }
  EXPECT_TRUE(fs::is_regular_file(dir.path() + "/pe/param-positions-epoch-000005.npy"));
  EXPECT_TRUE(torch::equal(folder.read_final_parameter("positions"), torch::full({1, 3, 2}, 5.0)));
  EXPECT_FALSE(folder.read_final_tables().defined());
  EXPECT_EQ(folder.snapshot_file_epochs().size(), 6u);  // kernels and two parameters, twice
  const std::vector<PESnapshot> read = folder.read_snapshots();
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[1].tensors.size(), 2u);
  EXPECT_TRUE(torch::equal(read[1].tensors.at("frequencies"), torch::ones({1, 4, 2})));
}

}  // namespace
}  // namespace pelab
