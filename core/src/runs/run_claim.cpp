#include "pelab/runs/run_claim.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>
#include <boost/filesystem.hpp>
#include <nlohmann/json.hpp>

#include "io/json_integer.h"
#include "io/json_text.h"
#include "pelab/base/error.h"
#include "pelab/io/file_io.h"
#include "pelab/runs/run_folder.h"

namespace pelab {

namespace fs = boost::filesystem;
using json = nlohmann::ordered_json;

namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string slurm_job() {
  const char* array_job = std::getenv("SLURM_ARRAY_JOB_ID");
  const char* array_task = std::getenv("SLURM_ARRAY_TASK_ID");
  if (array_job != nullptr && array_task != nullptr)
    return fmt::format("{}_{}", array_job, array_task);
  const char* job = std::getenv("SLURM_JOB_ID");
  return job != nullptr ? job : "";
}

}  // namespace

std::string ClaimOwner::describe() const {
  std::string text = fmt::format("{}:{}", host, pid);
  if (!job.empty()) text += fmt::format(" (Slurm job {})", job);
  return text;
}

double ClaimOwner::heartbeat_age() const {
  return unix_now() - heartbeat;
}

std::string RunClaim::this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

double RunClaim::heartbeat_seconds() {
  if (const char* text = std::getenv("PELAB_HEARTBEAT_SECONDS")) {
    char* end = nullptr;
    const double seconds = std::strtod(text, &end);
    if (end != text && *end == '\0' && seconds > 0) return seconds;
  }
  return 30.0;
}

std::optional<ClaimOwner> RunClaim::read(const std::string& dir) {
  const std::string file = RunFolder(dir).claim_path();
  boost::system::error_code error;
  if (!fs::is_regular_file(file, error)) return std::nullopt;
  std::string text;
  try {
    text = read_file(file);
  } catch (const Error&) {
    return std::nullopt;  // released between the test and the read
  }
  const json document = json::parse(text, nullptr, false);
  if (document.is_discarded() || !document.is_object()) return std::nullopt;
  try {
    ClaimOwner owner;
    owner.host = document.value("host", "");
    for (const auto& [field, into] :
         {std::make_pair("pid", &owner.pid), std::make_pair("epoch", &owner.epoch),
          std::make_pair("epochs", &owner.epochs)}) {
      if (!read_integer(document, field, *into)) return std::nullopt;
    }
    owner.started = document.value("started", 0.0);
    owner.heartbeat = document.value("heartbeat", 0.0);
    owner.eta_seconds = document.value("eta_seconds", -1.0);
    owner.job = document.value("slurm_job", "");
    return owner;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

bool RunClaim::alive(const ClaimOwner& owner) {
  if (owner.host == this_host()) {
    // kill(pid, 0) fails with ESRCH only when no such process exists.
    return owner.pid > 0 && (::kill(static_cast<pid_t>(owner.pid), 0) == 0 || errno == EPERM);
  }
  return unix_now() - owner.heartbeat < 4 * heartbeat_seconds();
}

std::unique_ptr<RunClaim> RunClaim::try_claim(const std::string& dir,
                                              std::optional<ClaimOwner>* holder) {
  boost::system::error_code error;
  fs::create_directories(dir, error);
  PELAB_CHECK(!error, "cannot create the run folder '{}': {}", dir, error.message());
  const std::string lock_path = RunFolder(dir).lock_path();
  // Close-on-exec: the workers a sweep starts must not inherit, and so hold, their parent's lock.
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  PELAB_CHECK(fd >= 0, "cannot open the run's lock file '{}': {}", lock_path, std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int code = errno;
    ::close(fd);
    PELAB_CHECK(code == EWOULDBLOCK, "cannot lock '{}': {}", lock_path, std::strerror(code));
    if (holder != nullptr) *holder = read(dir);
    return nullptr;
  }
  // The lock is ours. A recent claim from another host means this filesystem's locks are not
  // shared between hosts: respect it rather than train the run twice.
  if (const auto recorded = read(dir)) {
    if (recorded->host != this_host() && alive(*recorded)) {
      ::close(fd);
      if (holder != nullptr) *holder = recorded;
      return nullptr;
    }
  }
  ClaimOwner owner;
  owner.host = this_host();
  owner.pid = ::getpid();
  owner.started = owner.heartbeat = unix_now();
  owner.job = slurm_job();
  return std::unique_ptr<RunClaim>(new RunClaim(dir, fd, owner));
}

RunClaim::RunClaim(std::string dir, int lock_fd, ClaimOwner owner)
    : dir_(std::move(dir)), lock_fd_(lock_fd), owner_(std::move(owner)) {
  write_claim();
  heartbeat_ = std::thread([this] { heartbeat_loop(); });
}

RunClaim::~RunClaim() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  heartbeat_.join();
  boost::system::error_code ignored;
  fs::remove(RunFolder(dir_).claim_path(), ignored);
  ::close(lock_fd_);  // unlocks
}

void RunClaim::progress(std::int64_t epoch, std::int64_t epochs, double eta_seconds) {
  bool write_now = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    owner_.epoch = epoch;
    owner_.epochs = epochs;
    owner_.eta_seconds = eta_seconds;
    // Short runs would end before the first heartbeat; long ones need no more than one a second.
    write_now = unix_now() - owner_.heartbeat >= std::min(1.0, heartbeat_seconds());
  }
  if (write_now) write_claim();
}

void RunClaim::write_claim() {
  json document;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    owner_.heartbeat = unix_now();
    document = {{"host", owner_.host},
                {"pid", owner_.pid},
                {"started", owner_.started},
                {"heartbeat", owner_.heartbeat},
                {"epoch", owner_.epoch},
                {"epochs", owner_.epochs},
                {"eta_seconds", owner_.eta_seconds}};
    if (!owner_.job.empty()) document["slurm_job"] = owner_.job;
  }
  try {
    write_file_atomically(RunFolder(dir_).claim_path(), json_file_text(document));
  } catch (const Error&) {
    // A heartbeat that cannot be written (a full disk) must not stop the training: the lock
    // still holds the run, and the training's own writes report the problem.
  }
}

void RunClaim::heartbeat_loop() {
  const auto period = std::chrono::duration<double>(heartbeat_seconds());
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, period, [this] { return stopping_; })) {
    lock.unlock();
    write_claim();
    lock.lock();
  }
}

}  // namespace pelab
