#pragma once

// How a run computes on the host it runs on: its intra-op threads and whether subnormal floats are
// flushed. Decided once, here, from the run's configuration (train.threads, train.flush_subnormals)
// and the share of the cores its process was given (a Slurm task's CPUs, a `-j` worker's share,
// the ranks on one host); the launchers hand the share down, the run resolves and applies it.

#include <cstdint>
#include <string>

#include "pelab/base/export.h"

namespace pelab {

/// The cores a process may use for a run whose configuration leaves its threads to the machine
/// (train.threads = 0), and where that figure comes from.
struct PELAB_API CoreShare {
  std::int64_t cores = 1;  ///< at least 1
  std::string source;      ///< for the run's log: "the machine's 8 cores", "SLURM_CPUS_PER_TASK"
  /// Set by a scheduler for this process alone (Slurm's CPUs per task): not to be split again
  /// between the ranks it already placed.
  bool from_scheduler = false;

  /// This process's share: Slurm's CPUs per task inside a Slurm job, else every core.
  static CoreShare of_this_process();
  /// A share of `cores` cores given by a parent process (a `-j` worker's).
  static CoreShare given(std::int64_t cores, const std::string& source);
  /// This share split `ways` ways, at least one core each, e.g. "-j 3 workers".
  CoreShare split(std::int64_t ways, const std::string& between) const;
};

/// How one run computes, resolved once.
struct PELAB_API HostExecution {
  std::int64_t threads = 1;
  std::string threads_source;  ///< "train.threads", or the share's source
  bool flush_subnormals = true;

  /// `configured_threads` > 0 is taken as it is; 0 takes the share's cores.
  static HostExecution resolve(std::int64_t configured_threads, bool flush_subnormals,
                               const CoreShare& share);
  /// Sets LibTorch's intra-op threads and the subnormal mode of this thread and ATen's pool.
  void apply() const;
  /// "2 threads (train.threads), subnormals flushed"
  std::string text() const;
};

}  // namespace pelab
