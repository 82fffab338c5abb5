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

#include "pelab/error.h"
#include "pelab/manifest.h"
#include "pelab/run_io.h"

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

class SlurmLauncher : public Launcher {
 public:
  explicit SlurmLauncher(SlurmOptions options) : options_(std::move(options)) {}

  std::vector<LaunchResult> launch(const LaunchPlan& plan) override {
    const Manifest& manifest = *plan.manifest;
    const fs::path output = fs::absolute(plan.output);
    const fs::path experiment_dir = output / manifest.name();
    const fs::path slurm_dir = experiment_dir / "slurm";
    const fs::path manifest_copy = slurm_dir / fs::path(plan.manifest_path).filename();
    const std::string pelab = fs::read_symlink("/proc/self/exe").string();
    const std::size_t total = manifest.runs().size();

    std::vector<std::string> run_command_line = {pelab};
    for (const auto& folder : options_.plugin_folders) {
      run_command_line.push_back("--plugin-path");
      run_command_line.push_back(fs::absolute(folder).string());
    }
    run_command_line.insert(run_command_line.end(),
                            {"run", manifest_copy.string(), "--out", output.string()});
    for (const auto& override : plan.overrides) {
      run_command_line.push_back("--set");
      run_command_line.push_back(override);
    }
    run_command_line.push_back("--quiet");
    if (plan.run_options.force) run_command_line.push_back("--force");

    // The same sweep again, failed and interrupted runs only: the overrides are part of what
    // names the experiment and its runs, so the hint keeps them.
    std::vector<std::string> resubmit_command_line = {"pelab", "slurm", plan.manifest_path, "--out",
                                                      plan.output};
    for (const auto& override : plan.overrides) {
      resubmit_command_line.push_back("--set");
      resubmit_command_line.push_back(override);
    }
    resubmit_command_line.push_back("--resubmit-failed");
    const std::string sweep_script = fmt::format(
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
        fmt::arg("resubmit", shell_line(resubmit_command_line)),
        fmt::arg("output", output.string()), fmt::arg("name", manifest.name()),
        fmt::arg("total", total), fmt::arg("script", (slurm_dir / "sweep.sbatch").string()),
        fmt::arg("logs", (slurm_dir / "logs").string()),
        fmt::arg("cwd", fs::current_path().string()), fmt::arg("cpus", options_.cpus_per_task),
        fmt::arg("resources", resource_lines()), fmt::arg("command", shell_line(run_command_line)));
    const std::string report_script = fmt::format(
        "#!/bin/bash\n"
        "# Written by `pelab slurm`: the report of '{name}' once its array has ended.\n"
        "#SBATCH --job-name=pelab-{name}-report\n"
        "#SBATCH --output={logs}/report-%j.out\n"
        "#SBATCH --chdir={cwd}\n"
        "#SBATCH --cpus-per-task=1\n"
        "{resources}"
        "set -euo pipefail\n"
        "exec {command}\n",
        fmt::arg("name", manifest.name()), fmt::arg("logs", (slurm_dir / "logs").string()),
        fmt::arg("cwd", fs::current_path().string()), fmt::arg("resources", resource_lines()),
        fmt::arg("command", shell_line({pelab, "report", experiment_dir.string()})));

    std::string array = slurm_array_list(plan.runs);
    if (options_.max_parallel > 0) array += fmt::format("%{}", options_.max_parallel);
    const std::vector<std::string> submit_sweep = {"sbatch", "--parsable", "--array=" + array,
                                                   (slurm_dir / "sweep.sbatch").string()};
    std::vector<std::string> submit_report = {"sbatch", "--parsable",
                                              "--dependency=afterany:<array job>",
                                              (slurm_dir / "report.sbatch").string()};
    std::vector<LaunchResult> results;
    if (options_.dry_run) {
      std::printf("# %s\n%s\n# %s\n%s\n# submit:\n%s\n%s\n", (slurm_dir / "sweep.sbatch").c_str(),
                  sweep_script.c_str(), (slurm_dir / "report.sbatch").c_str(),
                  report_script.c_str(), shell_line(submit_sweep).c_str(),
                  shell_line(submit_report).c_str());
      return results;
    }

    fs::create_directories(slurm_dir / "logs");
    write_file_atomically(manifest_copy.string(), read_file(plan.manifest_path));
    write_file_atomically((slurm_dir / "sweep.sbatch").string(), sweep_script);
    write_file_atomically((slurm_dir / "report.sbatch").string(), report_script);
    const std::string array_job = job_id(run_command(submit_sweep), "job array");
    submit_report[2] = "--dependency=afterany:" + array_job;
    const std::string report_job = job_id(run_command(submit_report), "report job");
    std::printf(
        "submitted job array %s (%zu task(s): --array=%s) and report job %s (after the "
        "array ends)\n",
        array_job.c_str(), plan.runs.size(), array.c_str(), report_job.c_str());
    for (std::size_t index : plan.runs)
      results.push_back(
          {index, LaunchState::kSubmitted, fmt::format("{}_{}", array_job, index + 1)});
    return results;
  }

 private:
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
