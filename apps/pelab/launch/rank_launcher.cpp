#include "launch/rank_launcher.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <boost/filesystem.hpp>

#include "pelab/base/error.h"
#include "pelab/training/rendezvous.h"

extern char** environ;

namespace pelab::cli {

namespace {

using Clock = std::chrono::steady_clock;

// This process's environment with `set` replacing any variable of the same name.
std::vector<std::string> environment_with(const std::map<std::string, std::string>& set) {
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text(*entry);
    const std::string name = text.substr(0, text.find('='));
    // torchrun's own store is not there for ranks that pelab starts.
    if (set.count(name) || name == "TORCHELASTIC_USE_AGENT_STORE") continue;
    environment.push_back(text);
  }
  for (const auto& [name, value] : set)
    environment.push_back(name + "=" + value);
  return environment;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> result;
  for (auto& text : strings)
    result.push_back(text.data());
  result.push_back(nullptr);
  return result;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("was killed by signal {}", WTERMSIG(status));
  return "stopped";
}

}  // namespace

std::vector<std::string> without_nproc_per_node(const std::vector<std::string>& command_line) {
  std::vector<std::string> result;
  for (std::size_t i = 0; i < command_line.size(); ++i) {
    const std::string& arg = command_line[i];
    if (arg == "--nproc-per-node") {
      ++i;  // and its value
      continue;
    }
    if (arg.rfind("--nproc-per-node=", 0) == 0) continue;
    result.push_back(arg);
  }
  return result;
}

int launch_local_ranks(int ranks, const std::vector<std::string>& command_line,
                       std::chrono::milliseconds grace) {
  PELAB_CHECK(std::getenv("WORLD_SIZE") == nullptr,
              "--nproc-per-node starts the ranks itself, but WORLD_SIZE is already set (this "
              "process is a rank of torchrun or of another pelab): give one or the other");
  std::vector<std::string> arguments = without_nproc_per_node(command_line);
  arguments[0] = boost::filesystem::read_symlink("/proc/self/exe").string();
  const std::string port = std::to_string(Rendezvous::free_loopback_port());

  std::map<pid_t, int> running;  // pid -> rank
  for (int rank = 0; rank < ranks; ++rank) {
    std::vector<std::string> environment = environment_with({
        {"RANK", std::to_string(rank)},
        {"LOCAL_RANK", std::to_string(rank)},
        {"WORLD_SIZE", std::to_string(ranks)},
        {"LOCAL_WORLD_SIZE", std::to_string(ranks)},
        {"MASTER_ADDR", "127.0.0.1"},
        {"MASTER_PORT", port},
    });
    std::vector<std::string> args = arguments;
    auto argv = pointers(args);
    auto envp = pointers(environment);
    pid_t pid = 0;
    const int error = ::posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data());
    if (error != 0) {
      for (const auto& [started, r] : running)
        ::kill(started, SIGTERM);
      throw Error(
          fmt::format("cannot start rank {} ({}): {}", rank, argv[0], std::strerror(error)));
    }
    running[pid] = rank;
  }

  int exit_code = 0;
  std::optional<Clock::time_point> first_failure;
  int signal_sent = 0;  // to the ranks left after a failure: SIGTERM, then SIGKILL
  while (!running.empty()) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0 && running.count(pid)) {
      const int rank = running.at(pid);
      running.erase(pid);
      if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        fmt::print(stderr, "pelab: rank {} of {} (pid {}) {}\n", rank, ranks, pid,
                   describe_status(status));
        if (exit_code == 0) exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
        if (!first_failure) first_failure = Clock::now();
      }
      continue;
    }
    // A rank stopped (SIGSTOP) or hung ignores SIGTERM: SIGKILL follows five seconds later.
    const auto since = first_failure ? Clock::now() - *first_failure : Clock::duration::zero();
    const int due = !first_failure                            ? 0
                    : since > grace + std::chrono::seconds(5) ? SIGKILL
                    : since > grace                           ? SIGTERM
                                                              : 0;
    if (due != 0 && due != signal_sent) {
      for (const auto& [straggler, rank] : running) {
        fmt::print(stderr,
                   "pelab: {} rank {} of {} (pid {}), still running {:.0f} s after another rank "
                   "failed\n",
                   due == SIGKILL ? "killing" : "stopping", rank, ranks, straggler,
                   std::chrono::duration<double>(since).count());
        ::kill(straggler, due);
      }
      signal_sent = due;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return exit_code;
}

namespace {

class LocalRanksLauncher : public Launcher {
 public:
  LocalRanksLauncher(int ranks, std::vector<std::string> command_line,
                     std::chrono::milliseconds grace)
      : ranks_(ranks), command_line_(std::move(command_line)), grace_(grace) {}

  std::vector<LaunchResult> launch(const LaunchPlan& plan) override {
    const int status = launch_local_ranks(ranks_, command_line_, grace_);
    std::vector<LaunchResult> results;
    for (std::size_t index : plan.runs) {
      LaunchResult result;
      result.index = index;
      result.state = status == 0 ? LaunchState::kDone : LaunchState::kFailed;
      result.exit_status = status;
      if (status != 0) result.detail = fmt::format("a rank exited with status {}", status);
      results.push_back(std::move(result));
    }
    return results;
  }

 private:
  int ranks_;
  std::vector<std::string> command_line_;
  std::chrono::milliseconds grace_;
};

}  // namespace

std::unique_ptr<Launcher> make_local_ranks_launcher(int ranks,
                                                    std::vector<std::string> command_line,
                                                    std::chrono::milliseconds grace) {
  return std::make_unique<LocalRanksLauncher>(ranks, std::move(command_line), grace);
}

}  // namespace pelab::cli
