#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "pelab/base/export.h"

namespace pelab {

/// Who trains a run now, as the run folder's claim record says (RunFolder::claim_path).
struct PELAB_API ClaimOwner {
  std::string host;
  std::int64_t pid = 0;
  double started = 0.0;    // Unix time
  double heartbeat = 0.0;  // Unix time of the last update
  std::int64_t epoch = 0;  // the last epoch finished
  std::int64_t epochs = 0;
  double eta_seconds = -1.0;  // -1: not known yet
  std::string job;            // the Slurm job (array) it runs in, if any: "1234_7"

  /// "host:pid" (and the Slurm job).
  std::string describe() const;
  /// Seconds since the last heartbeat.
  double heartbeat_age() const;
};

/// A process's exclusive claim on a run folder, held while it trains the run: two processes (two
/// shards of a sweep on a cluster, a second `pelab run` of the same manifest) never train one run.
///
/// The claim is an exclusive flock(2) on `<run>/.lock`. The kernel drops it when its process dies,
/// however it dies, so the claim of a killed process is taken over at once. Beside it,
/// the claim record names the owner and its progress, updated by a heartbeat thread, for `pelab
/// status`, and as a second guard on shared filesystems whose locks do not reach across hosts: a
/// claim record from another host with a recent heartbeat is respected even where the lock was
/// granted.
class PELAB_API RunClaim {
 public:
  /// Claims the run folder `dir` (created if needed). Null when another live process holds it; its
  /// owner is then stored in `*holder` when known.
  static std::unique_ptr<RunClaim> try_claim(const std::string& dir,
                                             std::optional<ClaimOwner>* holder = nullptr);
  /// The owner recorded in the claim record of `dir`, if any (read without claiming).
  static std::optional<ClaimOwner> read(const std::string& dir);
  /// Whether a recorded owner is alive: on this host its process exists; on another, its
  /// heartbeat is recent.
  static bool alive(const ClaimOwner& owner);
  /// This machine's host name, as claims record it.
  static std::string this_host();
  /// How often the heartbeat rewrites the claim record, in seconds ($PELAB_HEARTBEAT_SECONDS,
  /// default 30); a claim from another host is stale after four missed heartbeats.
  static double heartbeat_seconds();

  ~RunClaim();  // releases the claim: removes the claim record, then unlocks
  RunClaim(const RunClaim&) = delete;
  RunClaim& operator=(const RunClaim&) = delete;

  /// "host:pid" of this process (and its Slurm job).
  std::string owner_description() const { return owner_.describe(); }

  /// Records progress for `pelab status`: written at once when the last write is a second old or
  /// more, else with the next heartbeat.
  void progress(std::int64_t epoch, std::int64_t epochs, double eta_seconds);

 private:
  RunClaim(std::string dir, int lock_fd, ClaimOwner owner);
  void write_claim();
  void heartbeat_loop();

  std::string dir_;
  int lock_fd_;
  std::mutex mutex_;
  ClaimOwner owner_;
  bool stopping_ = false;
  std::condition_variable wake_;
  std::thread heartbeat_;
};

}  // namespace pelab
