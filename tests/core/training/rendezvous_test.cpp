// Where the ranks of a data-parallel run meet: torchrun's variables, Slurm's under srun, or none.

#include "pelab/training/rendezvous.h"

#include <map>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pelab/base/error.h"

namespace pelab {
namespace {

using ::testing::HasSubstr;

std::optional<Rendezvous> from(const std::map<std::string, std::string>& variables) {
  return Rendezvous::from_environment([&](const char* name) -> const char* {
    const auto it = variables.find(name);
    return it == variables.end() ? nullptr : it->second.c_str();
  });
}

std::string error_of(const std::map<std::string, std::string>& variables) {
  try {
    from(variables);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(RendezvousTest, NoneWithoutALauncherOrWithOneRank) {
  EXPECT_FALSE(from({}));
  EXPECT_FALSE(from({{"WORLD_SIZE", "1"}, {"RANK", "0"}}));
  // An sbatch script's own environment has no step: one process, whatever --ntasks says.
  EXPECT_FALSE(from({{"SLURM_NTASKS", "4"}, {"SLURM_PROCID", "0"}}));
  EXPECT_FALSE(from({{"SLURM_STEP_NUM_TASKS", "1"}, {"SLURM_PROCID", "0"}}));
}

TEST(RendezvousTest, TorchrunVariables) {
  const auto rendezvous = from({{"WORLD_SIZE", "4"},
                                {"RANK", "3"},
                                {"LOCAL_RANK", "1"},
                                {"LOCAL_WORLD_SIZE", "2"},
                                {"MASTER_ADDR", "node07"},
                                {"MASTER_PORT", "29411"},
                                {"TORCHELASTIC_USE_AGENT_STORE", "True"}});
  ASSERT_TRUE(rendezvous);
  EXPECT_EQ(rendezvous->rank, 3);
  EXPECT_EQ(rendezvous->world_size, 4);
  EXPECT_EQ(rendezvous->local_rank, 1);
  EXPECT_EQ(rendezvous->local_world_size, 2);
  EXPECT_EQ(rendezvous->master_addr, "node07");
  EXPECT_EQ(rendezvous->master_port, 29411);
  EXPECT_TRUE(rendezvous->agent_store);
  EXPECT_EQ(rendezvous->describe(), "rank 3 of 4");
}

TEST(RendezvousTest, SlurmStepVariables) {
  const auto rendezvous = from({{"SLURM_STEP_NUM_TASKS", "4"},
                                {"SLURM_PROCID", "2"},
                                {"SLURM_LOCALID", "0"},
                                {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
                                {"SLURM_STEP_NODELIST", "cn[012-013]"},
                                {"SLURM_JOB_ID", "123456"}});
  ASSERT_TRUE(rendezvous);
  EXPECT_EQ(rendezvous->rank, 2);
  EXPECT_EQ(rendezvous->world_size, 4);
  EXPECT_EQ(rendezvous->local_world_size, 2);
  EXPECT_EQ(rendezvous->master_addr, "cn012");
  EXPECT_EQ(rendezvous->master_port, 29500 + 3456);  // from the job id: jobs sharing a node differ
  EXPECT_FALSE(rendezvous->agent_store);
  EXPECT_EQ(rendezvous->source, "Slurm (srun)");
}

TEST(RendezvousTest, TorchrunVariablesWinOverSlurms) {
  // torchrun started inside a Slurm step: its ranks are torchrun's.
  const auto rendezvous = from({{"WORLD_SIZE", "2"},
                                {"RANK", "1"},
                                {"MASTER_ADDR", "127.0.0.1"},
                                {"SLURM_STEP_NUM_TASKS", "1"},
                                {"SLURM_PROCID", "0"}});
  ASSERT_TRUE(rendezvous);
  EXPECT_EQ(rendezvous->rank, 1);
  EXPECT_EQ(rendezvous->source, "torchrun variables");
}

TEST(RendezvousTest, BadVariablesAreNamed) {
  EXPECT_THAT(error_of({{"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}}),
              HasSubstr("RANK is not set: a data-parallel run under torchrun variables"));
  EXPECT_THAT(error_of({{"WORLD_SIZE", "two"}}), HasSubstr("WORLD_SIZE is 'two'"));
  EXPECT_THAT(error_of({{"WORLD_SIZE", "2"}, {"RANK", "2"}, {"MASTER_ADDR", "h"}}),
              HasSubstr("rank 2 does not exist in a world of 2 rank(s)"));
  EXPECT_THAT(error_of({{"WORLD_SIZE", "2"}, {"RANK", "0"}}), HasSubstr("MASTER_ADDR is not set"));
  EXPECT_THAT(
      error_of(
          {{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}}),
      HasSubstr("MASTER_PORT = '70000' is not a TCP port"));
}

TEST(RendezvousTest, FirstHostOfASlurmHostList) {
  EXPECT_EQ(Rendezvous::first_host("node1"), "node1");
  EXPECT_EQ(Rendezvous::first_host("node1,node2"), "node1");
  EXPECT_EQ(Rendezvous::first_host("node[07-09,12],gpu3"), "node07");
  EXPECT_EQ(Rendezvous::first_host("rack[3,5]-n[1-4]"), "rack3-n1");
  EXPECT_THROW(Rendezvous::first_host("node[1-2"), Error);
  EXPECT_THROW(Rendezvous::first_host(""), Error);
}

}  // namespace
}  // namespace pelab
