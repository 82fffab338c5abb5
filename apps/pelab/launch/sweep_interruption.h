#pragma once

// What `pelab run -j` must undo when it is interrupted (Ctrl-C, kill, a closed terminal): its
// workers keep no reason to run, and its manifest snapshot no reason to stay.

#include <sys/types.h>

#include <string>
#include <vector>

namespace pelab::cli {

/// While alive, SIGINT, SIGTERM and SIGHUP make this process forward the signal to the workers
/// it was told of, remove the snapshot files, and then die of the signal as it would have. The
/// workers' runs resume from their checkpoints next time. One at a time per process.
class SweepInterruption {
 public:
  /// The `snapshot_files` (at most 4) inside `snapshot_dir`: all removed on a signal.
  SweepInterruption(const std::vector<std::string>& snapshot_files,
                    const std::string& snapshot_dir);
  ~SweepInterruption();  // restores the previous handlers
  SweepInterruption(const SweepInterruption&) = delete;
  SweepInterruption& operator=(const SweepInterruption&) = delete;

  /// A worker started / reaped. At most 1024 at once (the most `--jobs` allows).
  void add_worker(pid_t pid);
  void remove_worker(pid_t pid);
};

}  // namespace pelab::cli
