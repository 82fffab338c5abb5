// execute_run end to end on a tiny marker_position model: the run folder's files, bit-for-bit
// reproducibility, skipping finished runs and resuming from a checkpoint.

#include "pelab/runs/run.h"

#include <dlfcn.h>

#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <boost/filesystem.hpp>
#include <nlohmann/json.hpp>

#include "pelab/base/error.h"
#include "pelab/config/manifest.h"
#include "pelab/host/subnormals.h"
#include "pelab/io/file_io.h"
#include "pelab/plugins/registry.h"
#include "pelab/runs/run_folder.h"
#include "test_support.h"

namespace pelab {
namespace {

using ::pelab::test::builtin_registry;
using ::pelab::test::ScratchDir;
using ::pelab::test::slurp;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

namespace fs = boost::filesystem;
using json = nlohmann::json;

// Seconds to run: a one-block, 8-wide model on 64 samples.
const std::string kTiny = R"([experiment]
name = "tiny"
seeds = [3]

[task]
plugin = "marker_position"
tokens = 6
train_samples = 64
test_samples = 32

[model]
layers = 1
d_model = 8
heads = 2
mlp_ratio = 2

[pe]
plugin = "learned"
init = { plugin = "normal", std = 0.2 }

[train]
lr = 0.01
batch_size = 16
epochs = 2
threads = 1

[[probe]]
plugin = "pe_norm"
)";

class RunTest : public ::testing::Test {
 protected:
  RunTest() : registry_(builtin_registry()) {}

  RunConfig config(const std::vector<std::string>& overrides = {}) {
    const Manifest manifest = Manifest::from_string(kTiny, "tiny.toml", registry_, overrides);
    EXPECT_EQ(manifest.runs().size(), 1u);
    return manifest.runs().front();
  }

  RunOutcome run(const std::string& root, const std::vector<std::string>& overrides = {},
                 bool force = false) {
    RunOptions options;
    options.force = force;
    return execute_run(config(overrides), registry_, root, options);
  }

  Registry registry_;
};

TEST_F(RunTest, WritesEveryFile) {
  ScratchDir root;
  const RunOutcome outcome = run(root.path());
  EXPECT_EQ(outcome.dir, root / "tiny/default/seed-3");
  EXPECT_FALSE(outcome.skipped);
  const std::string dir = outcome.dir;
  for (const char* file :
       {"config.toml", "metrics.csv", "summary.json", "run.log", "checkpoint.pt",
        "pe/tables-epoch-000000.npy", "pe/tables-epoch-000001.npy", "pe/tables-epoch-000002.npy",
        "probes/pe_norm.json", "probes/pe_norm-norms.npy", "probes/pe_norm-epochs.npy"}) {
    EXPECT_TRUE(fs::is_regular_file(dir + "/" + file)) << file;
  }
  // Every PE parameter is snapshotted beside the table (here the table is the parameter), and
  // read back by name.
  const torch::Tensor parameter = read_npy(dir + "/pe/param-table-epoch-000002.npy");
  EXPECT_TRUE(torch::equal(parameter, read_npy(dir + "/pe/tables-epoch-000002.npy")));
  const auto snapshots = RunFolder(dir).read_snapshots();
  ASSERT_EQ(snapshots.size(), 3u);
  ASSERT_EQ(snapshots.back().tensors.count("table"), 1u);
  EXPECT_TRUE(torch::equal(snapshots.back().tensors.at("table"), parameter));
  EXPECT_EQ(*RunFolder(dir).read_summary()->snapshot_files, 6);
  // Every file was renamed into place: no temporary is left behind.
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    EXPECT_THAT(entry.path().filename().string(), ::testing::Not(HasSubstr(".tmp.")));
  }

  EXPECT_EQ(read_file(dir + "/config.toml"), config().to_toml());

  const std::string metrics = read_file(dir + "/metrics.csv");
  EXPECT_THAT(metrics, StartsWith("epoch,split,group,metric,value\n"));
  EXPECT_THAT(metrics, HasSubstr("\n0,test,all,accuracy,"));
  EXPECT_THAT(metrics, HasSubstr("\n1,train_epoch,all,loss,"));
  EXPECT_THAT(metrics, HasSubstr("\n2,test,second_half,loss,"));
  EXPECT_THAT(metrics, HasSubstr("\n2,train_epoch,all,lr,0.01\n"));
  // 3 evaluations x 2 splits x 3 groups x 2 metrics, 2 x (training loss, lr), the header.
  EXPECT_EQ(std::count(metrics.begin(), metrics.end(), '\n'), 3 * 2 * 3 * 2 + 2 * 2 + 1);

  const json summary = json::parse(read_file(dir + "/summary.json"));
  EXPECT_EQ(summary["status"], "finished");
  EXPECT_EQ(summary["experiment"], "tiny");
  EXPECT_EQ(summary["seed"], 3);
  EXPECT_EQ(summary["epochs"], 2);
  EXPECT_EQ(summary["threads"], 1);
  // train.flush_subnormals is on by default; the record says what the CPU did.
  const bool can_flush = set_flush_subnormals(true);
  EXPECT_EQ(summary["compute"]["subnormals"], can_flush ? "flushed" : "gradual");
  EXPECT_EQ(summary["torch_version"], TORCH_VERSION);
  // Every plugin that built and probed it, nested ones too, with the version its library declares.
  EXPECT_EQ(
      summary["plugins"],
      json({{"task/marker_position",
             registry_.get(PluginKind::kTask, "marker_position").info->version},
            {"pe/learned", registry_.get(PluginKind::kPositionalEncoding, "learned").info->version},
            {"init/normal", registry_.get(PluginKind::kInitializer, "normal").info->version},
            {"probe/pe_norm", registry_.get(PluginKind::kProbe, "pe_norm").info->version}}));
  EXPECT_EQ(RunFolder(dir).read_summary()->plugins.at("init/normal"), "1.0.0");
  ASSERT_TRUE(summary["final"].contains("test/all/accuracy"));
  EXPECT_EQ(summary["final"]["test/all/accuracy"].get<double>(),
            outcome.final_metrics.at("test/all/accuracy"));
  EXPECT_FALSE(outcome.final_metrics.count("train_epoch/all/loss"));
  EXPECT_TRUE(outcome.final_metrics.count("train/first_half/loss"));

  // One block, one PE: [1, tokens, d_model] tables, the first being the initialisation.
  const torch::Tensor initial = read_npy(dir + "/pe/tables-epoch-000000.npy");
  ASSERT_EQ(initial.sizes(), (std::vector<std::int64_t>{1, 6, 8}));
  EXPECT_NEAR(initial.std().item<double>(), 0.2, 0.08);
  const torch::Tensor last = read_npy(dir + "/pe/tables-epoch-000002.npy");
  EXPECT_FALSE(torch::equal(initial, last));  // training moved it

  const json probe = json::parse(read_file(dir + "/probes/pe_norm.json"));
  EXPECT_EQ(probe["probe"], "pe_norm");
  EXPECT_EQ(probe["epoch"], 2);
  EXPECT_NEAR(probe["scalars"]["norm_initial"].get<double>(),
              initial.to(torch::kFloat64).norm().item<double>(), 1e-9);
  EXPECT_NEAR(probe["scalars"]["norm_final"].get<double>(),
              last.to(torch::kFloat64).norm().item<double>(), 1e-9);
  EXPECT_EQ(probe["arrays"],
            json::array({"probes/pe_norm-epochs.npy", "probes/pe_norm-norms.npy"}));
  EXPECT_EQ(read_npy(dir + "/probes/pe_norm-norms.npy").sizes(), (std::vector<std::int64_t>{3, 1}));
  EXPECT_EQ(summary["probes"]["pe_norm"]["norm_initial"], probe["scalars"]["norm_initial"]);
}

TEST_F(RunTest, SameManifestAndSeedGiveIdenticalBytes) {
  ScratchDir a, b;
  const std::string dir_a = run(a.path()).dir;
  const std::string dir_b = run(b.path()).dir;
  for (const char* file : {"metrics.csv", "config.toml", "pe/tables-epoch-000002.npy",
                           "probes/pe_norm.json", "probes/pe_norm-norms.npy"}) {
    EXPECT_EQ(slurp(dir_a + "/" + file), slurp(dir_b + "/" + file)) << file;
  }
  // And another seed gives another run.
  ScratchDir c;
  const std::string dir_c = run(c.path(), {"experiment.seeds=[4]"}).dir;
  EXPECT_EQ(dir_c, c / "tiny/default/seed-4");
  EXPECT_NE(slurp(dir_a + "/metrics.csv"), slurp(dir_c + "/metrics.csv"));
}

TEST_F(RunTest, FinishedRunIsSkipped) {
  ScratchDir root;
  const RunOutcome first = run(root.path());
  const std::string metrics = slurp(first.dir + "/metrics.csv");
  const auto written = fs::last_write_time(first.dir + "/metrics.csv");
  fs::remove(first.dir + "/checkpoint.pt");  // a skipped run needs nothing but its summary

  const RunOutcome second = run(root.path());
  EXPECT_TRUE(second.skipped);
  // The host execution keys are not the configuration: the run is done whatever they say now.
  EXPECT_TRUE(run(root.path(), {"train.threads=2", "train.flush_subnormals=false"}).skipped);
  EXPECT_EQ(second.dir, first.dir);
  EXPECT_EQ(second.final_metrics, first.final_metrics);
  EXPECT_EQ(slurp(first.dir + "/metrics.csv"), metrics);
  EXPECT_EQ(fs::last_write_time(first.dir + "/metrics.csv"), written);
  EXPECT_FALSE(fs::exists(first.dir + "/checkpoint.pt"));

  // --force runs it again, from scratch, to the same result.
  const RunOutcome forced = run(root.path(), {}, /*force=*/true);
  EXPECT_FALSE(forced.skipped);
  EXPECT_EQ(slurp(first.dir + "/metrics.csv"), metrics);
}

// --reuse: a finished run of the same configuration and seed, in another experiment's folder, is
// copied rather than trained again; its copy names its own experiment and where it came from.
TEST_F(RunTest, ReuseCopiesAFinishedRunOfTheSameConfigurationAndSeed) {
  ScratchDir root;
  const RunOutcome first = run(root.path());
  RunOptions options;
  options.reuse_from = {root.path()};
  // The description and the host execution keys change no result; the experiment's name only its
  // folder.
  const RunConfig other =
      config({"experiment.name=\"other\"", "experiment.description=\"another sweep\"",
              "train.threads=2", "train.flush_subnormals=false"});
  const RunOutcome copied = execute_run(other, registry_, root.path(), options);
  EXPECT_TRUE(copied.skipped);
  EXPECT_EQ(copied.reused_from, first.dir);
  EXPECT_EQ(copied.dir, root / "other/default/seed-3");
  EXPECT_EQ(copied.final_metrics, first.final_metrics);
  for (const char* file : {"metrics.csv", "checkpoint.pt", "pe/tables-epoch-000002.npy",
                           "probes/pe_norm.json", "probes/pe_norm-norms.npy"}) {
    EXPECT_EQ(slurp(copied.dir + "/" + file), slurp(first.dir + "/" + file)) << file;
  }
  const json summary = json::parse(slurp(copied.dir + "/summary.json"));
  EXPECT_EQ(summary["experiment"], "other");
  EXPECT_EQ(summary["reused_from"], first.dir);
  EXPECT_EQ(summary["final"], json::parse(slurp(first.dir + "/summary.json"))["final"]);
  EXPECT_FALSE(json::parse(slurp(first.dir + "/summary.json")).contains("reused_from"));
  EXPECT_THAT(slurp(copied.dir + "/config.toml"), HasSubstr("name = \"other\""));
  EXPECT_THAT(slurp(copied.dir + "/run.log"), HasSubstr("reused from " + first.dir));
  EXPECT_EQ(RunFolder(copied.dir).read_summary()->reused_from, first.dir);

  // Once copied, it is a finished run like any other.
  const RunOutcome again = execute_run(other, registry_, root.path());
  EXPECT_TRUE(again.skipped);
  EXPECT_TRUE(again.reused_from.empty());
}

TEST_F(RunTest, ReuseNeedsTheSameConfigurationAndSeed) {
  ScratchDir root;
  const RunOutcome first = run(root.path());
  RunOptions options;
  options.reuse_from = {root / "tiny"};  // an experiment's folder does as well as a root
  for (const std::vector<std::string>& change :
       {std::vector<std::string>{"train.lr=0.02"}, std::vector<std::string>{"experiment.seeds=[4]"},
        std::vector<std::string>{"pe.init.std=0.3"}}) {
    std::vector<std::string> overrides = change;
    overrides.push_back("experiment.name=\"other\"");
    const RunOutcome outcome = execute_run(config(overrides), registry_, root.path(), options);
    EXPECT_FALSE(outcome.skipped) << change.front();
    EXPECT_TRUE(outcome.reused_from.empty()) << change.front();
    EXPECT_EQ(RunFolder(outcome.dir).read_summary()->reused_from, "") << change.front();
    fs::remove_all(root / "other");
  }
  const std::string summary_path = first.dir + "/summary.json";
  const std::string finished = slurp(summary_path);
  // Where the same run of another experiment is copied from, with `first`'s summary edited.
  std::string not_reused;
  const auto reused_from_with = [&](const std::function<void(json&)>& edit) {
    json summary = json::parse(finished);
    edit(summary);
    std::ofstream(summary_path) << summary.dump();
    const RunOutcome outcome =
        execute_run(config({"experiment.name=\"other\""}), registry_, root.path(), options);
    fs::remove_all(root / "other");
    not_reused = outcome.not_reused;
    return outcome.reused_from;
  };
  // Nor is a run trained by another LibTorch,
  EXPECT_EQ(reused_from_with([](json& s) { s["torch_version"] = "0.0.1"; }), "");
  EXPECT_THAT(not_reused, HasSubstr("trained with LibTorch 0.0.1, this pelab has"));
  // nor one made by another version of a plugin, which may compute otherwise.
  EXPECT_EQ(reused_from_with([](json& s) { s["plugins"]["init/normal"] = "0.9.0"; }), "");
  EXPECT_THAT(not_reused, HasSubstr("other versions of its task's or PE's plugins"));
  // A summary from before pelab recorded its plugins is compared by its configuration alone.
  EXPECT_EQ(reused_from_with([](json& s) { s.erase("plugins"); }), first.dir);
  // A failed run is no source.
  json failed = json::parse(finished);
  failed["status"] = "failed";
  failed["epoch"] = 1;
  failed["error"] = "stopped";
  std::ofstream(summary_path) << failed.dump();
  const RunOutcome retrained =
      execute_run(config({"experiment.name=\"other\""}), registry_, root.path(), options);
  EXPECT_TRUE(retrained.reused_from.empty());
  EXPECT_FALSE(retrained.skipped);
}

// The probes run on the trained model and change nothing of it: a run probed otherwise is the
// same training, copied, and probed again as the new configuration asks.
TEST_F(RunTest, ReuseProbesAgainARunProbedOtherwise) {
  ScratchDir root;
  const RunOutcome first = run(root.path());
  RunOptions options;
  options.reuse_from = {root.path()};
  std::string text = kTiny;
  const std::string pe_norm = "plugin = \"pe_norm\"";
  text.replace(text.find(pe_norm), pe_norm.size(),
               "plugin = \"movement\"\n\n[[probe]]\nplugin = \"pe_norm\"");
  const RunConfig other =
      Manifest::from_string(text, "other.toml", registry_, {"experiment.name=\"other\""})
          .runs()
          .front();
  const RunOutcome copied = execute_run(other, registry_, root.path(), options);
  EXPECT_TRUE(copied.skipped);
  EXPECT_EQ(copied.reused_from, first.dir);
  EXPECT_TRUE(copied.probed_again);
  EXPECT_EQ(slurp(copied.dir + "/metrics.csv"), slurp(first.dir + "/metrics.csv"));
  EXPECT_TRUE(fs::is_regular_file(copied.dir + "/probes/movement.json"));
  const json summary = json::parse(slurp(copied.dir + "/summary.json"));
  EXPECT_TRUE(summary["probes"].contains("movement"));
  EXPECT_TRUE(summary["probes"].contains("pe_norm"));
  EXPECT_TRUE(summary["plugins"].contains("probe/movement"));
  // Both ran on the copy (pe_norm too: the same computation, the same values).
  EXPECT_EQ(summary["probes"]["pe_norm"],
            json::parse(slurp(first.dir + "/summary.json"))["probes"]["pe_norm"]);
  EXPECT_THAT(slurp(copied.dir + "/config.toml"), HasSubstr("movement"));
  EXPECT_THAT(slurp(copied.dir + "/run.log"),
              HasSubstr("probed again on the copy, as this run's configuration asks: movement, "
                        "pe_norm"));
  // The source is left as it was.
  EXPECT_FALSE(fs::exists(first.dir + "/probes/movement.json"));

  // A copy probed as its source was is copied whole, its probe records included.
  fs::remove_all(root / "other");
  const RunOutcome plain =
      execute_run(config({"experiment.name=\"other\""}), registry_, root.path(), options);
  EXPECT_EQ(plain.reused_from, first.dir);
  EXPECT_FALSE(plain.probed_again);
  EXPECT_EQ(slurp(plain.dir + "/probes/pe_norm.json"), slurp(first.dir + "/probes/pe_norm.json"));
  EXPECT_THAT(slurp(plain.dir + "/run.log"), Not(HasSubstr("probed again")));

  // A probe plugin at another version changes no training: the run is copied and probed again.
  fs::remove_all(root / "other");
  json edited = json::parse(slurp(first.dir + "/summary.json"));
  edited["plugins"]["probe/pe_norm"] = "0.0.1";
  std::ofstream(first.dir + "/summary.json") << edited.dump();
  const RunOutcome reprobed =
      execute_run(config({"experiment.name=\"other\""}), registry_, root.path(), options);
  EXPECT_EQ(reprobed.reused_from, first.dir);
  EXPECT_THAT(slurp(reprobed.dir + "/run.log"), HasSubstr("configuration asks: pe_norm"));
  EXPECT_NE(json::parse(slurp(reprobed.dir + "/summary.json"))["plugins"]["probe/pe_norm"],
            "0.0.1");
}

// A run that matches but is not whole is not copied (it was, with a warning, and exit 0): one
// whose snapshots are gone, or whose metrics.csv is cut short.
TEST_F(RunTest, ReuseCopiesOnlyAWholeRun) {
  ScratchDir root;
  const RunOutcome first = run(root.path());
  const RunFolder source(first.dir);
  ASSERT_TRUE(source.read_summary()->snapshot_files.has_value());
  EXPECT_EQ(source.why_not_whole(*source.read_summary(), 1), "");
  RunOptions options;
  options.reuse_from = {root.path()};
  std::string not_reused, logged;
  const auto reused_from = [&] {
    const RunOutcome outcome =
        execute_run(config({"experiment.name=\"other\""}), registry_, root.path(), options);
    not_reused = outcome.not_reused;
    logged = slurp(outcome.dir + "/run.log");
    fs::remove_all(root / "other");
    return outcome.reused_from;
  };
  EXPECT_EQ(reused_from(), first.dir);
  EXPECT_EQ(not_reused, "");

  const std::string snapshot = first.dir + "/pe/tables-epoch-000002.npy";
  const std::string kept = slurp(snapshot);
  fs::remove(snapshot);
  EXPECT_THAT(source.why_not_whole(*source.read_summary(), 1),
              HasSubstr("holds 5 snapshot file(s) where the run wrote 6"));
  EXPECT_EQ(reused_from(), "");
  // The run passed over, and why, are said: an archive's records look like this one.
  EXPECT_EQ(not_reused, first.dir + ": its pe/ holds 5 snapshot file(s) where the run wrote 6");
  EXPECT_THAT(logged, HasSubstr("not reused, trained here: " + not_reused));
  std::ofstream(snapshot) << kept;

  const std::string metrics = slurp(first.dir + "/metrics.csv");
  std::ofstream(first.dir + "/metrics.csv") << metrics.substr(0, metrics.size() - 2);
  EXPECT_THAT(source.why_not_whole(*source.read_summary(), 1), HasSubstr("cut short"));
  EXPECT_EQ(reused_from(), "");
}

TEST_F(RunTest, ReuseFromAMissingFolderSaysSo) {
  ScratchDir root;
  RunOptions options;
  options.reuse_from = {root / "nowhere"};
  try {
    execute_run(config(), registry_, root.path(), options);
    FAIL() << "a missing --reuse folder must be an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("--reuse " + (root / "nowhere") + ": no such folder"));
  }
}

// A run written before a key existed (here: train.precision) matches the same manifest today:
// the absent key takes its default. A key set away from its default is still a difference.
TEST_F(RunTest, KeysAddedSinceARunWereWrittenTakeTheirDefaults) {
  ScratchDir root;
  const RunOutcome first = run(root.path());
  const std::string path = first.dir + "/config.toml";
  std::string stored = slurp(path);
  const std::string line = "precision = \"fp32\"\n";
  ASSERT_NE(stored.find(line), std::string::npos) << stored;
  stored.erase(stored.find(line), line.size());
  std::ofstream(path) << stored;

  EXPECT_TRUE(run(root.path()).skipped);
  EXPECT_TRUE(run(root.path(), {"experiment.description=\"edited\""}).skipped);
  try {
    run(root.path(), {"train.precision=\"bf16\""});
    FAIL() << "a bf16 run cannot reuse an fp32 run's folder";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("train.precision: \"fp32\" -> \"bf16\""));
  }
}

TEST_F(RunTest, ResumedRunEqualsAStraightOne) {
  // A: 4 epochs in one go. B: 2 epochs, then (as if interrupted) continued to 4 from its
  // checkpoint. The checkpoint holds model, optimiser, epoch and RNG state, so B must end exactly
  // where A did.
  ScratchDir a, b;
  const std::string dir_a = run(a.path(), {"train.epochs=4"}).dir;
  const std::string dir_b = run(b.path(), {"train.epochs=2"}).dir;
  ASSERT_EQ(fs::path(dir_a).lexically_relative(a.path()),
            fs::path(dir_b).lexically_relative(b.path()));
  EXPECT_FALSE(fs::exists(dir_b + "/pe/tables-epoch-000003.npy"));
  fs::remove(dir_b + "/summary.json");  // unfinished: it will resume, not skip

  const RunOutcome resumed = run(b.path(), {"train.epochs=4"});
  EXPECT_FALSE(resumed.skipped);
  EXPECT_THAT(slurp(dir_b + "/run.log"), HasSubstr("resumed from the checkpoint of epoch 2"));
  for (const char* file :
       {"metrics.csv", "config.toml", "pe/tables-epoch-000003.npy", "pe/tables-epoch-000004.npy",
        "probes/pe_norm.json", "probes/pe_norm-norms.npy"}) {
    EXPECT_EQ(slurp(dir_a + "/" + file), slurp(dir_b + "/" + file)) << file;
  }
}

// Refused when the run is built, so `pelab validate` (which builds each point) refuses it too.
TEST_F(RunTest, CudaDeviceIsRefusedOnThisBuild) {
  if (torch::cuda::device_count() > 0) GTEST_SKIP() << "this LibTorch has a GPU to train on";
  ScratchDir root;
  try {
    run(root.path(), {"train.device=\"cuda\""});
    FAIL() << "the run started";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("train.device = \"cuda\": this pelab's LibTorch"));
    EXPECT_THAT(e.what(), HasSubstr("has no usable CUDA"));
    // The advice depends on the LibTorch: a CUDA one (the current PyTorch's wheel) only lacks a
    // GPU; Debian's is built without CUDA, and the way out is another build.
    void* cuda_part = ::dlopen("libtorch_cuda.so", RTLD_LAZY | RTLD_NOLOAD);
    if (cuda_part != nullptr) {
      ::dlclose(cuda_part);
      EXPECT_THAT(e.what(), HasSubstr("it is built with CUDA but sees no GPU"));
    } else {
      EXPECT_THAT(e.what(), HasSubstr("it was built without CUDA"));
      EXPECT_THAT(e.what(), HasSubstr("-DCMAKE_PREFIX_PATH=/path/to/libtorch"));
    }
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line";
  }
  EXPECT_THROW(build_run(config({"train.device=\"cuda:1\""}), registry_, WithTrainer::kNo), Error);
}

TEST_F(RunTest, ADeviceThatIsNoneIsNamed) {
  for (const std::string device : {"tpu", "cuda:x", "CPU:0:1", ""}) {
    try {
      build_run(config({"train.device=\"" + device + "\""}), registry_, WithTrainer::kNo);
      FAIL() << device << " was accepted";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("train.device = \"" + device +
                                      "\": expected \"cpu\", \"cuda\" or \"cuda:N\""));
    }
  }
}

TEST_F(RunTest, ALibTorchErrorFailsTheRunWithoutABacktrace) {
  ScratchDir root;
  try {
    run(root.path(), {"train.lr=1e38"});  // finite, but no float: AdamW's step refuses it
    FAIL() << "the run finished";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("failed in epoch 1: LibTorch stopped the training: value "
                                    "cannot be converted to type float without overflow"));
    EXPECT_THAT(e.what(), HasSubstr("the run's PE: learned { init = { plugin = \"normal\""));
    EXPECT_THAT(e.what(), ::testing::Not(HasSubstr("Exception raised from")));
  }
  const json summary = json::parse(slurp(root / "tiny/default/seed-3/summary.json"));
  EXPECT_EQ(summary["status"], "failed");
  EXPECT_EQ(summary["epoch"], 1);
  EXPECT_THAT(summary["error"].get<std::string>(), StartsWith("LibTorch stopped the training"));
}

}  // namespace
}  // namespace pelab
