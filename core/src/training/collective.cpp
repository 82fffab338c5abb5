#include "pelab/training/collective.h"

// ProcessGroupGloo.hpp declares the Gloo process group only under this macro, which the build of
// Debian's libtorch_cpu (which contains it) defined.
#define USE_C10D_GLOO 1

#include <algorithm>
#include <csignal>

#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "pelab/base/error.h"

namespace pelab {

struct Collective::Group {
  c10::intrusive_ptr<c10d::TCPStore> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;
};

namespace {

std::string message_of(const std::exception& error) {
  const auto* torch_error = dynamic_cast<const c10::Error*>(&error);
  std::string message = torch_error ? torch_error->what_without_backtrace() : error.what();
  while (!message.empty() && (message.back() == '.' || message.back() == '\n'))
    message.pop_back();
  return message;
}

bool is_loopback(const std::string& address) {
  return address == "localhost" || address.rfind("127.", 0) == 0 || address == "::1";
}

std::string seconds(std::chrono::milliseconds duration) {
  return fmt::format("{:g} s", static_cast<double>(duration.count()) / 1000.0);
}

}  // namespace

std::unique_ptr<Collective> Collective::connect(const Rendezvous& rendezvous,
                                                std::chrono::milliseconds timeout) {
  // Gloo writes to its peers' sockets without MSG_NOSIGNAL: a peer that died would kill this
  // rank with SIGPIPE, silently, instead of failing its collective with an error that says so.
  // (Python, and so every torch.distributed program, ignores SIGPIPE the same way.)
  std::signal(SIGPIPE, SIG_IGN);
  auto group = std::make_unique<Group>();
  const std::string where = fmt::format("{}:{}", rendezvous.master_addr, rendezvous.master_port);
  try {
    c10d::TCPStoreOptions options;
    options.port = rendezvous.master_port;
    options.isServer = rendezvous.rank == 0 && !rendezvous.agent_store;
    options.numWorkers = static_cast<std::size_t>(rendezvous.world_size);
    options.waitWorkers = true;
    options.timeout = timeout;
    group->store = c10::make_intrusive<c10d::TCPStore>(rendezvous.master_addr, options);
    auto gloo_options = c10d::ProcessGroupGloo::Options::create(timeout);
    // On one host the ranks talk over loopback; across hosts over the interface that
    // GLOO_SOCKET_IFNAME names, or the one this host's name resolves to (as torch.distributed).
    if (const char* interface = std::getenv("GLOO_SOCKET_IFNAME")) {
      gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(interface));
    } else if (is_loopback(rendezvous.master_addr)) {
      gloo_options->devices.push_back(
          c10d::ProcessGroupGloo::createDeviceForHostname(rendezvous.master_addr));
    } else {
      gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    group->gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(group->store, rendezvous.rank,
                                                              rendezvous.world_size, gloo_options);
  } catch (const std::exception& error) {
    throw Error(fmt::format(
        "{} ({}): the {} rank(s) did not all meet at {} within {}: {}. Start every rank with the "
        "same MASTER_ADDR and MASTER_PORT (a port that no other run uses), or raise "
        "--rank-timeout",
        rendezvous.describe(), rendezvous.source, rendezvous.world_size, where, seconds(timeout),
        message_of(error)));
  }
  return std::unique_ptr<Collective>(new Collective(rendezvous, timeout, std::move(group)));
}

Collective::Collective(const Rendezvous& rendezvous, std::chrono::milliseconds timeout,
                       std::unique_ptr<Group> group)
    : rendezvous_(rendezvous), timeout_(timeout), group_(std::move(group)) {}

Collective::~Collective() = default;

void Collective::fail(const std::string& what, const std::string& why) const {
  throw Error(fmt::format(
      "{}: the {} with the other ranks failed ({}). Another rank has stopped (see its error), "
      "died, or did not answer within the rank timeout ({}); the run resumes from its last "
      "checkpoint when started again",
      rendezvous_.describe(), what, why, seconds(timeout_)));
}

void Collective::all_reduce_sum(std::vector<torch::Tensor>& tensors) {
  try {
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    std::vector<std::vector<torch::Tensor>> each(tensors.size());
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      each[i] = {tensors[i]};
      works.push_back(group_->gloo->allreduce(each[i]));
    }
    for (auto& work : works)
      work->wait(timeout_);
  } catch (const std::exception& error) {
    fail("all-reduce", message_of(error));
  }
}

void Collective::broadcast(torch::Tensor& tensor, int root) {
  try {
    std::vector<torch::Tensor> tensors{tensor};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    group_->gloo->broadcast(tensors, options)->wait(timeout_);
  } catch (const std::exception& error) {
    fail("broadcast", message_of(error));
  }
}

void Collective::broadcast_bytes(std::string& bytes, int root) {
  c10::InferenceMode ordinary_tensors(false);
  torch::Tensor length = torch::tensor({static_cast<std::int64_t>(bytes.size())}, torch::kInt64);
  broadcast(length, root);
  const std::int64_t size = length.item<std::int64_t>();
  torch::Tensor buffer = rank() == root ? torch::from_blob(bytes.data(), {size}, torch::kUInt8)
                                        : torch::empty({size}, torch::kUInt8);
  if (size > 0) broadcast(buffer, root);
  if (rank() != root) bytes.assign(static_cast<const char*>(buffer.data_ptr()), size);
}

torch::Tensor Collective::all_gather_rows(const torch::Tensor& local, std::int64_t rows) {
  // Gloo's threads write the outputs outside any InferenceMode of the caller's (evaluation's):
  // they must be ordinary tensors.
  c10::InferenceMode ordinary_tensors(false);
  const auto [begin, end] = share(rows, rank(), size());
  PELAB_INTERNAL_ASSERT(local.size(0) == end - begin, "{} holds {} rows, its share is {}",
                        rendezvous_.describe(), local.size(0), end - begin);
  // Gloo gathers equal shapes: every share is padded to the largest, the first.
  const std::int64_t largest = share(rows, 0, size()).second;
  std::vector<std::int64_t> padded_shape = local.sizes().vec();
  padded_shape[0] = largest;
  torch::Tensor padded = torch::zeros(padded_shape, local.options());
  padded.slice(0, 0, local.size(0)).copy_(local);
  std::vector<std::vector<torch::Tensor>> gathered(1);
  for (int r = 0; r < size(); ++r)
    gathered[0].push_back(torch::empty_like(padded));
  try {
    std::vector<torch::Tensor> input{padded};
    group_->gloo->allgather(gathered, input)->wait(timeout_);
  } catch (const std::exception& error) {
    fail("all-gather", message_of(error));
  }
  std::vector<torch::Tensor> parts;
  for (int r = 0; r < size(); ++r) {
    const auto [first, last] = share(rows, r, size());
    parts.push_back(gathered[0][r].slice(0, 0, last - first));
  }
  return torch::cat(parts);
}

void Collective::barrier() {
  try {
    group_->gloo->barrier()->wait(timeout_);
  } catch (const std::exception& error) {
    fail("barrier", message_of(error));
  }
}

std::pair<std::int64_t, std::int64_t> Collective::share(std::int64_t rows, int rank, int size) {
  const std::int64_t base = rows / size, extra = rows % size;
  const std::int64_t begin = rank * base + std::min<std::int64_t>(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

}  // namespace pelab
