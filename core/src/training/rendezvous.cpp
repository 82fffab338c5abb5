#include "pelab/training/rendezvous.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "pelab/base/error.h"

namespace pelab {

namespace {

// A whole non-negative number that fits an int, or nothing.
std::optional<int> parse_count(const char* text) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  const std::string value(text);
  if (value.size() > 9 || value.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoi(value);
}

int required_count(const Rendezvous::Lookup& lookup, const char* name, const std::string& source) {
  const char* text = lookup(name);
  const auto value = parse_count(text);
  PELAB_CHECK(value.has_value(), "{} is {}: a data-parallel run under {} needs it as a number",
              name, text == nullptr ? "not set" : fmt::format("'{}'", text), source);
  return *value;
}

int optional_count(const Rendezvous::Lookup& lookup, const char* name, int fallback) {
  const char* text = lookup(name);
  if (text == nullptr) return fallback;
  const auto value = parse_count(text);
  PELAB_CHECK(value.has_value(), "{} = '{}' is not a number", name, text);
  return *value;
}

std::uint16_t port_from(const Rendezvous::Lookup& lookup, std::uint16_t fallback) {
  const char* text = lookup("MASTER_PORT");
  if (text == nullptr) return fallback;
  const auto port = parse_count(text);
  PELAB_CHECK(port && *port > 0 && *port < 65536, "MASTER_PORT = '{}' is not a TCP port (1-65535)",
              text);
  return static_cast<std::uint16_t>(*port);
}

void check(const Rendezvous& rendezvous) {
  PELAB_CHECK(rendezvous.world_size >= 1, "{}: the world size is 0", rendezvous.source);
  PELAB_CHECK(rendezvous.rank < rendezvous.world_size,
              "{}: rank {} does not exist in a world of {} rank(s) (ranks count from 0)",
              rendezvous.source, rendezvous.rank, rendezvous.world_size);
  PELAB_CHECK(
      rendezvous.local_world_size >= 1 && rendezvous.local_rank < rendezvous.local_world_size,
      "{}: local rank {} of {} local rank(s)", rendezvous.source, rendezvous.local_rank,
      rendezvous.local_world_size);
}

}  // namespace

std::optional<Rendezvous> Rendezvous::from_environment(const Lookup& lookup) {
  Rendezvous rendezvous;
  if (lookup("WORLD_SIZE") != nullptr) {
    rendezvous.source = "torchrun variables";
    rendezvous.world_size = required_count(lookup, "WORLD_SIZE", rendezvous.source);
    if (rendezvous.world_size <= 1) return std::nullopt;
    rendezvous.rank = required_count(lookup, "RANK", rendezvous.source);
    rendezvous.local_rank = optional_count(lookup, "LOCAL_RANK", rendezvous.rank);
    rendezvous.local_world_size =
        optional_count(lookup, "LOCAL_WORLD_SIZE", std::max(rendezvous.local_rank + 1, 1));
    const char* address = lookup("MASTER_ADDR");
    PELAB_CHECK(address != nullptr && *address != '\0',
                "MASTER_ADDR is not set: a data-parallel run under torchrun variables needs the "
                "host of rank 0");
    rendezvous.master_addr = address;
    rendezvous.master_port = port_from(lookup, rendezvous.master_port);
    const char* agent = lookup("TORCHELASTIC_USE_AGENT_STORE");
    rendezvous.agent_store = agent != nullptr && std::string(agent) == "True";
  } else if (lookup("SLURM_STEP_NUM_TASKS") != nullptr && lookup("SLURM_PROCID") != nullptr) {
    // A job step started by srun; the batch script itself has no step task count, so a plain
    // `pelab run` in an sbatch script stays a single process.
    rendezvous.source = "Slurm (srun)";
    rendezvous.world_size = required_count(lookup, "SLURM_STEP_NUM_TASKS", rendezvous.source);
    if (rendezvous.world_size <= 1) return std::nullopt;
    rendezvous.rank = required_count(lookup, "SLURM_PROCID", rendezvous.source);
    rendezvous.local_rank = optional_count(lookup, "SLURM_LOCALID", 0);
    // SLURM_STEP_TASKS_PER_NODE may read "2(x3)": the first number is this layout's width.
    const char* per_node = lookup("SLURM_STEP_TASKS_PER_NODE");
    rendezvous.local_world_size = per_node != nullptr
                                      ? std::max(std::atoi(per_node), rendezvous.local_rank + 1)
                                      : rendezvous.local_rank + 1;
    if (const char* address = lookup("MASTER_ADDR"); address != nullptr && *address != '\0') {
      rendezvous.master_addr = address;
    } else {
      const char* nodes = lookup("SLURM_STEP_NODELIST");
      if (nodes == nullptr) nodes = lookup("SLURM_JOB_NODELIST");
      PELAB_CHECK(nodes != nullptr,
                  "neither MASTER_ADDR nor SLURM_STEP_NODELIST is set: cannot tell which host "
                  "rank 0 runs on");
      rendezvous.master_addr = first_host(nodes);
    }
    // Every step of a job on the same port would collide across jobs sharing a node: derive
    // it from the job id unless MASTER_PORT says otherwise.
    const int job = optional_count(lookup, "SLURM_JOB_ID", 0);
    rendezvous.master_port = port_from(lookup, static_cast<std::uint16_t>(29500 + job % 10000));
  } else {
    return std::nullopt;
  }
  check(rendezvous);
  return rendezvous;
}

std::optional<Rendezvous> Rendezvous::from_environment() {
  return from_environment([](const char* name) { return std::getenv(name); });
}

std::string Rendezvous::first_host(const std::string& nodelist) {
  // Up to the first comma outside brackets; "prefix[a-b,c]suffix" takes a's digits, padding kept.
  std::string host;
  for (std::size_t i = 0; i < nodelist.size(); ++i) {
    const char c = nodelist[i];
    if (c == ',') break;
    if (c != '[') {
      host += c;
      continue;
    }
    const std::size_t close = nodelist.find(']', i);
    PELAB_CHECK(close != std::string::npos, "malformed Slurm host list '{}': '[' without ']'",
                nodelist);
    const std::string range = nodelist.substr(i + 1, close - i - 1);
    host += range.substr(0, range.find_first_of("-,"));
    i = close;
  }
  PELAB_CHECK(!host.empty(), "empty Slurm host list '{}'", nodelist);
  return host;
}

std::uint16_t Rendezvous::free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  PELAB_CHECK(fd >= 0, "cannot open a socket to find a free port: {}", std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;  // the kernel picks
  socklen_t length = sizeof(address);
  const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
                     ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  const int error = errno;
  ::close(fd);
  PELAB_CHECK(bound, "cannot find a free port on the loopback interface: {}", std::strerror(error));
  return ntohs(address.sin_port);
}

std::string Rendezvous::describe() const {
  return fmt::format("rank {} of {}", rank, world_size);
}

}  // namespace pelab
