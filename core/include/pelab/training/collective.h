#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "pelab/base/export.h"
#include "pelab/training/rendezvous.h"

namespace pelab {

/// The ranks of one data-parallel run, joined through LibTorch's c10d: a TCPStore for the
/// rendezvous and a Gloo process group for the collectives (CPU tensors). Every collective is
/// called by every rank in the same order. A rank that dies or stops answering makes the
/// others' next collective fail within the timeout with a pelab::Error that says so, not hang.
class PELAB_API Collective {
 public:
  /// Joins the other ranks at rendezvous.master_addr:master_port. Throws pelab::Error when they
  /// have not all arrived within `timeout`, which also bounds every later collective.
  static std::unique_ptr<Collective> connect(const Rendezvous& rendezvous,
                                             std::chrono::milliseconds timeout);
  ~Collective();
  Collective(const Collective&) = delete;
  Collective& operator=(const Collective&) = delete;

  int rank() const { return rendezvous_.rank; }
  int size() const { return rendezvous_.world_size; }
  const Rendezvous& rendezvous() const { return rendezvous_; }

  /// Sums each tensor over the ranks, in place. The reductions are started together and then
  /// waited for, so that buckets travel while others are reduced.
  void all_reduce_sum(std::vector<torch::Tensor>& tensors);
  /// Overwrites `tensor` with root's; every rank passes a tensor of the same shape and type.
  void broadcast(torch::Tensor& tensor, int root = 0);
  /// Overwrites `bytes` with root's (of any length).
  void broadcast_bytes(std::string& bytes, int root = 0);
  /// Each rank holds rows share(rows, rank, size) of a [rows, ...] tensor; returns all of it, in
  /// order, on every rank.
  torch::Tensor all_gather_rows(const torch::Tensor& local, std::int64_t rows);
  void barrier();

  /// The rows [begin, end) of `rows` that `rank` of `size` takes: contiguous shares whose sizes
  /// differ by at most one, the larger ones first.
  static std::pair<std::int64_t, std::int64_t> share(std::int64_t rows, int rank, int size);

 private:
  struct Group;
  Collective(const Rendezvous& rendezvous, std::chrono::milliseconds timeout,
             std::unique_ptr<Group> group);
  [[noreturn]] void fail(const std::string& what, const std::string& why) const;

  Rendezvous rendezvous_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<Group> group_;
};

}  // namespace pelab
