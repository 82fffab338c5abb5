#pragma once

// What `pelab run -j` shows while its workers train: they report each epoch to the parent
// (EpochProgress lines on a pipe), and the parent alone writes to the terminal, so that workers
// sharing it never garble each other's lines.

#include <cstddef>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "pelab/runs/run.h"

namespace pelab::cli {

class ProgressBoard {
 public:
  /// Progress goes to `out`, the lines that stay (a run's end) to `lines`. `live`: redraw a block
  /// of lines in place on `out`, one per running run and one for the sweep, each cut to `width`
  /// columns so that none wraps (a terminal); otherwise print a line per evaluation (a log).
  /// `total`: the sweep's runs here, `jobs`: how many run at once.
  ProgressBoard(std::FILE* out, std::FILE* lines, bool live, std::size_t width, std::size_t total,
                std::size_t jobs);
  ~ProgressBoard();
  ProgressBoard(const ProgressBoard&) = delete;
  ProgressBoard& operator=(const ProgressBoard&) = delete;

  /// A run started in `slot` (any key that identifies the worker).
  void start(int slot, const std::string& label);
  /// Bytes from that worker's pipe: complete lines are parsed as EpochProgress and shown.
  void feed(int slot, const std::string& bytes);
  /// The run in `slot` ended; `line` ("[3/6] label: done") is printed above the live block.
  void finish(int slot, const std::string& line);
  /// Draws the live block again: at once when `now`, else at most twice a second (feeds come
  /// every epoch of every run, faster than a person reads).
  void redraw(bool now = false);

  /// The line shown for a run: "label  epoch 34/90  loss 0.4321  12.3 steps/s  ETA 1m05s".
  static std::string run_line(const std::string& label, const EpochProgress* progress);
  /// The sweep's line: runs done and running, and its estimated time left: the running runs' own
  /// ETAs and, for the runs not started yet, the mean time of a run so far, spread over `jobs`.
  std::string sweep_line() const;

 private:
  struct Running {
    std::string label;
    std::string pending;  // bytes after the last newline
    bool reported = false;
    EpochProgress last;
    double started = 0.0;  // steady-clock seconds
  };
  void clear();
  void handle_line(Running& run, const std::string& line);

  std::FILE* out_;
  std::FILE* lines_;
  bool live_;
  std::size_t width_;
  std::size_t total_;
  std::size_t jobs_;
  std::size_t finished_ = 0;
  double finished_seconds_ = 0.0;  // wall time of the runs finished here
  std::map<int, Running> running_;
  std::size_t drawn_lines_ = 0;  // of the live block on screen
  double drawn_at_ = 0.0;        // steady-clock seconds
};

}  // namespace pelab::cli
