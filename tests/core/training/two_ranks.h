#pragma once

// Two ranks of one data-parallel world on loopback, as two threads of the test's process.

#include <array>
#include <chrono>
#include <future>
#include <memory>

#include "pelab/training/collective.h"

namespace pelab::test {

/// Ranks 0 and 1, connected concurrently (rank 0 waits for rank 1 to arrive).
inline std::array<std::unique_ptr<Collective>, 2> connect_two_ranks(
    std::chrono::milliseconds timeout) {
  const std::uint16_t port = Rendezvous::free_loopback_port();
  auto join = [port, timeout](int rank) {
    Rendezvous rendezvous;
    rendezvous.rank = rank;
    rendezvous.world_size = 2;
    rendezvous.master_port = port;
    rendezvous.source = "test";
    return Collective::connect(rendezvous, timeout);
  };
  auto second = std::async(std::launch::async, join, 1);
  auto first = join(0);
  return {std::move(first), second.get()};
}

/// Runs `body(rank)` for ranks 0 and 1 at once; rethrows what either threw.
template <typename Body>
void on_both_ranks(Body body) {
  auto other = std::async(std::launch::async, [&] { body(1); });
  body(0);
  other.get();
}

}  // namespace pelab::test
