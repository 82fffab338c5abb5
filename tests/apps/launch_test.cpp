// The pieces of `pelab run --shard`, `pelab slurm` and `pelab status` that need no cluster: shards
// and their Slurm environment, Slurm's --array lists, and run states read from folders.

#include <cmath>
#include <string>
#include <vector>

#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <boost/filesystem.hpp>

#include "launch/shard.h"
#include "launch/slurm_launcher.h"
#include "launch/sweep_status.h"
#include "pelab/base/error.h"
#include "pelab/io/file_io.h"
#include "pelab/runs/run_claim.h"
#include "pelab/runs/run_folder.h"
#include "test_support.h"

namespace pelab::cli {
namespace {

using ::pelab::test::ScopedEnv;
using ::pelab::test::ScratchDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ShardTest, InterleavedSlicesCoverEveryRunOnce) {
  EXPECT_THAT(shard_runs(10, parse_shard("1/3")), ElementsAre(0, 3, 6, 9));
  EXPECT_THAT(shard_runs(10, parse_shard("3/3")), ElementsAre(2, 5, 8));
  EXPECT_THAT(shard_runs(2, parse_shard("4/4")), ElementsAre());
  std::vector<int> seen(23, 0);
  for (std::size_t k = 1; k <= 5; ++k) {
    for (std::size_t run : shard_runs(23, Shard{k, 5}))
      ++seen[run];
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), 23);
}

TEST(ShardTest, BadShardsSayWhatIsExpected) {
  for (const char* text : {"0/3", "4/3", "3", "a/b", "1/0", "/2", "1/-2", ""}) {
    try {
      parse_shard(text);
      ADD_FAILURE() << "accepted --shard '" << text << "'";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("expected K/N with 1 <= K <= N")) << text;
    }
  }
}

TEST(ShardTest, ASlurmArrayTaskKnowsItsShard) {
  {
    ScopedEnv id("SLURM_ARRAY_TASK_ID", nullptr);
    EXPECT_FALSE(shard_from_slurm_environment().has_value());
  }
  ScopedEnv id("SLURM_ARRAY_TASK_ID", "5"), min("SLURM_ARRAY_TASK_MIN", "3"),
      max("SLURM_ARRAY_TASK_MAX", "6"), count("SLURM_ARRAY_TASK_COUNT", "4");
  const auto shard = shard_from_slurm_environment();
  ASSERT_TRUE(shard.has_value());
  EXPECT_EQ(shard->index, 3u);
  EXPECT_EQ(shard->count, 4u);
  {  // --array=0-9: ids from 0, no MIN or MAX given
    ScopedEnv zero("SLURM_ARRAY_TASK_ID", "0"), no_min("SLURM_ARRAY_TASK_MIN", nullptr),
        no_max("SLURM_ARRAY_TASK_MAX", nullptr), ten("SLURM_ARRAY_TASK_COUNT", "10");
    EXPECT_EQ(shard_from_slurm_environment()->index, 1u);
    EXPECT_EQ(shard_from_slurm_environment()->count, 10u);
  }
  ScopedEnv no_count("SLURM_ARRAY_TASK_COUNT", nullptr), no_max("SLURM_ARRAY_TASK_MAX", nullptr);
  EXPECT_THROW(shard_from_slurm_environment(), Error);
}

TEST(SlurmTest, ArrayListsAreCompact) {
  EXPECT_EQ(slurm_array_list({0, 1, 2, 3}), "1-4");
  EXPECT_EQ(slurm_array_list({0, 2, 3, 4, 7}), "1,3-5,8");
  EXPECT_EQ(slurm_array_list({9}), "10");
}

// A newline in any value that goes into a script line would start a line of shell of its own.
TEST(SlurmLauncherTest, RefusesControlCharactersInEveryScriptValue) {
  EXPECT_NO_THROW(check_script_values(SlurmOptions{}, "runs", "m.toml"));
  const auto refusal = [](SlurmOptions options, const std::string& output = "runs",
                          const std::string& manifest = "m.toml") {
    try {
      check_script_values(options, output, manifest);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  SlurmOptions options;
  options.sbatch_options = {"--qos=long", "--comment=a\ntouch /tmp/x"};
  EXPECT_THAT(refusal(options),
              HasSubstr("--sbatch-option '--comment=a\\ntouch /tmp/x': a control character"));
  options = {};
  options.partition = "gpu\nrm -rf ~";
  EXPECT_THAT(refusal(options), HasSubstr("--partition 'gpu\\nrm -rf ~'"));
  options = {};
  options.account = "lab\r";
  EXPECT_THAT(refusal(options), HasSubstr("--account 'lab\\r'"));
  options = {};
  options.mem = std::string("8G\x1b");
  EXPECT_THAT(refusal(options), HasSubstr("--mem '8G\\x1b'"));
  options = {};
  options.time = "1:00:00\t";
  EXPECT_THAT(refusal(options), HasSubstr("--time"));
  options = {};
  options.plugin_folders = {"plugins\necho"};
  EXPECT_THAT(refusal(options), HasSubstr("--plugin-path"));
  EXPECT_THAT(refusal({}, "runs\ntouch /tmp/x"), HasSubstr("--out 'runs\\ntouch /tmp/x'"));
  EXPECT_THAT(refusal({}, "runs", "a\nb.toml"), HasSubstr("the manifest 'a\\nb.toml'"));
}

TEST(SweepStatusTest, EachStateIsReadFromItsFolder) {
  ScratchDir experiment;
  auto folder = [&](const std::string& name) { return RunFolder(experiment / name); };
  // done
  RunSummary finished;
  finished.status = "finished";
  folder("p/seed-1").write_summary(finished);
  // failed
  RunSummary failed;
  failed.status = "failed";
  failed.error = "loss is NaN\nmore";
  folder("p/seed-2").write_summary(failed);
  // interrupted: a config and metrics, no summary, no live owner
  write_file_atomically(folder("p/seed-3").path("config.toml"), "[train]\nepochs = 9\n");
  folder("p/seed-3")
      .write_metrics({{0, "test", "all", "accuracy", 0.1}, {4, "test", "all", "accuracy", 0.2}});
  // running: claimed by this live process
  const auto claim = RunClaim::try_claim(folder("p/seed-4").dir());
  ASSERT_NE(claim, nullptr);

  const auto statuses = sweep_status(experiment.path());
  ASSERT_EQ(statuses.size(), 4u);
  EXPECT_EQ(statuses[0].state, RunState::kDone);
  EXPECT_EQ(statuses[1].state, RunState::kFailed);
  EXPECT_EQ(statuses[1].error, "loss is NaN\nmore");
  EXPECT_EQ(statuses[2].state, RunState::kInterrupted);
  EXPECT_EQ(statuses[2].epoch, 4);
  EXPECT_EQ(statuses[2].epochs, 9);
  EXPECT_EQ(statuses[3].state, RunState::kRunning);
  ASSERT_TRUE(statuses[3].owner.has_value());
  EXPECT_EQ(statuses[3].owner->pid, ::getpid());
  EXPECT_EQ(run_status(experiment.path(), "p/seed-5").state, RunState::kPending);
}

RunStatus status_of(RunState state, std::int64_t epoch, std::int64_t epochs, double wall = -1,
                    double eta = -1) {
  RunStatus status;
  status.state = state;
  status.epoch = epoch;
  status.epochs = epochs;
  status.wall_seconds = wall;
  if (state == RunState::kRunning) {
    status.owner = ClaimOwner{};
    status.owner->eta_seconds = eta;
  }
  return status;
}

TEST(SweepStatusTest, TheTimeLeftIsAtThePaceOfTheFinishedRuns) {
  std::vector<RunStatus> statuses = {
      status_of(RunState::kDone, 100, 100, 200.0),  // 2 s an epoch
      status_of(RunState::kDone, 100, 100, 400.0),  // 4 s an epoch: median 3
      status_of(RunState::kFailed, 7,
                100),  // left out: it runs again only with the next `pelab run`
      status_of(RunState::kRunning, 40, 100, -1, 90.0),  // its own ETA: 90 s
      status_of(RunState::kInterrupted, 50, 100),        // 50 epochs x 3 s
      status_of(RunState::kPending, -1, -1),             // epochs unknown: the others' 100, x 3 s
  };
  auto estimate = estimate_remaining(statuses);
  ASSERT_TRUE(estimate.has_value());
  EXPECT_EQ(estimate->pace_source, "the finished runs");
  EXPECT_DOUBLE_EQ(estimate->seconds_per_epoch, 3.0);
  EXPECT_EQ(estimate->at_a_time, 1u);
  EXPECT_DOUBLE_EQ(estimate->seconds_left, 90.0 + 150.0 + 300.0);

  // Two running at a time: the work is shared.
  statuses.push_back(status_of(RunState::kRunning, 80, 100, -1, 60.0));
  estimate = estimate_remaining(statuses);
  ASSERT_TRUE(estimate.has_value());
  EXPECT_EQ(estimate->at_a_time, 2u);
  EXPECT_DOUBLE_EQ(estimate->seconds_left, (90.0 + 150.0 + 300.0 + 60.0) / 2);
}

// Points that differ in cost: a run left is estimated at its own point's pace where one of its
// seeds has finished (a costlier PE at 8 s an epoch beside a cheap one at 2), else at the median of
// all finished runs.
TEST(SweepStatusTest, ARunLeftGoesAtItsOwnPointsPace) {
  auto at = [](const std::string& dir, RunStatus status) {
    status.dir = dir;
    return status;
  };
  const std::vector<RunStatus> statuses = {
      at("cheap/seed-1", status_of(RunState::kDone, 10, 10, 20.0)),   // 2 s an epoch
      at("cheap/seed-2", status_of(RunState::kDone, 10, 10, 20.0)),   // 2
      at("costly/seed-1", status_of(RunState::kDone, 10, 10, 80.0)),  // 8
      at("costly/seed-2", status_of(RunState::kPending, -1, -1)),     // 10 epochs x 8 s
      at("cheap/seed-3", status_of(RunState::kInterrupted, 5, 10)),   // 5 epochs x 2 s
      at("unseen/seed-1", status_of(RunState::kPending, -1, -1)),     // 10 x the median, 2 s
  };
  const auto estimate = estimate_remaining(statuses);
  ASSERT_TRUE(estimate.has_value());
  EXPECT_DOUBLE_EQ(estimate->seconds_per_epoch, 2.0);
  EXPECT_EQ(estimate->runs_at_their_points_pace, 2u);
  EXPECT_DOUBLE_EQ(estimate->seconds_left, 80.0 + 10.0 + 20.0);
}

TEST(SweepStatusTest, WithoutFinishedRunsTheRunningRunsSetThePace) {
  const std::vector<RunStatus> statuses = {
      status_of(RunState::kRunning, 10, 50, -1, 80.0),  // 2 s an epoch
      status_of(RunState::kPending, -1, -1),            // 50 epochs x 2 s
  };
  const auto estimate = estimate_remaining(statuses);
  ASSERT_TRUE(estimate.has_value());
  EXPECT_EQ(estimate->pace_source, "the running runs");
  EXPECT_DOUBLE_EQ(estimate->seconds_left, 80.0 + 100.0);
}

TEST(SweepStatusTest, NothingLeftOrNoPaceYetGivesNoEstimate) {
  EXPECT_FALSE(estimate_remaining(
                   {status_of(RunState::kDone, 10, 10, 20.0), status_of(RunState::kFailed, 3, 10)})
                   .has_value());
  EXPECT_FALSE(estimate_remaining({status_of(RunState::kRunning, 0, 10, -1, -1),
                                   status_of(RunState::kPending, -1, -1)})
                   .has_value());
}

// Between one run's end and the next one's start a -j 2 sweep runs one run: the estimate keeps
// the two its launcher recorded rather than doubling. A snapshot of this host whose launcher is
// gone counts for nothing, one from before the record (no jobs file) too.
TEST(SweepStatusTest, TheEstimateKeepsTheLaunchersRunsAtATime) {
  const std::vector<RunStatus> statuses = {
      status_of(RunState::kDone, 10, 10, 20.0),        // 2 s an epoch
      status_of(RunState::kRunning, 5, 10, -1, 10.0),  // 10 s left
      status_of(RunState::kPending, -1, -1),           // 20 s
      status_of(RunState::kPending, -1, -1),           // 20 s
  };
  EXPECT_EQ(estimate_remaining(statuses)->at_a_time, 1u);
  const auto estimate = estimate_remaining(statuses, 2);
  EXPECT_EQ(estimate->at_a_time, 2u);
  EXPECT_DOUBLE_EQ(estimate->seconds_left, 50.0 / 2);
  EXPECT_EQ(estimate_remaining(statuses, 8)->at_a_time, 3u);  // no more than the runs left

  ScratchDir dir;
  EXPECT_EQ(launched_jobs(dir.path()), 0u);
  const std::string prefix = dir / (".manifest-" + RunClaim::this_host() + "-");
  boost::filesystem::create_directories(prefix + std::to_string(::getpid()));
  write_file_atomically(prefix + std::to_string(::getpid()) + "/jobs", "2");
  boost::filesystem::create_directories(prefix + "999999999");  // no such process
  write_file_atomically(prefix + "999999999/jobs", "4");
  boost::filesystem::create_directories(dir / ".manifest-elsewhere-12");  // another host's: counted
  write_file_atomically(dir / ".manifest-elsewhere-12/jobs", "3");
  boost::filesystem::create_directories(dir / ".manifest-elsewhere-13");  // from before the record
  EXPECT_EQ(launched_jobs(dir.path()), 2u + 3u);
}

TEST(SweepStatusTest, AFolderWithoutRunsIsAnError) {
  ScratchDir empty;
  try {
    sweep_status(empty.path());
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("holds no runs and no sweep.json"));
  }
}

}  // namespace
}  // namespace pelab::cli
