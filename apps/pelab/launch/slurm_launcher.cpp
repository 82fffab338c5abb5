#include "launch/slurm_launcher.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>

#include <fmt/format.h>
#include <boost/filesystem.hpp>

#include "pelab/base/error.h"
#include "pelab/config/manifest.h"
#include "pelab/io/file_io.h"
#include "pelab/runs/experiment_folder.h"

extern char** environ;

namespace pelab::cli {

namespace fs = boost::filesystem;

namespace {

// A word the shell reads back as itself.
std::string shell_quote(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789_-./=:,+%@") == std::string::npos)
    return word;
  std::string quoted = "'";
  for (char c : word)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string shell_line(const std::vector<std::string>& words) {
  std::string line;
  for (const auto& word : words)
    line += (line.empty() ? "" : " ") + shell_quote(word);
  return line;
}

struct CommandResult {
  int status = -1;
  std::string output;  // stdout and stderr
};

// Runs `argv` (found on PATH) and collects its output.
CommandResult run_command(const std::vector<std::string>& words) {
  int pipe_fds[2];
  PELAB_CHECK(::pipe(pipe_fds) == 0, "cannot create a pipe: {}", std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  std::vector<std::string> args = words;
  std::vector<char*> argv;
  for (auto& arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  CommandResult result;
  if (spawned != 0) {
    ::close(pipe_fds[0]);
    throw Error(
        fmt::format("cannot run {}: {}; is Slurm installed on this machine (the sbatch "
                    "command on PATH)?",
                    words.front(), std::strerror(spawned)));
  }
  char buffer[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof(buffer))) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    result.output.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// "1234" from sbatch --parsable's "1234" or "1234;cluster".
std::string job_id(const CommandResult& result, const std::string& what) {
  std::string id = result.output.substr(0, result.output.find_first_of(";\n"));
  PELAB_CHECK(
      result.status == 0 && !id.empty() && id.find_first_not_of("0123456789") == std::string::npos,
      "sbatch refused the {}: {}", what,
      result.output.empty() ? fmt::format("exit status {}", result.status) : result.output);
  return id;
}

std::string now_text() {
  const std::time_t now = std::time(nullptr);
  char text[64];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S %Z", std::localtime(&now));
  return text;
}

// Where a submission's files go: <output>/<experiment>/slurm/.
struct SlurmFiles {
  fs::path output;  // absolute
  fs::path experiment_dir;
  fs::path slurm_dir;
  fs::path manifest_copy;

  fs::path sweep_script() const { return slurm_dir / "sweep.sbatch"; }
  fs::path report_script() const { return slurm_dir / "report.sbatch"; }
  fs::path logs() const { return slurm_dir / "logs"; }
};

SlurmFiles slurm_files(const LaunchPlan& plan) {
  SlurmFiles files;
  files.output = fs::absolute(plan.output);
  const ExperimentFolder experiment =
      ExperimentFolder::of(files.output.string(), plan.manifest->name());
  files.experiment_dir = experiment.dir();
  files.slurm_dir = experiment.slurm_folder();
  files.manifest_copy = files.slurm_dir / fs::path(plan.manifest_path).filename();
  return files;
}

// What each array task runs (before its --shard): `pelab run` on the manifest's copy.
std::vector<std::string> run_command_line(const std::string& pelab, const SlurmOptions& options,
                                          const LaunchPlan& plan, const SlurmFiles& files) {
  std::vector<std::string> words = {pelab};
  for (const auto& folder : options.plugin_folders) {
    words.push_back("--plugin-path");
    words.push_back(fs::absolute(folder).string());
  }
  words.insert(words.end(), {"run", files.manifest_copy.string(), "--out", files.output.string()});
  for (const auto& override : plan.overrides) {
    words.push_back("--set");
    words.push_back(override);
  }
  words.push_back("--quiet");
  if (plan.run_options.force) words.push_back("--force");
  for (const auto& folder : plan.run_options.reuse_from) {
    words.push_back("--reuse");
    words.push_back(fs::absolute(folder).string());
  }
  return words;
}

// The same sweep again, failed and interrupted runs only: the overrides are part of what
// names the experiment and its runs, so the hint keeps them.
std::vector<std::string> resubmit_command_line(const LaunchPlan& plan) {
  std::vector<std::string> words = {"pelab", "slurm", plan.manifest_path, "--out", plan.output};
  for (const auto& override : plan.overrides) {
    words.push_back("--set");
    words.push_back(override);
  }
  words.push_back("--resubmit-failed");
  return words;
}

// The submission as a dry run shows it: the scripts, then the commands that would submit them.
void print_dry_run(const SlurmFiles& files, const std::string& sweep_script,
                   const std::string& report_script, const std::vector<std::string>& submit_sweep,
                   const std::vector<std::string>& submit_report) {
  fmt::print("# {}\n{}\n# {}\n{}\n# submit:\n{}\n{}\n", files.sweep_script().string(), sweep_script,
             files.report_script().string(), report_script, shell_line(submit_sweep),
             shell_line(submit_report));
}

void write_scripts(const LaunchPlan& plan, const SlurmFiles& files, const std::string& sweep_script,
                   const std::string& report_script) {
  fs::create_directories(files.logs());
  write_file_atomically(files.manifest_copy.string(), read_file(plan.manifest_path));
  write_file_atomically(files.sweep_script().string(), sweep_script);
  write_file_atomically(files.report_script().string(), report_script);
}

// Submits the array, then the report job that depends on it; a result per run, its array task.
std::vector<LaunchResult> submit_jobs(const LaunchPlan& plan,
                                      const std::vector<std::string>& submit_sweep,
                                      std::vector<std::string> submit_report,
                                      const std::string& array) {
  const std::string array_job = job_id(run_command(submit_sweep), "job array");
  submit_report[2] = "--dependency=afterany:" + array_job;
  const std::string report_job = job_id(run_command(submit_report), "report job");
  fmt::print(
      "submitted job array {} ({} task(s): --array={}) and report job {} (after the array "
      "ends)\n",
      array_job, plan.runs.size(), array, report_job);
  std::vector<LaunchResult> results;
  for (std::size_t index : plan.runs)
    results.push_back({index, LaunchState::kSubmitted, fmt::format("{}_{}", array_job, index + 1)});
  return results;
}

class SlurmLauncher : public Launcher {
 public:
  explicit SlurmLauncher(SlurmOptions options) : options_(std::move(options)) {}

  std::vector<LaunchResult> launch(const LaunchPlan& plan) override {
    const SlurmFiles files = slurm_files(plan);
    const std::string pelab = fs::read_symlink("/proc/self/exe").string();
    const std::string sweep = sweep_script(plan, files, pelab);
    const std::string report = report_script(plan, files, pelab);

    std::string array = slurm_array_list(plan.runs);
    if (options_.max_parallel > 0) array += fmt::format("%{}", options_.max_parallel);
    const std::vector<std::string> submit_sweep = {"sbatch", "--parsable", "--array=" + array,
                                                   files.sweep_script().string()};
    const std::vector<std::string> submit_report = {"sbatch", "--parsable",
                                                    "--dependency=afterany:<array job>",
                                                    files.report_script().string()};
    if (options_.dry_run) {
      print_dry_run(files, sweep, report, submit_sweep, submit_report);
      return {};
    }

    write_scripts(plan, files, sweep, report);
    return submit_jobs(plan, submit_sweep, submit_report, array);
  }

 private:
  // sweep.sbatch: a task per run, each `pelab run ... --shard I/N`.
  std::string sweep_script(const LaunchPlan& plan, const SlurmFiles& files,
                           const std::string& pelab) const {
    const Manifest& manifest = *plan.manifest;
    const std::size_t total = manifest.runs().size();
    const std::vector<std::string> command = run_command_line(pelab, options_, plan, files);
    const std::vector<std::string> resubmit = resubmit_command_line(plan);
    return fmt::format(
        "#!/bin/bash\n"
        "# Written by `pelab slurm` on {date} for {manifest}:\n"
        "# one array task per run of the experiment '{name}' ({total} runs); task I trains run I\n"
        "# (shard I/{total}). Runs checkpoint: a task killed at its time limit resumes when it is\n"
        "# submitted again. Re-submit some runs with\n"
        "#   sbatch --array=LIST {script}\n"
        "# or let pelab pick the failed and interrupted ones (with the same resource options):\n"
        "#   {resubmit}\n"
        "#SBATCH --job-name=pelab-{name}\n"
        "#SBATCH --output={logs}/%A_%a.out\n"
        "#SBATCH --chdir={cwd}\n"
        "#SBATCH --cpus-per-task={cpus}\n"
        "{resources}"
        "set -euo pipefail\n"
        "exec {command} --shard \"${{SLURM_ARRAY_TASK_ID}}/{total}\"\n",
        fmt::arg("date", now_text()), fmt::arg("manifest", plan.manifest_path),
        fmt::arg("resubmit", shell_line(resubmit)), fmt::arg("output", files.output.string()),
        fmt::arg("name", manifest.name()), fmt::arg("total", total),
        fmt::arg("script", files.sweep_script().string()), fmt::arg("logs", files.logs().string()),
        fmt::arg("cwd", fs::current_path().string()), fmt::arg("cpus", options_.cpus_per_task),
        fmt::arg("resources", resource_lines()), fmt::arg("command", shell_line(command)));
  }

  // report.sbatch: `pelab report` on the experiment once its array has ended.
  std::string report_script(const LaunchPlan& plan, const SlurmFiles& files,
                            const std::string& pelab) const {
    return fmt::format(
        "#!/bin/bash\n"
        "# Written by `pelab slurm`: the report of '{name}' once its array has ended.\n"
        "#SBATCH --job-name=pelab-{name}-report\n"
        "#SBATCH --output={logs}/report-%j.out\n"
        "#SBATCH --chdir={cwd}\n"
        "#SBATCH --cpus-per-task=1\n"
        "{resources}"
        "set -euo pipefail\n"
        "exec {command}\n",
        fmt::arg("name", plan.manifest->name()), fmt::arg("logs", files.logs().string()),
        fmt::arg("cwd", fs::current_path().string()), fmt::arg("resources", resource_lines()),
        fmt::arg("command", shell_line({pelab, "report", files.experiment_dir.string()})));
  }

  std::string resource_lines() const {
    std::string lines;
    auto add = [&](const char* option, const std::string& value) {
      if (!value.empty()) lines += fmt::format("#SBATCH --{}={}\n", option, value);
    };
    add("partition", options_.partition);
    add("time", options_.time);
    add("mem", options_.mem);
    add("account", options_.account);
    for (const auto& option : options_.sbatch_options)
      lines += fmt::format("#SBATCH {}\n", option);
    return lines;
  }

  SlurmOptions options_;
};

}  // namespace

std::string slurm_array_list(const std::vector<std::size_t>& runs) {
  std::string list;
  for (std::size_t i = 0; i < runs.size();) {
    std::size_t j = i;
    while (j + 1 < runs.size() && runs[j + 1] == runs[j] + 1)
      ++j;
    if (!list.empty()) list += ",";
    list +=
        j == i ? fmt::format("{}", runs[i] + 1) : fmt::format("{}-{}", runs[i] + 1, runs[j] + 1);
    i = j + 1;
  }
  return list;
}

namespace {

// "a\ntouch /tmp/x": the value as a reader can see it, control characters escaped.
std::string escaped(const std::string& value) {
  std::string out;
  for (const unsigned char c : value) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

void check_script_value(const std::string& option, const std::string& value) {
  const bool control = std::any_of(value.begin(), value.end(),
                                   [](unsigned char c) { return c < 0x20 || c == 0x7f; });
  PELAB_CHECK(!control,
              "{} '{}': a control character in a value that pelab writes into a line of the sbatch "
              "scripts would end that line and start a line of shell of its own; give the value "
              "on one line, without control characters",
              option, escaped(value));
}

}  // namespace

void check_script_values(const SlurmOptions& options, const std::string& output,
                         const std::string& manifest_path) {
  check_script_value("--partition", options.partition);
  check_script_value("--time", options.time);
  check_script_value("--mem", options.mem);
  check_script_value("--account", options.account);
  for (const std::string& option : options.sbatch_options)
    check_script_value("--sbatch-option", option);
  for (const std::string& folder : options.plugin_folders)
    check_script_value("--plugin-path", folder);
  check_script_value("--out", output);
  check_script_value("the manifest", manifest_path);
  check_script_value("the working folder", fs::current_path().string());
}

std::unique_ptr<Launcher> make_slurm_launcher(SlurmOptions options) {
  return std::make_unique<SlurmLauncher>(std::move(options));
}

}  // namespace pelab::cli
