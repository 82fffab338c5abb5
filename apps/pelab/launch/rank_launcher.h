#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "launch/launcher.h"

namespace pelab::cli {

/// Trains the plan with `ranks` data-parallel processes of this very command on this host
/// (launch_local_ranks): every rank trains every run of the plan, rank 0 speaking for them. It
/// sees the ranks only from outside, so every run of the plan is done when every rank succeeded,
/// and failed, with the first failed rank's exit status, when one did not.
std::unique_ptr<Launcher> make_local_ranks_launcher(int ranks,
                                                    std::vector<std::string> command_line,
                                                    std::chrono::milliseconds grace);

/// Starts `ranks` processes of this very command on this host, as torchrun --nproc-per-node
/// does: each runs `command_line` without its --nproc-per-node, with RANK, LOCAL_RANK,
/// WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR (loopback) and a free MASTER_PORT set, and waits
/// for them. Returns 0 when every rank succeeded, else the first failed rank's exit status. The
/// other ranks of a failed one get `grace` to stop by themselves (their next collective fails at
/// once when a peer has died) before they are terminated.
int launch_local_ranks(int ranks, const std::vector<std::string>& command_line,
                       std::chrono::milliseconds grace);

/// `command_line` without --nproc-per-node and its value.
std::vector<std::string> without_nproc_per_node(const std::vector<std::string>& command_line);

}  // namespace pelab::cli
