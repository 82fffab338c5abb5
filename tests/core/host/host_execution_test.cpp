// HostExecution: the one place a run's threads and subnormal mode are decided.

#include "pelab/host/host_execution.h"

#include <cstdlib>
#include <thread>

#include <gtest/gtest.h>

namespace pelab {
namespace {

TEST(HostExecutionTest, TakesTheConfiguredThreadsElseTheShare) {
  const CoreShare share = CoreShare::given(6, "a test's share");
  const HostExecution configured = HostExecution::resolve(3, true, share);
  EXPECT_EQ(configured.threads, 3);
  EXPECT_EQ(configured.threads_source, "train.threads");
  EXPECT_TRUE(configured.flush_subnormals);
  const HostExecution left = HostExecution::resolve(0, false, share);
  EXPECT_EQ(left.threads, 6);
  EXPECT_EQ(left.threads_source, "a test's share");
  EXPECT_EQ(left.text(), "6 threads (a test's share), subnormals kept");
}

TEST(HostExecutionTest, SplitsAShareWithAtLeastOneCoreEach) {
  const CoreShare eight = CoreShare::given(8, "8 cores");
  EXPECT_EQ(eight.split(3, "-j 3 workers").cores, 2);
  EXPECT_EQ(eight.split(3, "-j 3 workers").source, "8 cores split between -j 3 workers");
  EXPECT_EQ(eight.split(1, "one").source, "8 cores");
  EXPECT_EQ(CoreShare::given(2, "2 cores").split(4, "4 ranks").cores, 1);
  EXPECT_ANY_THROW(CoreShare::given(0, "none"));
}

TEST(HostExecutionTest, ASlurmTaskGetsItsCpusAndAnyOtherProcessTheMachine) {
  ::setenv("SLURM_CPUS_PER_TASK", "3", 1);
  const CoreShare slurm = CoreShare::of_this_process();
  EXPECT_EQ(slurm.cores, 3);
  EXPECT_TRUE(slurm.from_scheduler);
  EXPECT_EQ(slurm.source, "SLURM_CPUS_PER_TASK=3");
  ::setenv("SLURM_CPUS_PER_TASK", "three", 1);
  const std::int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  EXPECT_EQ(CoreShare::of_this_process().cores, cores);
  ::unsetenv("SLURM_CPUS_PER_TASK");
  const CoreShare machine = CoreShare::of_this_process();
  EXPECT_EQ(machine.cores, cores);
  EXPECT_FALSE(machine.from_scheduler);
}

}  // namespace
}  // namespace pelab
