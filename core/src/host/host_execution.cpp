#include "pelab/host/host_execution.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>
#include <torch/torch.h>

#include "pelab/base/error.h"
#include "pelab/host/subnormals.h"

namespace pelab {

namespace {

// SLURM_CPUS_PER_TASK as a positive number; 0 when unset or not one.
std::int64_t slurm_cpus_per_task() {
  const char* text = std::getenv("SLURM_CPUS_PER_TASK");
  if (text == nullptr) return 0;
  char* end = nullptr;
  const long cpus = std::strtol(text, &end, 10);
  return end != text && *end == '\0' && cpus > 0 ? cpus : 0;
}

}  // namespace

CoreShare CoreShare::of_this_process() {
  if (const std::int64_t cpus = slurm_cpus_per_task(); cpus > 0)
    return {cpus, fmt::format("SLURM_CPUS_PER_TASK={}", cpus), true};
  const std::int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  return {cores, fmt::format("the machine's {} cores", cores), false};
}

CoreShare CoreShare::given(std::int64_t cores, const std::string& source) {
  PELAB_CHECK(cores >= 1, "a share of {} cores ({}): it must be at least 1", cores, source);
  return {cores, source, false};
}

CoreShare CoreShare::split(std::int64_t ways, const std::string& between) const {
  PELAB_INTERNAL_ASSERT(ways >= 1, "a core share split {} ways", ways);
  if (ways == 1) return *this;
  return {std::max<std::int64_t>(1, cores / ways),
          fmt::format("{} split between {}", source, between), from_scheduler};
}

HostExecution HostExecution::resolve(std::int64_t configured_threads, bool flush_subnormals,
                                     const CoreShare& share) {
  PELAB_INTERNAL_ASSERT(configured_threads >= 0, "train.threads = {}", configured_threads);
  HostExecution execution;
  execution.threads = configured_threads > 0 ? configured_threads : share.cores;
  execution.threads_source = configured_threads > 0 ? "train.threads" : share.source;
  execution.flush_subnormals = flush_subnormals;
  return execution;
}

void HostExecution::apply() const {
  torch::set_num_threads(static_cast<int>(threads));
  set_flush_subnormals(flush_subnormals);
}

std::string HostExecution::text() const {
  return fmt::format("{} thread{} ({}), subnormals {}", threads, threads == 1 ? "" : "s",
                     threads_source, flush_subnormals ? "flushed" : "kept");
}

}  // namespace pelab
