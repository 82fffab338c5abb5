#include "launch/launcher.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <boost/filesystem.hpp>

#include "pelab/error.h"
#include "pelab/manifest.h"
#include "pelab/registry.h"
#include "pelab/run_claim.h"
#include "pelab/run_io.h"
#include "sweep_interruption.h"

extern char** environ;

namespace pelab::cli {

namespace fs = boost::filesystem;

namespace {

std::string run_label(const RunConfig& config) {
  return fmt::format("{} seed {}", config.point.empty() ? "default" : config.point,
                     static_cast<long long>(config.seed));
}

RunConfig with_default_threads(RunConfig config, std::int64_t threads) {
  if (threads > 0 && config.train.integer("threads") == 0) config.train.set("threads", threads);
  return config;
}

class SequentialLauncher : public Launcher {
 public:
  explicit SequentialLauncher(Registry& registry) : registry_(registry) {}

  std::vector<LaunchResult> launch(const LaunchPlan& plan) override {
    std::vector<LaunchResult> results;
    std::size_t position = 0;
    for (std::size_t index : plan.runs) {
      const RunConfig config =
          with_default_threads(plan.manifest->runs()[index], plan.default_threads);
      std::printf("[%zu/%zu] %s\n", ++position, plan.runs.size(), run_label(config).c_str());
      std::fflush(stdout);
      LaunchResult result{index, LaunchState::kDone, ""};
      const RunOutcome outcome = execute_run(config, registry_, plan.output, plan.run_options);
      if (outcome.skipped) {
        result.state = LaunchState::kSkipped;
        std::printf("        already finished (use --force to run it again)\n");
      } else if (outcome.claimed_elsewhere) {
        result.state = LaunchState::kClaimedElsewhere;
        result.detail = outcome.holder;
        std::printf("        being trained by %s: left to it\n", outcome.holder.c_str());
      } else {
        std::printf("        done in %.1f s\n", outcome.seconds);
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
  ManifestSnapshot(const std::string& manifest, const std::string& experiment_dir)
      : dir_((fs::path(experiment_dir) /
              fmt::format("{}{}-{}", kPrefix, RunClaim::this_host(), ::getpid()))
                 .string()),
        path_((fs::path(dir_) / fs::path(manifest).filename()).string()) {
    remove_stale(experiment_dir);
    fs::create_directories(dir_);
    write_file_atomically(path_, read_file(manifest));
  }
  ~ManifestSnapshot() {
    boost::system::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  ManifestSnapshot(const ManifestSnapshot&) = delete;
  ManifestSnapshot& operator=(const ManifestSnapshot&) = delete;
  const std::string& dir() const { return dir_; }
  const std::string& path() const { return path_; }

 private:
  static constexpr const char* kPrefix = ".manifest-";

  // The snapshots of this host's sweeps whose process is gone.
  static void remove_stale(const std::string& experiment_dir) {
    const std::string mine = kPrefix + RunClaim::this_host() + "-";
    boost::system::error_code ignored;
    std::vector<fs::path> stale;
    for (fs::directory_iterator it(experiment_dir, ignored), end; !ignored && it != end;
         it.increment(ignored)) {
      const std::string name = it->path().filename().string();
      if (name.rfind(mine, 0) != 0) continue;
      const std::string pid = name.substr(mine.size());
      if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
      if (::kill(static_cast<pid_t>(std::stol(pid)), 0) != 0 && errno == ESRCH)
        stale.push_back(it->path());
    }
    for (const auto& dir : stale)
      fs::remove_all(dir, ignored);
  }

  std::string dir_;
  std::string path_;
};

class ProcessPoolLauncher : public Launcher {
 public:
  ProcessPoolLauncher(int jobs, std::vector<std::string> command_line)
      : jobs_(jobs), command_line_(std::move(command_line)) {}

  std::vector<LaunchResult> launch(const LaunchPlan& plan) override {
    const Manifest& manifest = *plan.manifest;
    const std::string experiment_dir = (fs::path(plan.output) / manifest.name()).string();
    const ManifestSnapshot snapshot(plan.manifest_path, experiment_dir);
    SweepInterruption interruption(snapshot.path(), snapshot.dir());
    const std::vector<std::string> base = worker_arguments(plan, snapshot.path());
    // Each worker gets an equal share of the cores unless the manifest fixes its threads.
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const std::int64_t threads =
        plan.default_threads > 0
            ? plan.default_threads
            : std::max<std::int64_t>(1, static_cast<std::int64_t>(cores) / jobs_);

    std::map<pid_t, std::size_t> running;  // pid -> position in the plan
    std::vector<LaunchResult> results(plan.runs.size());
    std::size_t next = 0, done = 0;
    const std::size_t total = plan.runs.size();
    auto reap = [&] {
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, 0);
      if (pid <= 0) return;
      interruption.remove_worker(pid);
      const std::size_t position = running.at(pid);
      running.erase(pid);
      LaunchResult& result = results[position];
      result.index = plan.runs[position];
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      result.state = code == 0                       ? LaunchState::kDone
                     : code == kExitClaimedElsewhere ? LaunchState::kClaimedElsewhere
                                                     : LaunchState::kFailed;
      const char* word = code == 0                       ? "done"
                         : code == kExitClaimedElsewhere ? "being trained by another process"
                                                         : "FAILED";
      std::printf("[%zu/%zu] %s: %s\n", ++done, total,
                  run_label(manifest.runs()[result.index]).c_str(), word);
      std::fflush(stdout);
    };
    while (next < total || !running.empty()) {
      if (next < total && running.size() < static_cast<std::size_t>(jobs_)) {
        const std::size_t index = plan.runs[next];
        std::vector<std::string> args = base;
        args.insert(args.end(), {"--only", std::to_string(index), "--quiet"});
        if (manifest.runs()[index].train.integer("threads") == 0)
          args.insert(args.end(), {"--set", fmt::format("train.threads={}", threads)});
        std::vector<char*> argv;
        for (auto& arg : args)
          argv.push_back(arg.data());
        argv.push_back(nullptr);
        pid_t pid = 0;
        PELAB_CHECK(::posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) == 0,
                    "cannot start a worker process ({})", argv[0]);
        interruption.add_worker(pid);
        running[pid] = next++;
      } else {
        reap();
      }
    }
    return results;
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
