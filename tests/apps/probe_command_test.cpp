// `pelab probe` and `pelab report` as a user runs them, on a seconds-long marker-task experiment.

#include <cstdio>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <boost/filesystem.hpp>
#include <nlohmann/json.hpp>

#include "pelab/io/file_io.h"
#include "pelab_process.h"
#include "test_support.h"

namespace pelab {
namespace {

using ::pelab::test::ScratchDir;
using ::pelab::test::slurp;
using ::testing::HasSubstr;
using json = nlohmann::json;
namespace fs = boost::filesystem;

using ::pelab::test::pelab;
using ::pelab::test::quoted;
using ::pelab::test::Result;

// One tiny experiment for the whole file: 2 points x 1 seed of the marker task, learned PE at
// std 0.2 and 2.0, with the pe_norm and attention probes.
class ProbeCommand : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir;
    std::ofstream(*dir_ / "tiny.toml")
        << "[experiment]\nname = \"tiny\"\nseeds = [1]\n\n"
           "[task]\nplugin = \"marker_position\"\ntokens = 6\ntrain_samples = 64\n"
           "test_samples = 32\n\n"
           "[model]\nlayers = 2\nd_model = 8\nheads = 1\nmlp_ratio = 1\n\n"
           "[pe]\nplugin = \"learned\"\ninit = { plugin = \"normal\", std = 0.2 }\n\n"
           "[train]\nepochs = 2\nbatch_size = 32\nthreads = 1\n\n"
           "[[probe]]\nplugin = \"pe_norm\"\n\n[[probe]]\nplugin = \"attention\"\n\n"
           "[sweep]\n\"pe.init.std\" = [0.2, 2.0]\n";
    run_ = pelab("run " + quoted(*dir_ / "tiny.toml") + " --quiet --out " + quoted(*dir_ / "out"));
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override { ASSERT_EQ(run_.exit_code, 0) << run_.out; }

  static std::string run_dir(const std::string& std) {
    return *dir_ / ("out/tiny/pe.init.std=" + std + "/seed-1");
  }
  static json read_json(const std::string& path) { return json::parse(slurp(path)); }

  static ScratchDir* dir_;
  static Result run_;
};

ScratchDir* ProbeCommand::dir_ = nullptr;
Result ProbeCommand::run_;

TEST_F(ProbeCommand, RunWritesTheReport) {
  EXPECT_THAT(run_.out, HasSubstr("report.html"));
  const std::string experiment = *dir_ / "out/tiny";
  for (const char* file : {"results.csv", "report.md", "report.html", "figures/accuracy.gp"})
    EXPECT_TRUE(fs::is_regular_file(experiment + "/" + file)) << file;
  EXPECT_THAT(slurp(experiment + "/results.csv"),
              HasSubstr("\npe.init.std=0.2,probe/attention/entropy,"));
}

TEST_F(ProbeCommand, NewProbesOnAFinishedRun) {
  const std::string run = run_dir("0.2");
  const Result result =
      pelab("probe " + quoted(run) +
            " --probe rsa --probe procrustes --probe modularity --set rsa.permutations=50 "
            "--set modularity.partition=axis0");
  ASSERT_EQ(result.exit_code, 0) << result.out;
  EXPECT_THAT(result.out, HasSubstr("rsa"));
  EXPECT_THAT(result.out, HasSubstr("spearman"));
  for (const char* file : {"probes/rsa.json", "probes/rsa-spearman.npy", "probes/procrustes.json",
                           "probes/procrustes-distance.npy", "probes/modularity-q.npy"}) {
    EXPECT_TRUE(fs::is_regular_file(run + "/" + file)) << file;
  }
  const json rsa = read_json(run + "/probes/rsa.json");
  EXPECT_EQ(rsa["epoch"], 2);
  // The summary keeps the run's own probes and gains the new ones, with the same numbers.
  const json summary = read_json(run + "/summary.json");
  EXPECT_EQ(summary["status"], "finished");
  EXPECT_TRUE(summary["probes"].contains("pe_norm"));
  EXPECT_TRUE(summary["probes"].contains("attention"));
  EXPECT_EQ(summary["probes"]["rsa"]["spearman"], rsa["scalars"]["spearman"]);
  EXPECT_TRUE(summary["probes"]["procrustes"]["distance"].is_number());
  // 6 tokens, 50 permutations: p is a multiple of 1/51.
  const double p = rsa["scalars"]["p_value"].get<double>() * 51;
  EXPECT_NEAR(p, std::round(p), 1e-9);
  // The same probe again gives the same numbers (deterministic).
  ASSERT_EQ(pelab("probe " + quoted(run) + " --probe rsa --set rsa.permutations=50").exit_code, 0);
  EXPECT_EQ(read_json(run + "/probes/rsa.json")["scalars"], rsa["scalars"]);
}

TEST_F(ProbeCommand, TheReloadedModelIsTheTrainedOne) {
  // `pelab run` computed the attention maps with the model in memory; `pelab probe` rebuilds it
  // from config.toml and checkpoint.pt. Same maps, bit for bit.
  const std::string run = run_dir("2");
  const std::string during_run = slurp(run + "/probes/attention-maps.npy");
  ASSERT_FALSE(during_run.empty());
  const Result result = pelab("probe " + quoted(run));  // the run's own probes
  ASSERT_EQ(result.exit_code, 0) << result.out;
  EXPECT_EQ(slurp(run + "/probes/attention-maps.npy"), during_run);
  EXPECT_THAT(result.out, HasSubstr("pe_norm"));
}

TEST_F(ProbeCommand, AttentionAgainstAReferenceRun) {
  const std::string reference = run_dir("0.2");
  const Result result =
      pelab("probe " + quoted(run_dir("2")) +
            " --probe attention --set attention.reference_run=" + quoted(reference));
  ASSERT_EQ(result.exit_code, 0) << result.out;
  const json attention = read_json(run_dir("2") + "/probes/attention.json");
  const double similarity = attention["scalars"]["similarity"].get<double>();
  EXPECT_GT(similarity, 0.0);
  EXPECT_LE(similarity, 1.0 + 1e-12);

  const Result missing = pelab("probe " + quoted(run_dir("2")) +
                               " --probe attention --set attention.reference_run=/nonexistent");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.out, HasSubstr("has no probes/attention-maps.npy"));
  EXPECT_THAT(read_json(run_dir("2") + "/probes/attention.json")["error"].get<std::string>(),
              HasSubstr("/nonexistent"));
}

TEST_F(ProbeCommand, Errors) {
  const std::string run = quoted(run_dir("0.2"));
  Result result = pelab("probe " + run + " --probe rsaa");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.out, HasSubstr("Did you mean rsa"));
  result = pelab("probe " + run + " --set rsa.permutations=5");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.out, HasSubstr("no probe named 'rsa'"));
  result = pelab("probe " + run + " --probe rsa --set rsa.permutatons=5");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.out, HasSubstr("did you mean 'permutations'"));
  result = pelab("probe " + quoted(*dir_ / "out"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.out, HasSubstr("is not a run folder"));
}

// A run whose PE snapshots were deleted is not a run without a PE: the probe fails, naming the
// folder, instead of reporting "nothing to compare".
TEST_F(ProbeCommand, MissingSnapshotsAreAnErrorNamingTheFolder) {
  ScratchDir copy;
  const fs::path run = fs::path(copy.path()) / "seed-1";
  fs::create_directories(run);
  for (fs::directory_iterator it(run_dir("0.2")), end; it != end; ++it) {
    if (fs::is_regular_file(it->path())) fs::copy_file(it->path(), run / it->path().filename());
  }
  const Result result = pelab("probe " + quoted(run.string()) + " --probe rsa");
  EXPECT_EQ(result.exit_code, 1) << result.out;
  EXPECT_THAT(result.out, HasSubstr("the run's PE snapshots are missing: " + (run / "pe").string() +
                                    " holds no tables-epoch-*.npy"));
  EXPECT_THAT(result.out, HasSubstr("its PE ('learned') has a table"));
  EXPECT_FALSE(fs::exists(run / "probes" / "rsa.json"));
}

TEST_F(ProbeCommand, ReportCommand) {
  const std::string experiment = *dir_ / "out/tiny";
  const Result result = pelab("report " + quoted(experiment));
  ASSERT_EQ(result.exit_code, 0) << result.out;
  EXPECT_THAT(result.out, HasSubstr("2 finished run(s) in 2 point(s)"));
  EXPECT_THAT(result.out, HasSubstr("learned, normal std=0.2"));
  // results.csv agrees with the runs' summary.json files.
  const json summary = read_json(run_dir("0.2") + "/summary.json");
  const double accuracy = summary["final"]["test/all/accuracy"].get<double>();
  EXPECT_THAT(slurp(experiment + "/results.csv"),
              HasSubstr(fmt::format("\npe.init.std=0.2,test/all/accuracy,{},0,1,",
                                    format_number(accuracy))));
  const Result bad = pelab("report " + quoted(*dir_ / "nothing-here"));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.out, HasSubstr("is not a folder"));
}

}  // namespace
}  // namespace pelab
