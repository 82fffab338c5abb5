#include "launch/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <boost/filesystem.hpp>

#include "launch/progress_board.h"
#include "launch/sweep_interruption.h"
#include "launch/sweep_status.h"
#include "pelab/base/error.h"
#include "pelab/config/manifest.h"
#include "pelab/io/file_io.h"
#include "pelab/plugins/registry.h"
#include "pelab/runs/experiment_folder.h"
#include "pelab/runs/run_claim.h"

extern char** environ;

namespace pelab::cli {

namespace fs = boost::filesystem;

namespace {

std::string run_label(const RunConfig& config) {
  return fmt::format("{} seed {}", config.point.empty() ? "default" : config.point,
                     static_cast<long long>(config.seed));
}

class SequentialLauncher : public Launcher {
 public:
  explicit SequentialLauncher(Registry& registry) : registry_(registry) {}

  std::vector<LaunchResult> launch(const LaunchPlan& plan) override {
    std::vector<LaunchResult> results;
    std::size_t position = 0;
    for (std::size_t index : plan.runs) {
      const RunConfig& config = plan.manifest->runs()[index];
      fmt::print("[{}/{}] {}\n", ++position, plan.runs.size(), run_label(config));
      std::fflush(stdout);
      LaunchResult result{index, LaunchState::kDone, ""};
      const RunOutcome outcome = execute_run(config, registry_, plan.output, plan.run_options);
      if (!outcome.reused_from.empty()) {
        result.state = LaunchState::kSkipped;
        fmt::print("        reused from {} (the same configuration and seed{})\n",
                   outcome.reused_from,
                   outcome.probed_again ? "; probed again, as this manifest asks" : "");
      } else if (outcome.skipped) {
        result.state = LaunchState::kSkipped;
        fmt::print("        already finished (use --force to run it again)\n");
      } else if (outcome.claimed_elsewhere) {
        result.state = LaunchState::kClaimedElsewhere;
        result.detail = outcome.holder;
        fmt::print("        being trained by {}: left to it\n", outcome.holder);
      } else {
        if (!outcome.not_reused.empty()) fmt::print("        not reused: {}\n", outcome.not_reused);
        fmt::print("        done in {:.1f} s\n", outcome.seconds);
      }
      std::fflush(stdout);
      results.push_back(result);
    }
    return results;
  }

 private:
  Registry& registry_;
};

// A copy of the manifest as this process read it, for its workers: editing the manifest while a
// sweep runs must not change the runs it has yet to start. It keeps the manifest's file name,
// from which a manifest without [experiment] name takes its name. Removed when the sweep ends,
// or, after a sweep killed with SIGKILL, by the next sweep on the same host.
class ManifestSnapshot {
 public:
  // `jobs`, the runs at a time, is recorded beside it for `pelab status`'s estimate.
  ManifestSnapshot(const std::string& manifest, const std::string& experiment_dir, int jobs)
      : dir_(ExperimentFolder(experiment_dir)
                 .manifest_snapshot_folder(RunClaim::this_host(), ::getpid())),
        path_((fs::path(dir_) / fs::path(manifest).filename()).string()),
        jobs_path_((fs::path(dir_) / kLaunchedJobsFile).string()) {
    remove_stale(experiment_dir);
    fs::create_directories(dir_);
    write_file_atomically(path_, read_file(manifest));
    write_file_atomically(jobs_path_, std::to_string(jobs));
  }
  ~ManifestSnapshot() {
    boost::system::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  ManifestSnapshot(const ManifestSnapshot&) = delete;
  ManifestSnapshot& operator=(const ManifestSnapshot&) = delete;
  const std::string& dir() const { return dir_; }
  const std::string& path() const { return path_; }
  /// Every file it holds.
  std::vector<std::string> files() const { return {path_, jobs_path_}; }

 private:
  // The snapshots of this host's sweeps whose process is gone.
  static void remove_stale(const std::string& experiment_dir) {
    boost::system::error_code ignored;
    std::vector<fs::path> stale;
    for (fs::directory_iterator it(experiment_dir, ignored), end; !ignored && it != end;
         it.increment(ignored)) {
      if (is_stale_local_snapshot(it->path().filename().string())) stale.push_back(it->path());
    }
    for (const auto& dir : stale)
      fs::remove_all(dir, ignored);
  }

  std::string dir_;
  std::string path_;
  std::string jobs_path_;
};

// The file descriptor on which a worker writes its progress (RunOptions::progress_fd).
constexpr int kProgressFd = 3;

// Columns of the terminal on stderr (0 when it is not one or does not say).
std::size_t terminal_width() {
  winsize size{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) != 0) return 0;
  return size.ws_col;
}

// Starts a worker with `args`; with `progress`, the read end of a pipe whose write end is the
// worker's kProgressFd is stored there. Neither end leaks into other workers (close-on-exec).
pid_t spawn_worker(std::vector<std::string>& args, int* progress) {
  std::vector<char*> argv;
  for (auto& arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  int ends[2] = {-1, -1};
  if (progress != nullptr) {
    PELAB_CHECK(::pipe2(ends, O_CLOEXEC) == 0, "cannot make a pipe for a worker's progress ({})",
                std::strerror(errno));
    // dup2 onto the same number would keep close-on-exec: the write end must not be that number.
    if (ends[1] == kProgressFd) {
      const int moved = ::fcntl(ends[1], F_DUPFD_CLOEXEC, kProgressFd + 1);
      ::close(ends[1]);
      ends[1] = moved;
    }
    ::posix_spawn_file_actions_adddup2(&actions, ends[1], kProgressFd);
  }
  pid_t pid = 0;
  const int error = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  if (progress != nullptr) {
    ::close(ends[1]);
    if (error == 0) {
      *progress = ends[0];
    } else {
      ::close(ends[0]);
    }
  }
  PELAB_CHECK(error == 0, "cannot start a worker process ({}: {})", argv[0], std::strerror(error));
  return pid;
}

// The command line of the worker that trains run `index`: `base` selecting that run, with its
// share of the pool's cores (what a run whose train.threads is 0 uses).
std::vector<std::string> worker_command(const std::vector<std::string>& base, std::size_t index,
                                        const CoreShare& share, bool show) {
  std::vector<std::string> args = base;
  args.insert(args.end(), {"--only", std::to_string(index), "--quiet", "--core-share",
                           std::to_string(share.cores)});
  if (show) args.insert(args.end(), {"--progress-fd", std::to_string(kProgressFd)});
  return args;
}

// The worker processes of one sweep in flight: starts them, feeds their progress to the board
// and records how each ended, in the plan's order.
class RunningWorkers {
 public:
  RunningWorkers(const LaunchPlan& plan, SweepInterruption& interruption, ProgressBoard& board)
      : plan_(plan), interruption_(interruption), board_(board), results_(plan.runs.size()) {}

  std::size_t size() const { return running_.size(); }
  bool empty() const { return running_.empty(); }
  std::vector<LaunchResult> take_results() { return std::move(results_); }

  // Starts the worker of the plan's run at `position`; with `show`, it reports on a pipe.
  void start(std::size_t position, std::vector<std::string> args, bool show) {
    Worker worker;
    worker.position = position;
    const pid_t pid = spawn_worker(args, show ? &worker.progress : nullptr);
    interruption_.add_worker(pid);
    running_[pid] = worker;
    board_.start(pid, run_label(plan_.manifest->runs()[plan_.runs[position]]));
    board_.redraw(/*now=*/true);
  }

  // Waits for the next thing to happen: progress from a worker (up to a second), or its end.
  void wait() {
    std::vector<pollfd> pipes;
    std::vector<pid_t> owners;
    for (const auto& [pid, worker] : running_) {
      if (worker.progress < 0) continue;
      pipes.push_back({worker.progress, POLLIN, 0});
      owners.push_back(pid);
    }
    if (pipes.empty()) {
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, 0);
      if (pid > 0) reaped(pid, status);
      return;
    }
    if (::poll(pipes.data(), pipes.size(), 1000) > 0) {
      for (std::size_t i = 0; i < pipes.size(); ++i) {
        if (pipes[i].revents != 0) drain(owners[i], running_.at(owners[i]));
      }
    }
    int status = 0;
    for (pid_t pid; (pid = ::waitpid(-1, &status, WNOHANG)) > 0;)
      reaped(pid, status);
    board_.redraw();
  }

 private:
  struct Worker {
    std::size_t position = 0;  // in the plan
    int progress = -1;         // the read end of its pipe, -1 once closed
  };

  void drain(pid_t pid, Worker& worker) {
    char buffer[4096];
    const ssize_t n = ::read(worker.progress, buffer, sizeof buffer);
    if (n > 0) {
      board_.feed(pid, std::string(buffer, static_cast<std::size_t>(n)));
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      ::close(worker.progress);
      worker.progress = -1;
    }
  }

  void reaped(pid_t pid, int status) {
    interruption_.remove_worker(pid);
    Worker& worker = running_.at(pid);
    while (worker.progress >= 0)
      drain(pid, worker);  // what it wrote before it ended
    LaunchResult& result = results_[worker.position];
    result.index = plan_.runs[worker.position];
    running_.erase(pid);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.state = code == 0                       ? LaunchState::kDone
                   : code == kExitReused           ? LaunchState::kSkipped
                   : code == kExitClaimedElsewhere ? LaunchState::kClaimedElsewhere
                                                   : LaunchState::kFailed;
    const char* word = code == 0             ? "done"
                       : code == kExitReused ? "reused a finished run of the same training"
                       : code == kExitClaimedElsewhere ? "being trained by another process"
                                                       : "FAILED";
    board_.finish(pid, fmt::format("[{}/{}] {}: {}", ++done_, plan_.runs.size(),
                                   run_label(plan_.manifest->runs()[result.index]), word));
  }

  const LaunchPlan& plan_;
  SweepInterruption& interruption_;
  ProgressBoard& board_;
  std::map<pid_t, Worker> running_;
  std::vector<LaunchResult> results_;
  std::size_t done_ = 0;
};

class ProcessPoolLauncher : public Launcher {
 public:
  ProcessPoolLauncher(int jobs, std::vector<std::string> command_line)
      : jobs_(jobs), command_line_(std::move(command_line)) {}

  std::vector<LaunchResult> launch(const LaunchPlan& plan) override {
    const Manifest& manifest = *plan.manifest;
    const std::string experiment_dir = ExperimentFolder::of(plan.output, manifest.name()).dir();
    const ManifestSnapshot snapshot(plan.manifest_path, experiment_dir, jobs_);
    SweepInterruption interruption(snapshot.files(), snapshot.dir());
    const std::vector<std::string> base = worker_arguments(plan, snapshot.path());
    // Each worker gets an equal share of the cores (what a run whose train.threads is 0 uses).
    const CoreShare share = plan.run_options.cores.value_or(CoreShare::of_this_process())
                                .split(jobs_, fmt::format("-j {} workers", jobs_));

    // The workers report each epoch on a pipe (fd kProgressFd in the worker); the parent alone
    // writes to the terminal. --quiet: no pipes, no board.
    const bool show = plan.run_options.progress;
    ProgressBoard board(stderr, stdout, show && ::isatty(STDERR_FILENO) != 0, terminal_width(),
                        plan.runs.size(), static_cast<std::size_t>(jobs_));
    RunningWorkers workers(plan, interruption, board);
    std::size_t next = 0;
    const std::size_t total = plan.runs.size();
    while (next < total || !workers.empty()) {
      if (next < total && workers.size() < static_cast<std::size_t>(jobs_)) {
        const std::size_t index = plan.runs[next];
        workers.start(next++, worker_command(base, index, share, show), show);
      } else {
        workers.wait();
      }
    }
    return workers.take_results();
  }

 private:
  // This process's command line without what selects runs (-j, --shard), with the snapshot in
  // place of the manifest and this very executable as the program.
  std::vector<std::string> worker_arguments(const LaunchPlan& plan,
                                            const std::string& snapshot) const {
    std::vector<std::string> base;
    bool manifest_replaced = false;
    for (std::size_t i = 0; i < command_line_.size(); ++i) {
      const std::string& arg = command_line_[i];
      if (arg == "--jobs" || arg == "-j" || arg == "--shard") {
        ++i;  // and its value
        continue;
      }
      if (arg.rfind("--jobs=", 0) == 0 || arg.rfind("--shard=", 0) == 0 ||
          (arg.rfind("-j", 0) == 0 && arg.size() > 2))
        continue;
      if (!manifest_replaced && i > 0 && arg == plan.manifest_path) {
        base.push_back(snapshot);
        manifest_replaced = true;
        continue;
      }
      base.push_back(arg);
    }
    base[0] = fs::read_symlink("/proc/self/exe").string();
    return base;
  }

  int jobs_;
  std::vector<std::string> command_line_;
};

}  // namespace

std::unique_ptr<Launcher> make_sequential_launcher(Registry& registry) {
  return std::make_unique<SequentialLauncher>(registry);
}

std::unique_ptr<Launcher> make_process_pool_launcher(int jobs,
                                                     std::vector<std::string> command_line) {
  return std::make_unique<ProcessPoolLauncher>(jobs, std::move(command_line));
}

}  // namespace pelab::cli
