#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "pelab/base/export.h"

namespace pelab {

/// Where the ranks of one data-parallel run find each other, read from the variables that the
/// launchers people use already set: torchrun's (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
/// MASTER_ADDR, MASTER_PORT), which `pelab run --nproc-per-node` sets too, or Slurm's under
/// `srun` (SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID, the first host of
/// SLURM_STEP_NODELIST).
struct PELAB_API Rendezvous {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;  // ranks on this host, which share its cores
  std::string master_addr = "127.0.0.1";
  std::uint16_t master_port = 29500;
  /// torchrun hosts the store itself (TORCHELASTIC_USE_AGENT_STORE): rank 0 then joins it as a
  /// client instead of serving it.
  bool agent_store = false;
  std::string source;  // "torchrun variables" or "Slurm (srun)", for messages

  using Lookup = std::function<const char*(const char*)>;
  /// The rendezvous the environment describes, or none when this process is a run's only rank.
  /// Throws pelab::Error naming the variable when one is malformed or they contradict each other.
  static std::optional<Rendezvous> from_environment(const Lookup& lookup);
  static std::optional<Rendezvous> from_environment();

  /// The first host of a Slurm host list: "node[07-09,12],gpu3" -> "node07".
  static std::string first_host(const std::string& nodelist);

  /// A TCP port on the loopback interface that no socket holds now, for ranks started on this
  /// host (another process may take it before rank 0 does, as with torchrun's).
  static std::uint16_t free_loopback_port();

  /// "rank 1 of 4".
  std::string describe() const;
};

}  // namespace pelab
