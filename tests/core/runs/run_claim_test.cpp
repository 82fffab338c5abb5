// RunClaim: one owner per run folder, taken over when its owner dies, and respected from another
// host while its heartbeat is recent.

#include "pelab/runs/run_claim.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <boost/filesystem.hpp>

#include "pelab/io/file_io.h"
#include "test_support.h"

namespace pelab {
namespace {

using ::pelab::test::ScratchDir;
namespace fs = boost::filesystem;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void write_claim_json(const std::string& dir, const std::string& host, double heartbeat) {
  write_file_atomically(dir + "/claim.json",
                        fmt::format(R"({{"host": "{}", "pid": 1, "started": {}, "heartbeat": {}}})",
                                    host, heartbeat, heartbeat));
}

TEST(RunClaimTest, OneOwnerAtATime) {
  ScratchDir dir;
  const std::string run = dir / "run";
  auto first = RunClaim::try_claim(run);
  ASSERT_NE(first, nullptr);
  std::optional<ClaimOwner> holder;
  EXPECT_EQ(RunClaim::try_claim(run, &holder), nullptr);
  ASSERT_TRUE(holder.has_value());
  EXPECT_EQ(holder->pid, ::getpid());
  EXPECT_TRUE(RunClaim::alive(*holder));

  first->progress(3, 10, 42.0);
  first.reset();  // released
  EXPECT_FALSE(fs::exists(run + "/claim.json"));
  EXPECT_NE(RunClaim::try_claim(run), nullptr);
}

TEST(RunClaimTest, TheClaimOfAKilledProcessIsTakenOver) {
  ScratchDir dir;
  const std::string run = dir / "run";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    const auto claim = RunClaim::try_claim(run);
    const char byte = claim ? 'y' : 'n';
    (void)!::write(ready[1], &byte, 1);
    ::pause();  // killed here, the claim still held
    ::_exit(0);
  }
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ASSERT_EQ(byte, 'y');
  std::optional<ClaimOwner> holder;
  EXPECT_EQ(RunClaim::try_claim(run, &holder), nullptr);
  ASSERT_TRUE(holder.has_value());
  EXPECT_EQ(holder->pid, child);

  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  const auto left = RunClaim::read(run);
  ASSERT_TRUE(left.has_value());  // a killed process cleans nothing up
  EXPECT_FALSE(RunClaim::alive(*left));
  EXPECT_NE(RunClaim::try_claim(run), nullptr);
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST(RunClaimTest, ARecentClaimFromAnotherHostIsRespected) {
  ScratchDir dir;
  const std::string run = dir / "run";
  fs::create_directories(run);
  write_claim_json(run, "another-node", unix_now());
  std::optional<ClaimOwner> holder;
  EXPECT_EQ(RunClaim::try_claim(run, &holder), nullptr);
  ASSERT_TRUE(holder.has_value());
  EXPECT_EQ(holder->host, "another-node");

  // Four missed heartbeats: that host is gone.
  write_claim_json(run, "another-node", unix_now() - 5 * RunClaim::heartbeat_seconds());
  EXPECT_NE(RunClaim::try_claim(run), nullptr);
}

// A claim.json whose pid or epoch is not an integer (the fuzzer's 4.5e63 was cast, undefined
// behaviour) is no claim; an integer one reads back.
TEST(RunClaimTest, AClaimWithANonIntegerPidIsNoClaim) {
  ScratchDir dir;
  for (const char* pid : {"4.5e63", "1.5", "\"1\""}) {
    write_file_atomically(dir / "claim.json",
                          fmt::format(R"({{"host": "node", "pid": {}, "heartbeat": 1.0}})", pid));
    EXPECT_FALSE(RunClaim::read(dir.path()).has_value()) << "pid " << pid;
  }
  write_claim_json(dir.path(), "node", 1.0);
  ASSERT_TRUE(RunClaim::read(dir.path()).has_value());
  EXPECT_EQ(RunClaim::read(dir.path())->pid, 1);
}

}  // namespace
}  // namespace pelab
