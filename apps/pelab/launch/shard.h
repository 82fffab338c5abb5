#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace pelab::cli {

/// The K-th of N interleaved slices of a sweep's runs (1 <= K <= N): runs K-1, K-1+N, K-1+2N, ...
struct Shard {
  std::size_t index = 1;  // K
  std::size_t count = 1;  // N
};

/// Parses "K/N"; an Error says what is wrong.
Shard parse_shard(const std::string& text);

/// The shard of a Slurm array task: K = ID - MIN + 1 and N = MAX - MIN + 1 from
/// SLURM_ARRAY_TASK_ID, _MIN and _MAX (N from SLURM_ARRAY_TASK_COUNT when MAX is not set). nullopt
/// outside an array task.
std::optional<Shard> shard_from_slurm_environment();

/// The indices of the runs in `shard`, out of `total`.
std::vector<std::size_t> shard_runs(std::size_t total, const Shard& shard);

}  // namespace pelab::cli
