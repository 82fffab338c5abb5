#include "launch/progress_board.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "pelab/io/file_io.h"

namespace pelab::cli {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

ProgressBoard::ProgressBoard(std::FILE* out, std::FILE* lines, bool live, std::size_t width,
                             std::size_t total, std::size_t jobs)
    : out_(out),
      lines_(lines),
      live_(live),
      width_(width),
      total_(total),
      jobs_(std::max<std::size_t>(1, jobs)) {}

ProgressBoard::~ProgressBoard() {
  clear();
  std::fflush(out_);
}

void ProgressBoard::start(int slot, const std::string& label) {
  Running& run = running_[slot];
  run = Running{};
  run.label = label;
  run.started = now_seconds();
}

void ProgressBoard::feed(int slot, const std::string& bytes) {
  auto it = running_.find(slot);
  if (it == running_.end()) return;
  Running& run = it->second;
  run.pending += bytes;
  for (std::size_t newline; (newline = run.pending.find('\n')) != std::string::npos;) {
    handle_line(run, run.pending.substr(0, newline));
    run.pending.erase(0, newline + 1);
  }
}

void ProgressBoard::handle_line(Running& run, const std::string& line) {
  const auto progress = EpochProgress::parse(line);
  if (!progress) return;
  run.last = *progress;
  run.reported = true;
  if (live_ || progress->evaluation.empty()) return;
  // A log: one line per evaluation, with its results.
  fmt::print(out_, "{}  {}\n", run_line(run.label, &run.last), progress->evaluation);
  std::fflush(out_);
}

void ProgressBoard::finish(int slot, const std::string& line) {
  auto it = running_.find(slot);
  if (it != running_.end()) {
    finished_seconds_ += now_seconds() - it->second.started;
    running_.erase(it);
  }
  ++finished_;
  clear();
  std::fflush(out_);
  fmt::print(lines_, "{}\n", line);
  std::fflush(lines_);
  redraw(/*now=*/true);
}

std::string ProgressBoard::run_line(const std::string& label, const EpochProgress* progress) {
  if (progress == nullptr) return fmt::format("{}  starting", label);
  return fmt::format("{}  epoch {}/{}  loss {:.4f}  {:.1f} steps/s  ETA {}", label, progress->epoch,
                     progress->epochs, progress->loss, progress->steps_per_second,
                     progress->eta_seconds >= 0 ? format_duration(progress->eta_seconds) : "-");
}

std::string ProgressBoard::sweep_line() const {
  double running_left = 0.0;
  bool known = true;
  const double now = now_seconds();
  double started_seconds = 0.0;  // what the running runs will have taken, to estimate the others
  for (const auto& [slot, run] : running_) {
    if (!run.reported || run.last.eta_seconds < 0) {
      known = false;
      continue;
    }
    running_left += run.last.eta_seconds;
    started_seconds += now - run.started + run.last.eta_seconds;
  }
  const std::size_t not_started = total_ - finished_ - running_.size();
  const std::size_t measured = finished_ + running_.size();
  const double per_run =
      measured > 0 ? (finished_seconds_ + started_seconds) / static_cast<double>(measured) : 0.0;
  std::string left = "-";
  if (known && (not_started == 0 || per_run > 0)) {
    const double seconds =
        (running_left + static_cast<double>(not_started) * per_run) / static_cast<double>(jobs_);
    left = "about " + format_duration(seconds);
  }
  return fmt::format("sweep: {}/{} done, {} running, {} to start; time left {}", finished_, total_,
                     running_.size(), not_started, left);
}

void ProgressBoard::clear() {
  if (!live_ || drawn_lines_ == 0) return;
  // Up to the block's first line, and erase from there to the end of the screen.
  fmt::print(out_, "\x1b[{}F\x1b[J", drawn_lines_);
  drawn_lines_ = 0;
}

void ProgressBoard::redraw(bool now) {
  if (!live_) return;
  const double time = now_seconds();
  if (!now && time - drawn_at_ < 0.5) return;
  drawn_at_ = time;
  clear();
  const auto draw = [&](std::string line) {
    line = "  " + line;
    if (width_ > 1 && line.size() >= width_) line.resize(width_ - 1);  // never wraps
    fmt::print(out_, "{}\x1b[K\n", line);
  };
  for (const auto& [slot, run] : running_)
    draw(run_line(run.label, run.reported ? &run.last : nullptr));
  draw(sweep_line());
  drawn_lines_ = running_.size() + 1;
  std::fflush(out_);
}

}  // namespace pelab::cli
