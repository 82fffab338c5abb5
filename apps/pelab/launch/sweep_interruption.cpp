#include "launch/sweep_interruption.h"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "pelab/base/error.h"

namespace pelab::cli {

namespace {

// The handler may use async-signal-safe calls only: what it reads lives in fixed buffers and
// lock-free atomics, filled before the handler is installed.
constexpr std::array<int, 3> kSignals = {SIGINT, SIGTERM, SIGHUP};
constexpr std::size_t kMaxWorkers = 1024;

constexpr std::size_t kMaxSnapshotFiles = 4;
std::array<char[PATH_MAX], kMaxSnapshotFiles> snapshot_files;  // "" past the last one
char snapshot_dir[PATH_MAX];
std::array<std::atomic<pid_t>, kMaxWorkers> workers;
std::array<struct sigaction, kSignals.size()> previous_actions;
std::atomic<bool> installed{false};
static_assert(std::atomic<pid_t>::is_always_lock_free, "the signal handler reads worker pids");

extern "C" void forward_clean_up_and_die(int signal_number) {
  for (const auto& worker : workers) {
    const pid_t pid = worker.load();
    if (pid > 0) ::kill(pid, signal_number);
  }
  for (const auto& file : snapshot_files) {
    if (file[0] != '\0') ::unlink(file);
  }
  ::rmdir(snapshot_dir);
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

}  // namespace

SweepInterruption::SweepInterruption(const std::vector<std::string>& files,
                                     const std::string& dir) {
  PELAB_INTERNAL_ASSERT(!installed.exchange(true), "one SweepInterruption at a time");
  PELAB_INTERNAL_ASSERT(files.size() <= kMaxSnapshotFiles, "{} snapshot files", files.size());
  PELAB_CHECK(dir.size() < PATH_MAX, "the manifest snapshot's path is longer than PATH_MAX: {}",
              dir);
  // Copied now: the signal handler may not allocate.
  for (std::size_t i = 0; i < kMaxSnapshotFiles; ++i) {
    const std::string file = i < files.size() ? files[i] : "";
    PELAB_CHECK(file.size() < PATH_MAX, "the manifest snapshot's path is longer than PATH_MAX: {}",
                file);
    std::memcpy(snapshot_files[i], file.c_str(), file.size() + 1);
  }
  std::memcpy(snapshot_dir, dir.c_str(), dir.size() + 1);
  for (auto& worker : workers)
    worker.store(0);
  struct sigaction action = {};
  action.sa_handler = forward_clean_up_and_die;
  sigemptyset(&action.sa_mask);
  for (std::size_t i = 0; i < kSignals.size(); ++i)
    ::sigaction(kSignals[i], &action, &previous_actions[i]);
}

SweepInterruption::~SweepInterruption() {
  for (std::size_t i = 0; i < kSignals.size(); ++i)
    ::sigaction(kSignals[i], &previous_actions[i], nullptr);
  installed.store(false);
}

void SweepInterruption::add_worker(pid_t pid) {
  for (auto& worker : workers) {
    pid_t empty = 0;
    if (worker.compare_exchange_strong(empty, pid)) return;
  }
  PELAB_INTERNAL_ASSERT(false, "more than {} workers at once", kMaxWorkers);
}

void SweepInterruption::remove_worker(pid_t pid) {
  for (auto& worker : workers) {
    pid_t expected = pid;
    if (worker.compare_exchange_strong(expected, 0)) return;
  }
}

}  // namespace pelab::cli
