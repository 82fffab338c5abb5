#include "launch/shard.h"

#include <cstdlib>

#include <fmt/format.h>

#include "pelab/base/error.h"

namespace pelab::cli {

namespace {

std::optional<std::size_t> parse_count(const std::string& text) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return static_cast<std::size_t>(std::stoul(text));
}

std::optional<std::size_t> environment_count(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::nullopt : parse_count(value);
}

}  // namespace

Shard parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  const std::size_t index = parse_count(text.substr(0, slash)).value_or(0);
  const std::size_t count =
      slash == std::string::npos ? 0 : parse_count(text.substr(slash + 1)).value_or(0);
  PELAB_CHECK(index >= 1 && index <= count,
              "--shard '{}': expected K/N with 1 <= K <= N, e.g. --shard 2/8 for the second of "
              "eight slices",
              text);
  return Shard{index, count};
}

std::optional<Shard> shard_from_slurm_environment() {
  const auto id = environment_count("SLURM_ARRAY_TASK_ID");
  if (!id) return std::nullopt;
  const auto min = environment_count("SLURM_ARRAY_TASK_MIN");
  const auto max = environment_count("SLURM_ARRAY_TASK_MAX");
  const std::size_t first = min ? *min : 0;
  // MIN..MAX rather than COUNT: in a sparse array (--array=1,4,9) they still partition the runs.
  const auto count = max && *max >= first ? std::optional<std::size_t>(*max - first + 1)
                                          : environment_count("SLURM_ARRAY_TASK_COUNT");
  PELAB_CHECK(count && *id >= first && *id - first < *count,
              "this Slurm array task (SLURM_ARRAY_TASK_ID={}) does not say how many tasks the "
              "array has; give --shard K/N",
              *id);
  return Shard{*id - first + 1, *count};
}

std::vector<std::size_t> shard_runs(std::size_t total, const Shard& shard) {
  std::vector<std::size_t> runs;
  for (std::size_t i = shard.index - 1; i < total; i += shard.count)
    runs.push_back(i);
  return runs;
}

}  // namespace pelab::cli
