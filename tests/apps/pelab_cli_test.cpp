// The `pelab` program as a user runs it: exit codes and what it prints.

#include <cstdio>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <boost/filesystem.hpp>

#include "pelab/host/blas_kernel.h"
#include "pelab/host/host_info.h"
#include "pelab/plugins/plugin.h"
#include "pelab_process.h"
#include "test_support.h"

namespace pelab {
namespace {

using ::pelab::test::fixture_manifest;
using ::pelab::test::fixture_plugin_dir;
using ::pelab::test::ScratchDir;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

namespace fs = boost::filesystem;

using ::pelab::test::pelab;
using ::pelab::test::quoted;
using ::pelab::test::Result;

const std::string kSmoke =
    std::string(PELAB_SOURCE_DIR) + "/tasks/marker_position/experiments/smoke.toml";

TEST(PelabCli, Help) {
  const Result result = pelab("--help");
  EXPECT_EQ(result.exit_code, 0) << result.out;
  for (const char* word : {"plugins", "describe", "validate", "run", "--plugin-path"}) {
    EXPECT_THAT(result.out, HasSubstr(word));
  }
  EXPECT_EQ(pelab("run --help").exit_code, 0);
}

TEST(PelabCli, Version) {
  const Result result = pelab("--version");
  EXPECT_EQ(result.exit_code, 0) << result.out;
  EXPECT_THAT(result.out, HasSubstr(fmt::format("plugin API {}", kPluginApiVersion)));
  EXPECT_THAT(result.out, HasSubstr(std::string("LibTorch ") + TORCH_VERSION));
}

// The version names what this host computes with, the BLAS kernel first.
TEST(PelabCli, VersionNamesTheHost) {
  const Result result = pelab("--version");
  EXPECT_EQ(result.exit_code, 0) << result.out;
  const BlasInfo blas = blas_info();
  EXPECT_THAT(result.out, HasSubstr(blas.is_openblas ? "kernel " + blas.kernel : blas.text()));
  for (const char* subject : {"cpu:", "blas:", "aten:", "bf16:"})
    EXPECT_THAT(result.out, HasSubstr(subject));
}

// `pelab doctor` runs on the kernel pelab chooses: this process's own (a test never re-executes)
// where OpenBLAS's detection fits the CPU or someone set OPENBLAS_CORETYPE, the better one where
// OpenBLAS fell back, re-executed and checked against the reference.
TEST(PelabCli, DoctorRunsOnTheBestKernelAndChecksIt) {
  const BlasInfo own = blas_info();
  const Result result = pelab("doctor", "2>/dev/null");
  EXPECT_EQ(result.exit_code, 0) << result.out;
  EXPECT_THAT(result.out, HasSubstr("check: sgemm against a double-precision reference: agrees"));
  EXPECT_THAT(result.out, ContainsRegex("fp32 [0-9]+ GFLOP/s, bf16 [0-9]+ GFLOP/s"));
  if (!own.is_openblas) {  // a LibTorch with MKL linked in: nothing to choose
    EXPECT_THAT(result.out, HasSubstr("blas:  " + own.text()));
    EXPECT_THAT(result.out, Not(HasSubstr("pelab's choice")));
    return;
  }
  const auto better = better_blas_kernel(cpu_features(), own.kernel);
  if (own.choice == BlasKernelChoice::kDetected && better) {
    EXPECT_THAT(result.out, HasSubstr(fmt::format("kernel {} (pelab's choice: OpenBLAS chose {})",
                                                  *better, own.kernel)));
    EXPECT_THAT(pelab("doctor", "2>&1 >/dev/null").out,
                HasSubstr(fmt::format("pelab uses its {} kernel", *better)));
  } else {
    EXPECT_THAT(result.out, HasSubstr("kernel " + own.kernel + " ("));
    EXPECT_THAT(result.out, Not(HasSubstr("pelab's choice")));
  }
  // The switch keeps OpenBLAS's own choice; a value it does not know is refused, saying which.
  const Result keep = [] {
    setenv("PELAB_BLAS_KERNEL", "keep", 1);
    Result r = pelab("doctor");
    unsetenv("PELAB_BLAS_KERNEL");
    return r;
  }();
  EXPECT_EQ(keep.exit_code, 0) << keep.out;
  EXPECT_THAT(keep.out, HasSubstr("kernel " + own.kernel + " ("));
  EXPECT_THAT(keep.out, Not(HasSubstr("pelab's choice")));
  setenv("PELAB_BLAS_KERNEL", "fastest", 1);
  const Result bad = pelab("doctor");
  unsetenv("PELAB_BLAS_KERNEL");
  EXPECT_EQ(bad.exit_code, 1) << bad.out;
  EXPECT_THAT(bad.out, HasSubstr("PELAB_BLAS_KERNEL=fastest: use keep"));
}

// `pelab slurm` refuses a value that would start a line of shell in its scripts, and writes none.
TEST(PelabCli, SlurmRefusesANewlineInAScriptValue) {
  ScratchDir out;
  const Result result = pelab("slurm " + quoted(kSmoke) + " --dry-run --out " + quoted(out.path()) +
                              " '--sbatch-option=--comment=a\ntouch /tmp/x'");
  EXPECT_EQ(result.exit_code, 1) << result.out;
  EXPECT_THAT(result.out, HasSubstr("--sbatch-option '--comment=a\\ntouch /tmp/x': a control "
                                    "character"));
  EXPECT_THAT(result.out, Not(HasSubstr("#SBATCH")));
}

// The scripts' hint for re-submitting the failed runs keeps the overrides, which name the
// experiment: without them it would resubmit another experiment's runs.
TEST(PelabCli, SlurmScriptsHintTheResubmitWithTheOverrides) {
  ScratchDir out;
  const Result result = pelab("slurm " + quoted(kSmoke) + " --dry-run --out " + quoted(out.path()) +
                              " --set experiment.name=smoke-two --set train.epochs=3");
  EXPECT_EQ(result.exit_code, 0) << result.out;
  EXPECT_THAT(result.out,
              HasSubstr("#   pelab slurm " + kSmoke + " --out " + out.path() +
                        " --set experiment.name=smoke-two --set train.epochs=3 --resubmit-failed"));
}

// The array tasks look for identical runs where the submitting command was told to, by an
// absolute path: they may start in another working directory.
TEST(PelabCli, SlurmScriptsPassReuseOnAsAnAbsolutePath) {
  ScratchDir out;
  const std::string relative = fs::relative(out.path(), fs::current_path()).string();
  ASSERT_FALSE(fs::path(relative).is_absolute());
  const Result result = pelab("slurm " + quoted(kSmoke) + " --dry-run --out " +
                              quoted(out / "runs") + " --reuse " + quoted(relative));
  EXPECT_EQ(result.exit_code, 0) << result.out;
  const std::size_t at = result.out.find(" --reuse ");
  ASSERT_NE(at, std::string::npos) << result.out;
  const std::size_t start = at + std::string(" --reuse ").size();
  std::string given = result.out.substr(start, result.out.find_first_of(" \n", start) - start);
  if (!given.empty() && given.front() == '\'') given = given.substr(1, given.size() - 2);
  EXPECT_TRUE(fs::path(given).is_absolute()) << given;
  EXPECT_TRUE(fs::equivalent(given, out.path())) << given;
}

// A command line pelab cannot parse is a usage error: exit status 2, "error: ..." on stderr with
// the closest valid name when one is close, and where the help is; not the whole help.
TEST(PelabCli, NoCommandIsAUsageError) {
  const Result result = pelab("", "2>&1 >/dev/null");
  EXPECT_EQ(result.exit_code, 2) << result.out;
  EXPECT_THAT(result.out, HasSubstr("Subcommands:"));  // the help, on stderr
  EXPECT_THAT(result.out, HasSubstr("\nerror: no command given\n"));
}

TEST(PelabCli, AnUnknownCommandSuggestsTheClosest) {
  const Result result = pelab("reprot", "2>&1 >/dev/null");
  EXPECT_EQ(result.exit_code, 2) << result.out;
  EXPECT_EQ(result.out,
            "error: unknown command 'reprot'; did you mean 'report'?\n"
            "run 'pelab --help' for the commands\n");

  const Result far = pelab("frobnicate", "2>&1 >/dev/null");
  EXPECT_EQ(far.exit_code, 2) << far.out;
  EXPECT_EQ(far.out, "error: unknown command 'frobnicate'\nrun 'pelab --help' for the commands\n");
}

TEST(PelabCli, AnUnknownOptionSuggestsTheClosestOfItsCommand) {
  const Result result = pelab("report --otu runs/x", "2>&1 >/dev/null");
  EXPECT_EQ(result.exit_code, 2) << result.out;
  EXPECT_EQ(result.out,
            "error: unknown option '--otu' for 'pelab report'; did you mean '--out'?\n"
            "run 'pelab report --help' for its usage\n");

  const Result far = pelab("run " + quoted(kSmoke) + " --frobnicate", "2>&1 >/dev/null");
  EXPECT_EQ(far.exit_code, 2) << far.out;
  EXPECT_THAT(far.out, StartsWith("error: unknown option '--frobnicate' for 'pelab run'\n"));
  // pelab's own options are pelab's, before the command.
  const Result global = pelab("--plugin-pth /tmp plugins", "2>&1 >/dev/null");
  EXPECT_EQ(global.exit_code, 2) << global.out;
  EXPECT_THAT(global.out, StartsWith("error: unknown option '--plugin-pth' for 'pelab'; did you "
                                     "mean '--plugin-path'?\n"));
}

TEST(PelabCli, EveryUsageErrorSaysErrorAndExitsTwo) {
  const Result range = pelab("run " + quoted(kSmoke) + " --nproc-per-node 0", "2>&1 >/dev/null");
  EXPECT_EQ(range.exit_code, 2) << range.out;
  EXPECT_EQ(range.out,
            "error: --nproc-per-node: Value 0 not in range 1 to 1024\n"
            "run 'pelab run --help' for its usage\n");

  const Result missing = pelab("validate", "2>&1 >/dev/null");
  EXPECT_EQ(missing.exit_code, 2) << missing.out;
  EXPECT_EQ(missing.out,
            "error: manifest is required\nrun 'pelab validate --help' for its usage\n");

  const Result excess = pelab("status a b", "2>&1 >/dev/null");
  EXPECT_EQ(excess.exit_code, 2) << excess.out;
  EXPECT_THAT(excess.out, StartsWith("error: unexpected argument 'b' for 'pelab status'\n"));

  const Result no_value = pelab("validate " + quoted(kSmoke) + " --set", "2>&1 >/dev/null");
  EXPECT_EQ(no_value.exit_code, 2) << no_value.out;
  EXPECT_THAT(no_value.out, StartsWith("error: --set"));
  EXPECT_THAT(no_value.out, HasSubstr("\nrun 'pelab validate --help' for its usage\n"));

  // The help and the version are no errors.
  const Result help = pelab("status --help", "2>/dev/null");
  EXPECT_EQ(help.exit_code, 0) << help.out;
  EXPECT_THAT(help.out, HasSubstr("dir TEXT REQUIRED"));
}

TEST(PelabCli, APluginPathThatIsNoFolderIsAUsageError) {
  for (const std::string& path :
       {std::string("/nonexistent"), std::string(PELAB_SOURCE_DIR) + "/README.md"}) {
    const Result result = pelab("--plugin-path " + path + " plugins");
    EXPECT_EQ(result.exit_code, 2) << path;
    EXPECT_THAT(result.out, HasSubstr("error: --plugin-path: Directory")) << path;
  }
}

TEST(PelabCli, PluginsListsTheFourKinds) {
  const Result result = pelab("plugins");
  EXPECT_EQ(result.exit_code, 0) << result.out;
  EXPECT_THAT(result.out, ContainsRegex("\npe +learned +1\\.0\\.0 "));
  EXPECT_THAT(result.out, ContainsRegex("\npe +none "));
  EXPECT_THAT(result.out, ContainsRegex("\ninit +normal "));
  EXPECT_THAT(result.out, ContainsRegex("\ntask +marker_position "));
  EXPECT_THAT(result.out, ContainsRegex("\nprobe +pe_norm "));
  // The fixtures are built elsewhere: the plugin folder holds only working plugins.
  EXPECT_THAT(result.out, Not(HasSubstr("warning:")));
  EXPECT_THAT(result.out, Not(HasSubstr("wrong_api")));
  EXPECT_THAT(result.out, HasSubstr("search path: "));
}

TEST(PelabCli, PluginsOfOneKind) {
  const Result result = pelab("plugins --kind init");
  EXPECT_EQ(result.exit_code, 0) << result.out;
  EXPECT_THAT(result.out, HasSubstr("normal"));
  EXPECT_THAT(result.out, Not(HasSubstr("learned")));

  const Result wrong = pelab("plugins --kind colour", "2>&1 >/dev/null");
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_THAT(wrong.out, StartsWith("error: --kind 'colour' is not a plugin kind"));
}

TEST(PelabCli, PluginsWarnsAboutBrokenFilesOnThePath) {
  const Result result = pelab("--plugin-path " + quoted(fixture_plugin_dir()) + " plugins");
  EXPECT_EQ(result.exit_code, 0) << result.out;
  EXPECT_THAT(result.out, HasSubstr("warning: "));
  EXPECT_THAT(result.out, HasSubstr("version 999"));
  EXPECT_THAT(result.out, HasSubstr("libpelab_pe_not_a_library.so"));
  EXPECT_THAT(result.out, ContainsRegex("\npe +learned "));  // the good ones still listed
}

TEST(PelabCli, DescribeAPlugin) {
  const Result result = pelab("describe learned");
  EXPECT_EQ(result.exit_code, 0) << result.out;
  EXPECT_THAT(result.out, StartsWith("positional encoding learned 1.0.0"));
  EXPECT_THAT(result.out, ContainsRegex("\n  init +initializer plugin"));
  EXPECT_THAT(result.out, HasSubstr("{ plugin = \"normal\" }"));
}

TEST(PelabCli, DescribeACoreSection) {
  const Result result = pelab("describe model");
  EXPECT_EQ(result.exit_code, 0) << result.out;
  EXPECT_THAT(result.out, StartsWith("[model] (core section)"));
  EXPECT_THAT(result.out, ContainsRegex("\n  layers +int in \\[1, 256\\] +default 4"));
}

TEST(PelabCli, DescribeSuggestsTheClosestName) {
  const Result result = pelab("describe lerned", "2>&1 >/dev/null");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.out, HasSubstr("error: no plugin named 'lerned'; did you mean 'learned'?"));
}

TEST(PelabCli, ValidateAGoodManifest) {
  const Result result = pelab("validate " + quoted(kSmoke));
  EXPECT_EQ(result.exit_code, 0) << result.out;
  EXPECT_THAT(result.out,
              HasSubstr("valid. experiment 'marker-smoke': 1 point(s) x seeds = 1 run(s)"));
}

TEST(PelabCli, ValidateABadManifestPrintsWhereAndExitsOne) {
  const std::string path = fixture_manifest("misspelt_key.toml");
  const Result result = pelab("validate " + quoted(path), "2>&1 >/dev/null");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.out, StartsWith("error: " + path + ":10:29: unknown key 'sdt'"));
  EXPECT_THAT(result.out, HasSubstr("did you mean 'std'?"));
  EXPECT_THAT(result.out, Not(HasSubstr("internal error")));
}

TEST(PelabCli, ValidateWithOverrides) {
  const Result sweep = pelab("validate " + quoted(kSmoke) + " --set 'experiment.seeds=[1, 2, 3]'");
  EXPECT_EQ(sweep.exit_code, 0) << sweep.out;
  EXPECT_THAT(sweep.out, HasSubstr("= 3 run(s)"));
  // The points are listed by their folders, a [[sweep.point]] given by --set among them.
  const Result points = pelab("validate " + quoted(kSmoke) +
                              " --set 'sweep.model.layers=[1, 2]' --set 'sweep.point=[{ "
                              "model.d_model = 16 }]'");
  EXPECT_EQ(points.exit_code, 0) << points.out;
  EXPECT_THAT(points.out, HasSubstr("3 point(s)"));
  EXPECT_THAT(points.out, HasSubstr("\n  sweep: model.layers\n  point: model.layers=1\n  point: "
                                    "model.layers=2\n  point: model.d_model=16\n"));

  const Result bad =
      pelab("validate " + quoted(kSmoke) + " --set model.layers=0", "2>&1 >/dev/null");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.out,
              StartsWith("error: --set model.layers=0: 'layers' in [model] is 0, out of range"));
}

TEST(PelabCli, ValidateBuildsEachPointAndReportsWhatAPluginRefuses) {
  // Only the PE, built on the task's layout, knows that the simulated network hides its nodes'
  // coordinates from the model: validate builds each point, as run does.
  const std::string network =
      std::string(PELAB_SOURCE_DIR) + "/tasks/network_simulation/experiments/quick.toml";
  const Result result = pelab("validate " + quoted(network) + " --set pe=sinusoidal_nd", "2>&1");
  EXPECT_EQ(result.exit_code, 1) << result.out;
  EXPECT_THAT(result.out, StartsWith("error: sweep point task.dims=2: --set pe=sinusoidal_nd: "
                                     "positional encoding 'sinusoidal_nd': the task's coordinates "
                                     "are ground truth for probes, hidden from the model"));
  EXPECT_THAT(result.out, Not(HasSubstr("internal error")));

  const Result schemas_only =
      pelab("validate " + quoted(network) + " --set pe=sinusoidal_nd --no-build");
  EXPECT_EQ(schemas_only.exit_code, 0) << schemas_only.out;
}

TEST(PelabCli, ValidateAMissingFile) {
  const Result result = pelab("validate /nonexistent/m.toml", "2>&1 >/dev/null");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.out, HasSubstr("'/nonexistent/m.toml' does not exist"));
}

TEST(PelabCli, RunWritesTheExperimentAndSkipsFinishedRuns) {
  ScratchDir dir;
  {
    std::ofstream manifest(dir / "cli.toml");
    manifest << "[experiment]\nseeds = [1, 2]\n\n"
                "[task]\nplugin = \"marker_position\"\ntokens = 4\ntrain_samples = 32\n"
                "test_samples = 16\n\n"
                "[model]\nlayers = 1\nd_model = 8\nmlp_ratio = 1\n\n"
                "[pe]\nplugin = \"learned\"\n\n"
                "[train]\nepochs = 1\nbatch_size = 16\nthreads = 1\n\n"
                "[[probe]]\nplugin = \"pe_norm\"\n";
  }
  const std::string out = dir / "out";
  const std::string command = "run " + quoted(dir / "cli.toml") + " --quiet --out " + quoted(out);
  const Result first = pelab(command);
  ASSERT_EQ(first.exit_code, 0) << first.out;
  EXPECT_THAT(first.out, HasSubstr("experiment 'cli': 1 point(s), 2 run(s)"));
  EXPECT_THAT(first.out, HasSubstr("[2/2] default seed 2"));
  // The table is the report's: both seeds, by the PE's readable name.
  EXPECT_THAT(first.out, HasSubstr("2 finished run(s) in 1 point(s)"));
  EXPECT_THAT(first.out, ContainsRegex("\nlearned, normal std=1 +1 +2 +[0-9.]+ ± [0-9.]+ "));
  for (const char* file :
       {"cli/report.md", "cli/results.csv", "cli/default/seed-1/metrics.csv",
        "cli/default/seed-2/summary.json", "cli/default/seed-2/probes/pe_norm.json"}) {
    EXPECT_TRUE(fs::is_regular_file(out + "/" + file)) << file;
  }
  EXPECT_THAT(test::slurp(out + "/cli/results.csv"), HasSubstr("\ndefault,test/all/accuracy,"));

  const Result second = pelab(command);
  ASSERT_EQ(second.exit_code, 0) << second.out;
  EXPECT_THAT(second.out, HasSubstr("already finished"));

  // Several folders: one report, written where --out says and nowhere else.
  const std::string folders = quoted(out + "/cli") + " " + quoted(out + "/cli/default/seed-1");
  const Result no_out = pelab("report " + folders);
  EXPECT_NE(no_out.exit_code, 0);
  EXPECT_THAT(no_out.out, HasSubstr("2 folders to report on side by side, but no --out"));
  // A comparison is a pair: an unpaired name is refused, not dropped.
  const Result half_pair = pelab("report " + quoted(out + "/cli") + " --compare default");
  EXPECT_NE(half_pair.exit_code, 0);
  EXPECT_THAT(half_pair.out, HasSubstr("--compare takes two points, A and B (B - A is compared), "
                                       "and 'default' has no partner"));
  const Result combined = pelab("report " + folders + " --out " + quoted(dir / "combined"));
  ASSERT_EQ(combined.exit_code, 0) << combined.out;
  EXPECT_THAT(combined.out, HasSubstr("2 finished run(s) in 1 point(s)"));  // seed 1 counts once
  EXPECT_TRUE(fs::is_regular_file(dir / "combined/report.md"));
}

// -j runs each run in a worker process that reads a snapshot of the manifest (so that editing the
// manifest mid-sweep changes nothing); the snapshot is gone when the sweep ends. (A snapshot under
// another file name once sent the runs of an unnamed manifest to an experiment of that name.)
TEST(PelabCli, RunWithJobsStartsWorkersFromASnapshotOfTheManifest) {
  ScratchDir dir;
  {
    std::ofstream manifest(dir / "jobs.toml");
    manifest << "[experiment]\nseeds = [1, 2]\n\n"
                "[task]\nplugin = \"marker_position\"\ntokens = 4\ntrain_samples = 32\n"
                "test_samples = 16\n\n"
                "[model]\nlayers = 1\nd_model = 8\nmlp_ratio = 1\n\n"
                "[pe]\nplugin = \"learned\"\n\n"
                "[train]\nepochs = 1\nbatch_size = 16\nthreads = 1\n";
  }
  const std::string out = dir / "out";
  const Result result = pelab("run " + quoted(dir / "jobs.toml") + " -j 2 --out " + quoted(out));
  ASSERT_EQ(result.exit_code, 0) << result.out;
  EXPECT_THAT(result.out, HasSubstr("[2/2] default seed"));
  EXPECT_TRUE(fs::is_regular_file(out + "/jobs/default/seed-1/summary.json"));
  EXPECT_TRUE(fs::is_regular_file(out + "/jobs/default/seed-2/summary.json"));
  for (const auto& entry : fs::directory_iterator(out + "/jobs")) {
    EXPECT_THAT(entry.path().filename().string(), Not(StartsWith(".manifest-")));
  }
  // The manifest has no [experiment] name: the workers take it from the snapshot's file name,
  // which must be the manifest's, so every run lands in out/jobs and nowhere else.
  for (const auto& entry : fs::directory_iterator(out))
    EXPECT_EQ(entry.path().filename().string(), "jobs");
  EXPECT_THAT(result.out, HasSubstr("2 finished run(s) in 1 point(s)"));
}

// --reuse across experiments, through -j's worker processes: a second sweep that shares a point
// with a first one copies that point's runs and trains only its own.
TEST(PelabCli, RunReusesIdenticalRunsOfAnotherExperiment) {
  ScratchDir dir;
  const std::string body =
      "[task]\nplugin = \"marker_position\"\ntokens = 4\ntrain_samples = 32\n"
      "test_samples = 16\n\n"
      "[model]\nlayers = 1\nd_model = 8\nmlp_ratio = 1\n\n"
      "[pe]\nplugin = \"learned\"\n\n"
      "[train]\nepochs = 1\nbatch_size = 16\nthreads = 1\n";
  std::ofstream(dir / "first.toml") << "[experiment]\nseeds = [1]\n\n" << body;
  std::ofstream(dir / "second.toml")
      << "[experiment]\nseeds = [1]\n\n[sweep]\n\"train.batch_size\" = [16, 8]\n\n"
      << body;
  const std::string out = dir / "out";
  ASSERT_EQ(pelab("run " + quoted(dir / "first.toml") + " --quiet --out " + quoted(out)).exit_code,
            0);
  const std::string second = "run " + quoted(dir / "second.toml") + " --out " + quoted(out);
  const Result result = pelab(second + " -j 2 --reuse " + quoted(out));
  ASSERT_EQ(result.exit_code, 0) << result.out;
  EXPECT_THAT(result.out,
              HasSubstr("train.batch_size=16 seed 1: reused a finished run of the same training"));
  EXPECT_THAT(result.out, HasSubstr("train.batch_size=8 seed 1: done"));
  EXPECT_THAT(test::slurp(out + "/second/train.batch_size=16/seed-1/summary.json"),
              HasSubstr("\"reused_from\": \"" + out + "/first/default/seed-1\""));
  EXPECT_EQ(test::slurp(out + "/second/train.batch_size=16/seed-1/metrics.csv"),
            test::slurp(out + "/first/default/seed-1/metrics.csv"));
  EXPECT_THAT(test::slurp(out + "/second/train.batch_size=8/seed-1/summary.json"),
              Not(HasSubstr("reused_from")));

  const Result both = pelab(second + " --force --reuse " + quoted(out));
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_THAT(both.out, HasSubstr("give one of them"));
  // A folder that is not there stops the sweep before any run, not each run as it starts.
  const Result missing = pelab(second + " -j 2 --reuse " + quoted(dir / "nowhere"));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.out, HasSubstr("--reuse " + (dir / "nowhere") + ": no such folder"));
  EXPECT_THAT(missing.out, Not(HasSubstr("FAILED")));
}

TEST(PelabCli, BenchRunsAPluginsBenchmark) {
  const Result result =
      pelab("bench none --tokens 16 --d-model 16 --benchmark_min_time=0", "2>/dev/null");
  ASSERT_EQ(result.exit_code, 0) << result.out;
  EXPECT_THAT(result.out, HasSubstr("pe/none/forward_backward/tokens:16/d_model:16"));
}

TEST(PelabCli, BenchTakesAnInlineTableAndOverrides) {
  const Result result = pelab(
      "bench '{ plugin = \"learned\", init = \"normal\" }' --set init.std=0.5 --tokens 16 "
      "--d-model 16 --benchmark_min_time=0",
      "2>/dev/null");
  ASSERT_EQ(result.exit_code, 0) << result.out;
  EXPECT_THAT(result.out, HasSubstr("pe/learned/forward_backward/tokens:16/d_model:16"));
}

// --reference-scale is checked where it enters: a scale is a positive number.
TEST(PelabCli, ReportRefusesAReferenceScaleThatIsNoScale) {
  for (const char* bad : {"0", "-2", "x2", "nan"}) {
    const Result refused = pelab(std::string("report /nonexistent --reference-scale ") + bad);
    EXPECT_EQ(refused.exit_code, 2) << bad;
    EXPECT_THAT(refused.out, HasSubstr("error: --reference-scale: '")) << bad;
    EXPECT_THAT(refused.out, HasSubstr("give a positive number")) << bad;
  }
}

TEST(PelabCli, BenchRefusesBadInput) {
  const Result misspelt = pelab("bench lerned");
  EXPECT_EQ(misspelt.exit_code, 1);
  EXPECT_THAT(misspelt.out, HasSubstr("no plugin named 'lerned'"));
  EXPECT_THAT(misspelt.out, HasSubstr("did you mean learned?"));

  const Result bad_value = pelab("bench learned --set init.std=-1");
  EXPECT_EQ(bad_value.exit_code, 1);
  EXPECT_THAT(bad_value.out, HasSubstr("std"));

  const Result bad_flag = pelab("bench none --benchmark_bogus=1");
  EXPECT_EQ(bad_flag.exit_code, 1);
  EXPECT_THAT(bad_flag.out, HasSubstr("unknown option '--benchmark_bogus=1'"));

  // Every number is checked where it enters (--heads 0 was a SIGFPE, --tokens -5 a LibTorch
  // internal error, --batch 0 and --tokens 0 printed 0/s with exit 0).
  for (const char* bad : {"--heads 0", "--tokens -5", "--tokens 0", "--batch 0", "--d-model 0",
                          "--probe-tokens 1", "--layout grid4d"}) {
    const Result refused = pelab(std::string("bench learned ") + bad);
    EXPECT_EQ(refused.exit_code, 2) << bad;
    EXPECT_THAT(refused.out, HasSubstr("error: --")) << bad;
  }
  // A benchmark that fails (ERROR OCCURRED) fails the command.
  const Result failed = pelab("bench relative --tokens 1024 --d-model 64 --batch 16384");
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_THAT(failed.out, HasSubstr("error: 1 of 1 benchmark(s) failed: pe/relative/"));

  const Result no_grid = pelab("bench none --layout grid3d --tokens 16");
  EXPECT_EQ(no_grid.exit_code, 1);
  EXPECT_THAT(no_grid.out, HasSubstr("no benchmark matched"));
}

}  // namespace
}  // namespace pelab
