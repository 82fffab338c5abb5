#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pelab/base/export.h"
#include "pelab/config/manifest.h"
#include "pelab/host/host_execution.h"
#include "pelab/interfaces/layout.h"

namespace pelab {

class Collective;
class Registry;
class Task;
class Trainer;
class TransformerEncoder;

/// One epoch of a run, as a `pelab run -j` worker reports it to its parent, which draws the
/// progress of every running run (RunOptions::progress_fd).
struct PELAB_API EpochProgress {
  std::int64_t epoch = 0;
  std::int64_t epochs = 0;
  double loss = 0.0;
  double eta_seconds = -1.0;
  double steps_per_second = 0.0;
  /// After an evaluation, its results ("test/all/accuracy=0.8125 ..."); empty otherwise.
  std::string evaluation;

  /// One line, tab-separated, ending in a newline.
  std::string to_line() const;
  /// The line to_line wrote (without its newline); nullopt for anything else.
  static std::optional<EpochProgress> parse(const std::string& line);
};

struct PELAB_API RunOptions {
  /// Print a progress line (epoch, loss, ETA) on stderr.
  bool progress = false;
  /// A file descriptor to write an EpochProgress line to after every epoch (-1: none): how a -j
  /// worker tells its parent, which alone writes to the terminal.
  int progress_fd = -1;
  /// Run again even when the folder already holds a finished run.
  bool force = false;
  /// Output roots (or experiment folders) to look in, before training a run from its start, for
  /// a finished run of the same configuration and seed to copy instead (ReusableRun); one probed
  /// otherwise is copied and probed as this run's configuration asks.
  std::vector<std::string> reuse_from;
  /// The ranks that train each run together (data-parallel), when more than this process does.
  /// Rank 0 alone claims, writes and probes the run folder; every rank calls execute_run for the
  /// same runs in the same order.
  Collective* ranks = nullptr;
  /// The cores this process was given for a run whose train.threads is 0 (HostExecution
  /// resolves the run's threads from it once); nullopt: CoreShare::of_this_process().
  std::optional<CoreShare> cores;
};

/// What one run produced.
struct PELAB_API RunOutcome {
  std::string dir;
  bool skipped = false;  // already finished: nothing was recomputed
  /// Another live process holds the run (see RunClaim): nothing was done here.
  bool claimed_elsewhere = false;
  std::string holder;  // that process, "host:pid", when known
  /// Copied from this finished run of the same configuration and seed (RunOptions::reuse_from)
  /// rather than trained; `skipped` too, for nothing was trained.
  std::string reused_from;
  /// The reused run was probed otherwise, and this run's probes ran on the copy.
  bool probed_again = false;
  /// With RunOptions::reuse_from, where no run was copied: the run of the same training
  /// configuration and seed passed over, and why (ReusableRun::find's near miss), if any.
  std::string not_reused;
  double seconds = 0.0;
  /// The final evaluation: "<split>/<group>/<metric>" -> value, e.g. "test/all/accuracy".
  std::map<std::string, double> final_metrics;
};

/// The objects of one run, built from its configuration: the task and its layout, the model with
/// its PE, and (when asked for) the trainer. The seed is set first, so the same configuration
/// builds the same initial weights.
struct PELAB_API BuiltRun {
  BuiltRun();
  BuiltRun(BuiltRun&&) noexcept;
  BuiltRun& operator=(BuiltRun&&) noexcept;
  ~BuiltRun();

  std::shared_ptr<Task> task;
  Layout layout;
  std::shared_ptr<TransformerEncoder> model;
  std::unique_ptr<Trainer> trainer;  // null unless build_run was asked for one
};
enum class WithTrainer { kNo, kYes };
/// `task`, when given, is config.task already built (`pelab validate` builds each task once for
/// all the points that share it); otherwise the registry builds it. `ranks`, when given, makes
/// the trainer data-parallel over them.
PELAB_API BuiltRun build_run(const RunConfig& config, Registry& registry,
                             WithTrainer with_trainer = WithTrainer::kYes,
                             std::shared_ptr<Task> task = nullptr, Collective* ranks = nullptr);

/// Trains one resolved run into `<output_root>/<config.relative_dir()>` (see RunFolder for its
/// files), after claiming the folder (see RunClaim): a finished run is skipped, an interrupted one
/// resumes from its checkpoint, one that another process trains is left to it.
PELAB_API RunOutcome execute_run(const RunConfig& config, Registry& registry,
                                 const std::string& output_root, const RunOptions& options = {});

}  // namespace pelab
