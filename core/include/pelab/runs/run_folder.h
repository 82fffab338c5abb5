#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pelab/base/export.h"
#include "pelab/config/manifest.h"
#include "pelab/interfaces/probe.h"
#include "pelab/training/trainer.h"

namespace torch::optim {
class Optimizer;
}

namespace pelab {

class Registry;
class TransformerEncoder;

/// What computed a run: the CPU, the BLAS kernel, ATen's vector kernels and the precision, so that
/// a result can be traced to what computed it (host_info.h). Empty in runs older than the record.
struct RunCompute {
  std::string cpu;           // the CPU's brand string
  std::string isa;           // "AVX2, FMA, AVX-512, AVX512-BF16, no AMX"
  std::string blas;          // "OpenBLAS 0.3.21, kernel Cooperlake (pelab's choice: ...), 1 thread"
  std::string blas_kernel;   // "Cooperlake"
  std::string aten_kernels;  // "AVX512"
  std::string precision;     // "fp32", "bf16 (native)", "bf16 (emulated)"
  // "flushed" or "gradual" (IEEE gradual underflow) on the training thread as the run ended; empty
  // in a summary written before pelab recorded it (2026-12-05), whose config.toml says whether it
  // asked to flush (train.flush_subnormals; no such key: it did not).
  std::string subnormals;

  /// "Cooperlake, AVX512, fp32, subnormals flushed": what a report's cost table shows.
  std::string short_text() const;
};

/// What summary.json records about a run that ended, finished or failed.
struct PELAB_API RunSummary {
  std::string status;  // "finished" or "failed"
  std::string experiment;
  std::string point;
  std::int64_t seed = 0;
  std::int64_t epoch = 0;  // finished: the epochs trained; failed: the epoch it failed in
  std::string error;       // failed only
  std::string objective;
  std::int64_t parameters = 0;
  std::int64_t threads = 0;  // per rank
  std::int64_t ranks = 1;    // processes that trained it, data-parallel
  double wall_seconds = 0.0;
  double steps_per_second = 0.0;
  std::string torch_version;
  /// The plugins that built the run, "<kind>/<name>" ("pe/learned", "init/normal") -> the version
  /// their library declares. Empty in a summary written before pelab recorded them.
  std::map<std::string, std::string> plugins;
  RunCompute compute;
  /// The last evaluation: "<split>/<group>/<metric>" -> value (NaN where it was not finite).
  std::map<std::string, double> final_metrics;
  /// Each probe's scalars, by the probe's output name.
  std::map<std::string, std::map<std::string, double>> probes;
  /// Set when the run was not trained in its folder but copied from a finished run of the same
  /// configuration and seed (`pelab run --reuse`): that run's folder, as found.
  std::string reused_from;
  /// The PE snapshot files the run wrote (pe/*.npy); nullopt in a summary written before pelab
  /// counted them. A copy (`--reuse`) must hold as many.
  std::optional<std::int64_t> snapshot_files;
  /// The configuration the run was trained as (StoredConfig::identity of its config.toml as it
  /// ended), by which every reader finds a config.toml edited after the run. Empty in a summary
  /// written before pelab recorded it (2026-12-06): such a run cannot be checked.
  std::map<std::string, std::string> configuration;

  bool finished() const { return status == "finished"; }
};

/// What a run has spent up to a checkpoint, over all the processes that trained it, so that a
/// resumed run's summary reports the whole run's cost and not only its last stretch's.
struct TrainingTime {
  double wall_seconds = 0.0;   // evaluations and checkpoints included
  double train_seconds = 0.0;  // the training steps alone
  std::int64_t steps = 0;
  std::int64_t epochs = 0;  // the epochs whose steps those are
};

/// What one probe produced, as `probes/<name>.json` records it.
struct PELAB_API ProbeOutcome {
  std::string name;    // the output name: the plugin's, or "<plugin>_2", ... (probe_output_name)
  std::string plugin;  // the probe plugin
  std::optional<std::int64_t> epoch;  // the epoch of the last PE snapshot it read, when any
  std::map<std::string, double> scalars;
  std::vector<std::string> arrays;  // the .npy files, relative to the run folder
  std::vector<Headline> headlines;  // the probe's headline scalars
  std::string note;                 // the probe's note, if any
  std::string error;                // the error that stopped it, if any (then no scalars)
};

/// A run's config.toml as stored, read with toml++ but not resolved against the plugins: what a
/// status, a report and the check of a reused folder read, whether or not the run's plugins are on
/// this host's plugin path (RunFolder::read_config resolves it).
struct PELAB_API StoredConfig {
  /// One value: as TOML writes it ("0.2", "\"adamw\"", "[2235, 6312]"), and as a reader is shown
  /// it (a string without its quotes, a float in its shortest form).
  struct Value {
    std::string toml;
    std::string shown;
  };
  /// Every value by its dotted key ("train.lr", "pe.init.std"); inline tables are walked into,
  /// and the i-th [[probe]] table's keys are "probe.<i>.<key>".
  std::map<std::string, Value> values;

  /// The keys whose values differ from `other`'s, but for the `ignored` ones, each as
  /// "key: <this value> -> <other's value>" ("(absent)" for a missing key).
  std::vector<std::string> differences(const StoredConfig& other,
                                       const std::set<std::string>& ignored = {}) const;

  /// The value at `key` as TOML text, or "(absent)".
  std::string toml(const std::string& key) const;
  /// The value at `key` as shown to a reader, or nullopt.
  std::optional<std::string> shown(const std::string& key) const;
  std::optional<std::int64_t> integer(const std::string& key) const;
  std::optional<double> number(const std::string& key) const;
  /// What makes a run what it was trained as, key -> value as TOML text: every value but those a
  /// run may change without changing what it computes (per_run_keys(): seeds, description, epochs,
  /// threads) and the [[probe]] tables, which run on the trained model.
  std::map<std::string, std::string> identity() const;
  /// The keys of two identities that differ, each as "key: <recorded> -> <now>".
  static std::vector<std::string> identity_changes(
      const std::map<std::string, std::string>& recorded,
      const std::map<std::string, std::string>& now);

  /// The plugins of the [[probe]] tables, in order.
  std::vector<std::string> probe_plugins() const;

  /// Reads a config.toml document; an Error names `file` and the line of a TOML syntax error.
  static StoredConfig parse(const std::string& text, const std::string& file);
};

/// The files of one run and their formats, in one place: everything that writes or reads a run
/// folder goes through it, and no other code names its files. A run folder is
/// `<out>/<experiment>/<point>/seed-<seed>/` (ExperimentFolder):
///
///   config.toml             the resolved configuration; `pelab run` accepts it again
///   metrics.csv             epoch,split,group,metric,value
///   pe/tables-epoch-NNNNNN.npy, pe/kernels-epoch-NNNNNN.npy    PE snapshots, and
///   pe/param-<name>-epoch-NNNNNN.npy                           each PE parameter at that epoch
///   checkpoint.pt           weights, optimizer, epoch, RNG state and time spent (TrainingTime)
///                           of the last checkpoint;
///   checkpoint.previous.pt  the one before, for when the last one cannot be read
///   probes/<name>.json, probes/<name>-<array>.npy    each probe's record (ProbeOutcome), arrays
///   summary.json            how the run ended (RunSummary), with each probe's scalars
///   run.log                 the run's log
///   claim.json, .lock       who trains it now (RunClaim, which takes their paths from here)
///
/// Every file is written atomically (a temporary file renamed over it), so a reader or a process
/// killed at any moment sees a whole old file or a whole new one.
class PELAB_API RunFolder {
 public:
  /// The files' names, for what a message or a help text tells a reader; paths come from the
  /// methods below.
  static constexpr const char* kConfigFile = "config.toml";
  static constexpr const char* kMetricsFile = "metrics.csv";
  static constexpr const char* kSummaryFile = "summary.json";
  static constexpr const char* kLogFile = "run.log";
  static constexpr const char* kSnapshotFolder = "pe";
  /// A parameter's snapshot is pe/param-<name>-epoch-NNNNNN.npy.
  static constexpr const char* kParameterPrefix = "param-";
  static constexpr const char* kProbeFolder = "probes";

  explicit RunFolder(std::string dir);

  const std::string& dir() const { return dir_; }
  /// `dir/relative`.
  std::string path(const std::string& relative) const;
  /// Whether `dir` is a run folder: it holds a config.toml.
  static bool is_run_folder(const std::string& dir);

  // --- config.toml ---
  std::string config_path() const;
  bool has_config() const;
  std::string read_config_text() const;
  void write_config(const RunConfig& config) const;
  /// config.toml as stored, without resolving it (see StoredConfig).
  StoredConfig read_stored_config() const;
  /// config.toml as this pelab resolves it: keys added to a plugin since the run was written take
  /// their defaults, so that an upgrade alone is no difference between two runs. A file that no
  /// longer resolves (a key since removed, a plugin not on the path) is read as it is stored, and a
  /// comparison then names what changed.
  StoredConfig read_resolved_config(Registry& registry) const;
  /// The stored configuration resolved by this pelab (keys added since take their defaults), with
  /// `text` in place of the file when given and `overrides` applied. A folder written before the
  /// sweep point was a key (`# sweep point: ...` comment) still reads.
  RunConfig read_config(Registry& registry, const std::string& text = "",
                        const std::vector<std::string>& overrides = {}) const;

  // --- metrics.csv ---
  void write_metrics(const std::vector<MetricRow>& rows) const;
  /// The rows up to and including `last_epoch`. A missing file is no rows; a malformed one is an
  /// Error naming file:line.
  std::vector<MetricRow> read_metrics(
      std::int64_t last_epoch = std::numeric_limits<std::int64_t>::max()) const;
  /// The rows of a metrics.csv document `text`, named `file` in errors.
  static std::vector<MetricRow> parse_metrics(
      const std::string& text, const std::string& file,
      std::int64_t last_epoch = std::numeric_limits<std::int64_t>::max());
  /// What `rows` (a run's metrics up to `epoch`, evaluated every `eval_every` epochs) lack to be
  /// whole: a training-loss row for every epoch 1..epoch, evaluation rows at epoch 0 and at every
  /// multiple of eval_every up to epoch. "" when nothing is missing.
  static std::string missing_metrics(const std::vector<MetricRow>& rows, std::int64_t epoch,
                                     std::int64_t eval_every);

  // --- pe/ snapshots ---
  /// The epochs of the snapshot files in pe/ (tables or kernels), sorted, without reading them.
  std::vector<std::int64_t> snapshot_file_epochs() const;
  /// Why this finished run is not whole, or "" when it is: its metrics.csv parses and holds every
  /// epoch's training loss and every evaluation up to its last epoch (`eval_every` apart), and
  /// its pe/ holds the snapshot files its summary counts. What `--reuse` copies must be whole.
  std::string why_not_whole(const RunSummary& summary, std::int64_t eval_every) const;
  std::string snapshot_folder() const;
  static std::string snapshot_name(const std::string& what, std::int64_t epoch);
  /// "tables-epoch-*.npy": the snapshots of `what` ("tables" or "kernels") in the snapshot
  /// folder, as a message names them.
  static std::string snapshot_pattern(const std::string& what);
  void write_snapshot(const PESnapshot& snapshot) const;
  /// The snapshots by epoch, up to and including `last_epoch`.
  std::vector<PESnapshot> read_snapshots(
      std::int64_t last_epoch = std::numeric_limits<std::int64_t>::max()) const;
  /// The PE tables of the last snapshot that has them, or an undefined tensor.
  torch::Tensor read_final_tables() const;
  /// The last snapshot of the PE parameter `name` (pe/param-<name>-epoch-*.npy, [pes, ...]), or an
  /// undefined tensor.
  torch::Tensor read_final_parameter(const std::string& name) const;

  // --- probes/ ---
  /// Writes `probes/<name>.json`; a finished run's summary.json then carries the probe's scalars
  /// too (write_summary), so that a report reads every run's scalars from one file.
  void write_probe_record(const ProbeOutcome& outcome) const;
  /// `probes/<name>.json` read back; nullopt when it is missing, an Error naming it when it is
  /// not a record pelab wrote.
  std::optional<ProbeOutcome> read_probe_record(const std::string& name) const;
  /// Writes `probes/<name>-<array>.npy`; returns its path relative to the folder.
  std::string write_probe_array(const std::string& name, const std::string& array,
                                const torch::Tensor& values) const;
  /// `probes/<name>-<array>.npy`, relative to a run folder.
  static std::string probe_array_file(const std::string& name, const std::string& array);
  /// Removes the arrays an earlier run of probe `name` wrote, which would otherwise outlive a
  /// failure or a renamed array.
  void remove_probe_arrays(const std::string& name) const;

  // --- checkpoint.pt ---
  bool has_checkpoint() const;
  /// Writes checkpoint.pt, with a copy of the metrics `rows` so far, the time spent and the
  /// folder's config.toml (load_checkpoint refuses a config.toml that differs from it since); the
  /// checkpoint it replaces becomes checkpoint.previous.pt.
  void save_checkpoint(TransformerEncoder& model, torch::optim::Optimizer& optimizer,
                       std::int64_t epoch, const std::vector<MetricRow>& rows,
                       const TrainingTime& time = {}) const;
  struct LoadedCheckpoint {
    std::int64_t epoch = -1;
    std::string file;         // the file the weights came from
    std::string warning;      // set when checkpoint.pt was unreadable and the previous one was used
    std::string metrics_csv;  // its copy of metrics.csv; empty in checkpoints of older pelabs
    std::optional<TrainingTime> time;  // absent from checkpoints of older pelabs
  };
  /// Loads the model's weights (and the optimizer's state and the RNG state when `optimizer` is
  /// given) from checkpoint.pt, or from checkpoint.previous.pt when checkpoint.pt is missing or
  /// unreadable. An Error names the files and says what to do when neither can be read.
  LoadedCheckpoint load_checkpoint(TransformerEncoder& model,
                                   torch::optim::Optimizer* optimizer) const;

  /// Removes checkpoint.previous.pt: once a run has finished, its last checkpoint is the one kept.
  void remove_previous_checkpoint() const;

  // --- summary.json ---
  std::string summary_path() const;
  /// nullopt when the run has not ended (no summary.json). A summary.json that does not parse, or
  /// is not a summary pelab wrote, is an Error naming the file: written atomically, it can only
  /// have been damaged after the run, and reading it as "not ended" would train over a finished
  /// run.
  std::optional<RunSummary> read_summary() const;
  void write_summary(const RunSummary& summary) const;
  /// An Error when config.toml no longer describes the run that `summary` records (it was edited
  /// after the run ended), naming the keys that changed. Every reader of a finished run calls it
  /// before trusting config.toml; summaries older than the record pass.
  void check_config_unchanged(const RunSummary& summary) const;

  // --- run.log, and the claim's files (RunClaim) ---
  std::string log_path() const;
  std::string claim_path() const;
  std::string lock_path() const;

  /// Removes the temporary files (`*.tmp.<pid>`) that a process killed in the middle of an
  /// atomic write left behind. Only the claim's holder may call it: nobody else writes here.
  void remove_stale_temporaries() const;

  /// Removes every output of an earlier run (metrics, snapshots, checkpoints, probes, summary),
  /// keeping config.toml, the log and the claim: a fresh start in the same folder.
  void clear_outputs() const;
  /// Removes the probe records (probes/), before probes other than the recorded ones run.
  void clear_probes() const;

  /// Copies a finished run's outputs (metrics, snapshots, last checkpoint, probes and log) from
  /// `source` into this folder, each file atomically; config.toml and summary.json are the
  /// caller's to write, for they name this folder's experiment and point.
  void copy_outputs_from(const RunFolder& source) const;

 private:
  std::string dir_;
};

}  // namespace pelab
