#include "status_command.h"

#include <map>

#include <fmt/format.h>

#include "launch/sweep_status.h"
#include "pelab/io/file_io.h"

namespace pelab::cli {

namespace {

std::string epoch_text(const RunStatus& status) {
  if (status.epoch < 0) return "-";
  if (status.epochs < 0) return std::to_string(status.epoch);
  return fmt::format("{}/{}", status.epoch, status.epochs);
}

std::string note_text(const RunStatus& status) {
  switch (status.state) {
    case RunState::kRunning: {
      const ClaimOwner& owner = *status.owner;
      return fmt::format("{}, heartbeat {} ago", owner.describe(),
                         format_duration(owner.heartbeat_age()));
    }
    case RunState::kFailed: {
      std::string error = status.error;
      if (const auto newline = error.find('\n'); newline != std::string::npos)
        error = error.substr(0, newline) + " ...";
      return error;
    }
    case RunState::kInterrupted:
      return "resumes from its checkpoint when run again";
    default:
      return "";
  }
}

}  // namespace

StatusCommand::StatusCommand(CLI::App& app)
    : Command(app, "status",
              "Show where each run of an experiment stands: done, running (where, how far, ETA), "
              "failed "
              "(why), interrupted or pending, and an estimate of the time left. Exit status 0 when "
              "every "
              "run is done") {
  command_->add_option("dir", dir_, "The experiment folder (<out>/<experiment>)")->required();
}

int StatusCommand::execute() {
  const std::vector<RunStatus> statuses = sweep_status(dir_);
  std::size_t width = 3;
  for (const auto& status : statuses)
    width = std::max(width, status.dir.size());
  std::map<RunState, std::size_t> counts;
  fmt::print("{:<{}}  {:<11}  {:<9}  {:<7}  {}\n", "RUN", width, "STATE", "EPOCH", "ETA",
             "WHERE / WHY");
  for (const auto& status : statuses) {
    ++counts[status.state];
    const std::string eta =
        status.state == RunState::kRunning ? format_duration(status.owner->eta_seconds) : "-";
    fmt::print("{:<{}}  {:<11}  {:<9}  {:<7}  {}\n", status.dir, width, to_string(status.state),
               epoch_text(status), eta, note_text(status));
  }
  fmt::print("\n{} run(s): {} done, {} running, {} failed, {} interrupted, {} pending\n",
             statuses.size(), counts[RunState::kDone], counts[RunState::kRunning],
             counts[RunState::kFailed], counts[RunState::kInterrupted], counts[RunState::kPending]);
  if (const auto estimate = estimate_remaining(statuses, launched_jobs(dir_))) {
    const std::string own_points = estimate->runs_at_their_points_pace == 0
                                       ? ""
                                       : fmt::format("; {} run(s) at their own point's pace",
                                                     estimate->runs_at_their_points_pace);
    fmt::print(
        "about {} left at {} run(s) at a time (the pace of {}, {:.3g} s an epoch{}; an "
        "estimate)\n",
        format_duration(estimate->seconds_left), estimate->at_a_time, estimate->pace_source,
        estimate->seconds_per_epoch, own_points);
  }
  return counts[RunState::kDone] == statuses.size() ? 0 : 1;
}

}  // namespace pelab::cli
