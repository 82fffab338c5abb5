#include "pelab/runs/run.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <boost/filesystem.hpp>

#include "pelab/base/error.h"
#include "pelab/config/sections.h"
#include "pelab/host/host_execution.h"
#include "pelab/host/host_info.h"
#include "pelab/host/subnormals.h"
#include "pelab/io/file_io.h"
#include "pelab/model/transformer_encoder.h"
#include "pelab/plugins/registry.h"
#include "pelab/runs/point_record.h"
#include "pelab/runs/probing.h"
#include "pelab/runs/reusable_run.h"
#include "pelab/runs/run_claim.h"
#include "pelab/runs/run_folder.h"
#include "pelab/runs/run_loader.h"
#include "pelab/runs/trained_encoder.h"
#include "pelab/training/collective.h"
#include "pelab/training/trainer.h"

namespace pelab {

namespace fs = boost::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

std::string metric_key(const MetricRow& row) {
  return fmt::format("{}/{}/{}", row.split, row.group, row.metric);
}

// The last evaluation's rows as "split/group/metric" -> value.
std::map<std::string, double> final_metrics(const std::vector<MetricRow>& rows) {
  std::map<std::string, double> result;
  if (rows.empty()) return result;
  const std::int64_t last = rows.back().epoch;
  for (const auto& row : rows) {
    if (row.epoch == last && row.split != "train_epoch") result[metric_key(row)] = row.value;
  }
  return result;
}

// A run folder may only be reused for the same configuration (resuming may extend the epochs).
void check_same_config(const RunFolder& folder, const StoredConfig& current, bool resuming,
                       Registry& registry) {
  if (!folder.has_config()) return;
  // The description documents the experiment, and the host execution keys set how it is computed
  // here (a sweep's launcher shares the cores out): changing them changes no run.
  std::set<std::string> ignored = host_execution_keys();
  ignored.insert("experiment.description");
  if (resuming) ignored.insert("train.epochs");
  // Probes run on the trained model: a finished run keeps the probes it ran (`pelab probe` adds
  // more), a resumed one runs the manifest's.
  const StoredConfig stored = folder.read_resolved_config(registry);
  for (const StoredConfig* config : {&stored, &current}) {
    for (const auto& [key, value] : config->values)
      if (key.rfind("probe.", 0) == 0) ignored.insert(key);
  }
  const auto differences = stored.differences(current, ignored);
  if (differences.empty()) return;
  std::string listed;
  for (const auto& difference : differences)
    listed += "\n  " + difference;
  throw Error(fmt::format(
      "{} holds a {} run of another configuration:{}\nRun with --force to replace it, or write "
      "to another folder with --out.",
      folder.dir(), resuming ? "partial" : "finished", listed));
}

std::string location_prefix(const Params& params, const std::string& key) {
  const SourceLocation& where = params.location(key);
  return where.known() ? where.str() + ": " : "";
}

// Whether this process's LibTorch has its CUDA part (libtorch_cuda, loaded with it when pelab was
// built against a CUDA LibTorch), whether or not a GPU is there to use.
bool libtorch_has_cuda() {
  void* handle = ::dlopen("libtorch_cuda.so", RTLD_LAZY | RTLD_NOLOAD);
  if (handle != nullptr) ::dlclose(handle);
  return handle != nullptr;
}

// train.device as a LibTorch device, refused with its manifest location when it is not one this
// pelab can train on.
torch::Device training_device(const RunConfig& config) {
  const std::string& text = config.train.string("device");
  std::optional<torch::Device> device;
  try {
    device = torch::Device(text);
  } catch (const c10::Error&) {
  }
  if (!device || !(device->is_cpu() || device->is_cuda())) {
    throw Error(fmt::format("{}train.device = \"{}\": expected \"cpu\", \"cuda\" or \"cuda:N\"",
                            location_prefix(config.train, "device"), text));
  }
  if (device->is_cuda()) {
    const auto gpus = static_cast<std::int64_t>(torch::cuda::device_count());
    if (gpus == 0 && libtorch_has_cuda()) {
      throw Error(fmt::format(
          "{}train.device = \"{}\": this pelab's LibTorch ({}) has no usable CUDA: it is built "
          "with CUDA but sees no GPU (none on this host, CUDA_VISIBLE_DEVICES hides them, or "
          "the driver is missing). Set train.device = \"cpu\", or run on a host with a GPU",
          location_prefix(config.train, "device"), text, TORCH_VERSION));
    }
    if (gpus == 0) {
      throw Error(fmt::format(
          "{}train.device = \"{}\": this pelab's LibTorch ({}) has no usable CUDA: it was built "
          "without CUDA. Set train.device = \"cpu\", or build pelab against a CUDA LibTorch: "
          "make build-current-torch, or cmake -S . -B build-cuda "
          "-DCMAKE_PREFIX_PATH=/path/to/libtorch (docs/performance.md, \"Training on a GPU\")",
          location_prefix(config.train, "device"), text, TORCH_VERSION));
    }
    if (device->has_index() && device->index() >= gpus) {
      throw Error(fmt::format("{}train.device = \"{}\": this host has {} GPU(s), cuda:0 to cuda:{}",
                              location_prefix(config.train, "device"), text, gpus, gpus - 1));
    }
  }
  return *device;
}

}  // namespace

BuiltRun::BuiltRun() = default;
BuiltRun::BuiltRun(BuiltRun&&) noexcept = default;
BuiltRun& BuiltRun::operator=(BuiltRun&&) noexcept = default;
BuiltRun::~BuiltRun() = default;

BuiltRun build_run(const RunConfig& config, Registry& registry, WithTrainer with_trainer,
                   std::shared_ptr<Task> task, Collective* ranks) {
  // Checked here, where `pelab validate` builds each point too, before anything is built.
  const torch::Device device = training_device(config);
  if (ranks != nullptr && ranks->size() > 1 && !device.is_cpu()) {
    throw Error(fmt::format(
        "{}train.device = \"{}\": data-parallel ranks reduce their gradients with Gloo on the "
        "CPU; train a run on one GPU per process, or set train.device = \"cpu\"",
        location_prefix(config.train, "device"), config.train.string("device")));
  }
  torch::manual_seed(static_cast<std::uint64_t>(config.seed));
  BuiltRun run;
  run.task = task ? std::move(task) : registry.create_task(config.task);
  run.layout = run.task->layout();
  run.layout.validate();
  const Layout& layout = run.layout;
  run.model = std::make_shared<TransformerEncoder>(
      ModelConfig::from_params(config.model), run.task->input_size(), run.task->objective(),
      [&](const ModelShape& shape) {
        return registry.create_positional_encoding(config.pe, layout, shape);
      });
  if (with_trainer == WithTrainer::kYes) {
    run.trainer = std::make_unique<Trainer>(
        *run.model, *run.task, TrainConfig::from_params(config.train), ranks, config.task.name);
  }
  return run;
}

std::string EpochProgress::to_line() const {
  std::string clean = evaluation;  // one line, whatever a metric name holds
  std::replace(clean.begin(), clean.end(), '\t', ' ');
  std::replace(clean.begin(), clean.end(), '\n', ' ');
  return fmt::format("pelab-progress\t{}\t{}\t{:.17g}\t{:.17g}\t{:.17g}\t{}\n", epoch, epochs, loss,
                     eta_seconds, steps_per_second, clean);
}

std::optional<EpochProgress> EpochProgress::parse(const std::string& line) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  for (std::size_t tab; (tab = line.find('\t', start)) != std::string::npos; start = tab + 1)
    fields.push_back(line.substr(start, tab - start));
  fields.push_back(line.substr(start));
  if (fields.size() != 7 || fields[0] != "pelab-progress") return std::nullopt;
  EpochProgress progress;
  try {
    progress.epoch = std::stoll(fields[1]);
    progress.epochs = std::stoll(fields[2]);
    progress.loss = std::stod(fields[3]);
    progress.eta_seconds = std::stod(fields[4]);
    progress.steps_per_second = std::stod(fields[5]);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  progress.evaluation = fields[6];
  return progress;
}

namespace {

std::string evaluation_line(const std::vector<MetricRow>& evaluation) {
  std::string text;
  for (const auto& row : evaluation) {
    if (row.group == "all") text += fmt::format("{}={:.4f} ", metric_key(row), row.value);
  }
  return text;
}

// Records a failed run in its summary. On a full disk that write fails too: the first error is
// the one to report, so this one is returned as a suffix for it ("" when recorded), and without a
// summary the run counts as interrupted and is resumed by the next `pelab run`.
std::string record_failure(const RunFolder& folder, const RunSummary& failed) {
  try {
    folder.write_summary(failed);
    return "";
  } catch (const Error& e) {
    return fmt::format("; the failure is not recorded either: {}", e.what());
  }
}

RunCompute compute_record(const HostInfo& host, const std::string& precision) {
  RunCompute compute;
  compute.cpu = host.cpu.model_name;
  compute.isa = host.cpu.isa_text();
  compute.blas = host.blas.text();
  compute.blas_kernel = host.blas.is_openblas        ? host.blas.kernel
                        : host.blas.library == "MKL" ? "MKL"
                                                     : "not OpenBLAS";
  compute.aten_kernels = host.aten_kernels;
  compute.precision = precision == "bf16"
                          ? fmt::format("bf16 ({})", host.bf16_native ? "native" : "emulated")
                          : precision;
  // What the control register says, not what was asked: a CPU without the mode cannot flush.
  compute.subnormals = flushes_subnormals() ? "flushed" : "gradual";
  return compute;
}

RunSummary summary_of(const RunConfig& config, const std::string& status) {
  RunSummary summary;
  summary.status = status;
  summary.experiment = config.experiment;
  summary.point = config.point;
  summary.seed = config.seed;
  return summary;
}

// One claimed run being trained in its folder: what it has produced so far (metrics, PE
// snapshots) and how long training took, over every process that trained it (a resumed run takes
// its earlier time from the checkpoint). Data-parallel, every rank trains it and only rank 0 has
// the folder, the claim and a log (the others get none).
class RunTraining {
 public:
  // `started`: when this process took the run on, model building included.
  RunTraining(const RunConfig& config, BuiltRun& run, const RunFolder* folder, RunClaim* claim,
              spdlog::logger& logger, Collective* ranks, Clock::time_point started)
      : config_(config),
        train_(run.trainer->config()),
        run_(run),
        folder_(folder),
        claim_(claim),
        logger_(logger),
        ranks_(ranks),
        started_(started) {}

  // Starts the run afresh in its folder: the initial snapshot and evaluation.
  void start_fresh() {
    if (folder_) {
      folder_->clear_outputs();
      folder_->write_config(config_);
      snapshots_.push_back(run_.model->snapshot(0));
      folder_->write_snapshot(snapshots_.back());
    }
    synchronize_ranks();
    rows_ = run_.trainer->evaluate(0);
    if (folder_) folder_->write_metrics(rows_);
  }

  // Restores the run from its last readable checkpoint (rank 0, which then hands it over).
  void resume() {
    if (folder_) {
      const auto checkpoint = folder_->load_checkpoint(*run_.model, &run_.trainer->optimizer());
      if (!checkpoint.warning.empty()) logger_.warn("{}", checkpoint.warning);
      try {
        rows_ = folder_->read_metrics(checkpoint.epoch);
        const std::string missing =
            RunFolder::missing_metrics(rows_, checkpoint.epoch, train_.eval_every);
        PELAB_CHECK(missing.empty(), "{} lacks {} (cut short)",
                    folder_->path(RunFolder::kMetricsFile), missing);
      } catch (const Error& e) {
        if (checkpoint.metrics_csv.empty()) throw;
        // Damaged (a hand edit, a copy cut short): the checkpoint's own copy is as good up to
        // its epoch, and the run rewrites the metrics at its next evaluation.
        rows_ = RunFolder::parse_metrics(checkpoint.metrics_csv, checkpoint.file, checkpoint.epoch);
        const std::string missing =
            RunFolder::missing_metrics(rows_, checkpoint.epoch, train_.eval_every);
        PELAB_CHECK(missing.empty(),
                    "{} is damaged ({}) and the checkpoint's copy lacks {}: delete the run folder "
                    "(or run with --force) to train the run again",
                    RunFolder::kMetricsFile, e.what(), missing);
        folder_->write_metrics(rows_);
        logger_.warn("{} is unreadable ({}); restored its rows up to epoch {} from {}",
                     RunFolder::kMetricsFile, e.what(), checkpoint.epoch, checkpoint.file);
      }
      snapshots_ = folder_->read_snapshots(checkpoint.epoch);
      run_.trainer->resume_after_epoch(checkpoint.epoch);
      // A checkpoint of an older pelab has no time: the run's cost then counts from here.
      if (checkpoint.time) earlier_ = *checkpoint.time;
      folder_->write_config(config_);  // may extend the epochs
      logger_.info("resumed from the checkpoint of epoch {} ({})", checkpoint.epoch,
                   checkpoint.file);
      last_epoch_ = checkpoint.epoch;
    }
    synchronize_ranks();
  }

  // Trains the remaining epochs, evaluating, snapshotting and checkpointing as configured. A
  // pelab::Error is recorded in the run's summary and rethrown naming the run and the epoch.
  void train(bool progress, int progress_fd = -1) {
    const std::int64_t first = last_epoch_ + 1;
    // The ETA follows this process's own pace, evaluations included: a resumed run may be on
    // another machine, or under another load, than the stretches before it.
    const auto training_started = Clock::now();
    try {
      for (std::int64_t epoch = first; epoch <= train_.epochs; ++epoch) {
        const double loss = train_epoch(epoch);
        const bool evaluated = epoch % train_.eval_every == 0 || epoch == train_.epochs;
        if (evaluated) evaluate(epoch);
        last_epoch_ = epoch;
        const double seconds =
            std::chrono::duration<double>(Clock::now() - training_started).count();
        const double eta = seconds / static_cast<double>(epoch - first + 1) *
                           static_cast<double>(train_.epochs - epoch);
        if (claim_) claim_->progress(epoch, train_.epochs, eta);
        if (progress) print_progress(epoch, loss, eta, evaluated);
        if (progress_fd >= 0) report_progress(progress_fd, epoch, loss, eta, evaluated);
      }
    } catch (const Error& e) {
      fail(e.what());
    } catch (const c10::Error& e) {
      // LibTorch refusing a value (a shape a plugin got wrong, ...) is this run's failure, not
      // pelab's: recorded like any other, without the C++ backtrace.
      fail(fmt::format("LibTorch stopped the training: {} (the run's PE: {})",
                       e.what_without_backtrace(), describe_spec(config_.pe)));
    } catch (const std::exception& e) {
      // LibTorch also throws plain standard exceptions (a learning rate that overflows a float).
      fail(fmt::format("LibTorch stopped the training: {} (the run's PE: {})", e.what(),
                       describe_spec(config_.pe)));
    }
    if (folder_) folder_->write_metrics(rows_);
  }

  [[noreturn]] void fail(const std::string& error) {
    RunSummary failed = summary_of(config_, "failed");
    failed.epoch = last_epoch_ + 1;
    failed.error = error;
    logger_.error("{}", error);
    if (!folder_) {
      throw Error(fmt::format("run {} failed in epoch {} on {}: {}", config_.relative_dir(),
                              failed.epoch, ranks_->rendezvous().describe(), error));
    }
    const std::string unrecorded = record_failure(*folder_, failed);
    throw Error(fmt::format("run {} failed in epoch {}: {} (its files are kept in {}{})",
                            config_.relative_dir(), failed.epoch, error, folder_->dir(),
                            unrecorded));
  }

  const std::vector<MetricRow>& rows() const { return rows_; }
  const std::vector<PESnapshot>& snapshots() const { return snapshots_; }
  double steps_per_second() const {
    return train_seconds() > 0 ? static_cast<double>(earlier_.steps + steps_) / train_seconds()
                               : 0.0;
  }
  // The wall time of the run so far, earlier processes' share included.
  double wall_seconds() const {
    return earlier_.wall_seconds + std::chrono::duration<double>(Clock::now() - started_).count();
  }

 private:
  // Every rank continues from rank 0's state and epoch.
  void synchronize_ranks() {
    if (ranks_ == nullptr) return;
    run_.trainer->synchronize_ranks();
    torch::Tensor epoch = torch::tensor({last_epoch_}, torch::kInt64);
    ranks_->broadcast(epoch);
    last_epoch_ = epoch.item<std::int64_t>();
  }

  double train_seconds() const { return earlier_.train_seconds + seconds_; }
  std::int64_t trained_epochs() const { return earlier_.epochs + epochs_; }

  double train_epoch(std::int64_t epoch) {
    const auto started = Clock::now();
    const double loss = run_.trainer->train_epoch();
    seconds_ += std::chrono::duration<double>(Clock::now() - started).count();
    steps_ += run_.trainer->steps_per_epoch();
    ++epochs_;
    rows_.push_back({epoch, "train_epoch", "all", "loss", loss});
    rows_.push_back({epoch, "train_epoch", "all", "lr", run_.trainer->current_learning_rate()});
    return loss;
  }

  void evaluate(std::int64_t epoch) {
    const auto evaluation = run_.trainer->evaluate(epoch);
    rows_.insert(rows_.end(), evaluation.begin(), evaluation.end());
    last_evaluation_ = evaluation_line(evaluation);
    if (!folder_) return;
    snapshots_.push_back(run_.model->snapshot(epoch));
    folder_->write_snapshot(snapshots_.back());
    folder_->write_metrics(rows_);
    const std::int64_t every = train_.checkpoint_every > 0 ? train_.checkpoint_every : 1;
    if ((epoch / train_.eval_every) % every == 0 || epoch == train_.epochs)
      folder_->save_checkpoint(
          *run_.model, run_.trainer->optimizer(), epoch, rows_,
          {wall_seconds(), train_seconds(), earlier_.steps + steps_, trained_epochs()});
    logger_.info("epoch {}: {}", epoch, evaluation_line(evaluation));
  }

  // To the parent of a -j worker; a parent gone (killed) is no reason to stop training.
  void report_progress(int fd, std::int64_t epoch, double loss, double eta, bool evaluated) const {
    EpochProgress report;
    report.epoch = epoch;
    report.epochs = train_.epochs;
    report.loss = loss;
    report.eta_seconds = eta;
    report.steps_per_second = steps_per_second();
    if (evaluated) report.evaluation = last_evaluation_;
    const std::string line = report.to_line();
    [[maybe_unused]] const ssize_t written = ::write(fd, line.data(), line.size());
  }

  // On a terminal, one line rewritten every epoch; in a log, a line per evaluation.
  void print_progress(std::int64_t epoch, double loss, double eta, bool evaluated) const {
    const std::string line =
        fmt::format("  seed {} epoch {}/{}  loss {:.4f}  {:.1f} steps/s  ETA {}", config_.seed,
                    epoch, train_.epochs, loss, steps_per_second(), format_duration(eta));
    if (::isatty(::fileno(stderr))) {
      fmt::print(stderr, "\r{:<78}", line);
      if (epoch == train_.epochs) fmt::print(stderr, "\n");
    } else if (evaluated) {
      fmt::print(stderr, "{}\n", line);
    }
  }

  const RunConfig& config_;
  const TrainConfig& train_;  // the trainer's
  BuiltRun& run_;
  const RunFolder* folder_;
  RunClaim* claim_;
  spdlog::logger& logger_;
  Collective* ranks_;
  std::vector<MetricRow> rows_;
  std::string last_evaluation_;  // the last evaluation, as evaluation_line writes it
  std::vector<PESnapshot> snapshots_;
  std::int64_t last_epoch_ = 0;
  // This process's share of the run; earlier_ holds the processes' before it.
  const Clock::time_point started_;
  double seconds_ = 0.0;
  std::int64_t steps_ = 0;
  std::int64_t epochs_ = 0;
  TrainingTime earlier_;
};

// What rank 0 found in a run's folder, which the other ranks follow.
enum class RankPlan : std::int64_t { kFresh, kResume, kSkipped, kClaimedElsewhere, kFailed };

RankPlan share_plan(Collective* ranks, RankPlan plan) {
  if (ranks == nullptr) return plan;
  torch::Tensor code = torch::tensor({static_cast<std::int64_t>(plan)}, torch::kInt64);
  ranks->broadcast(code);
  return static_cast<RankPlan>(code.item<std::int64_t>());
}

HostExecution host_execution(const RunConfig& config, const RunOptions& options) {
  return HostExecution::resolve(config.train.integer("threads"),
                                config.train.boolean("flush_subnormals"),
                                options.cores ? *options.cores : CoreShare::of_this_process());
}

}  // namespace

namespace {

// A rank other than 0: trains what rank 0 decided, writes nothing.
RunOutcome follow_rank_zero(const RunConfig& config, Registry& registry, Collective& ranks,
                            const HostExecution& execution, RunOutcome outcome) {
  const RankPlan plan = share_plan(&ranks, RankPlan::kFresh);
  if (plan == RankPlan::kSkipped) {
    outcome.skipped = true;
    return outcome;
  }
  if (plan == RankPlan::kClaimedElsewhere) {
    outcome.claimed_elsewhere = true;
    outcome.holder = "another process (see rank 0)";
    return outcome;
  }
  PELAB_CHECK(plan != RankPlan::kFailed, "{}: rank 0 could not start run {} (see its error)",
              ranks.rendezvous().describe(), config.relative_dir());
  const auto started = Clock::now();
  execution.apply();
  BuiltRun run = build_run(config, registry, WithTrainer::kYes, nullptr, &ranks);
  spdlog::logger silent("run");  // no sinks: rank 0 keeps the run's log
  RunTraining training(config, run, nullptr, nullptr, silent, &ranks, started);
  if (plan == RankPlan::kResume) {
    training.resume();
  } else {
    training.start_fresh();
  }
  training.train(false);
  outcome.seconds = training.wall_seconds();
  outcome.final_metrics = final_metrics(training.rows());
  return outcome;
}

}  // namespace

namespace {

// The run's log, in its folder. A log that cannot be written (a full disk) must not stop
// the run, but should be said once, plainly, rather than as spdlog's "*** LOG ERROR ***" lines.
std::shared_ptr<spdlog::logger> run_logger(const RunFolder& folder) {
  auto logger = std::make_shared<spdlog::logger>(
      "run", std::make_shared<spdlog::sinks::basic_file_sink_mt>(folder.log_path()));
  logger->flush_on(spdlog::level::info);
  logger->set_error_handler([warned = false](const std::string& message) mutable {
    if (!std::exchange(warned, true))
      fmt::print(stderr, "warning: {}: {}\n", RunFolder::kLogFile, message);
  });
  return logger;
}

// "<kind>/<name>" -> version of `spec`'s plugin and of every plugin nested in its parameters.
void add_plugin_versions(const PluginSpec& spec, Registry& registry,
                         std::map<std::string, std::string>& versions) {
  versions[to_string(spec.kind) + "/" + spec.name] =
      registry.get(spec.kind, spec.name).info->version;
  for (const auto& [name, value] : spec.params.values()) {
    if (const auto* nested = std::get_if<std::shared_ptr<const PluginSpec>>(&value))
      add_plugin_versions(**nested, registry, versions);
  }
}

// The plugins that build and probe the run, with their versions: a plugin whose results change
// declares a new version, and a run it made is then no longer reused as this one's (--reuse).
std::map<std::string, std::string> training_plugin_versions(const RunConfig& config,
                                                            Registry& registry) {
  std::map<std::string, std::string> versions;
  add_plugin_versions(config.task, registry, versions);
  add_plugin_versions(config.pe, registry, versions);
  return versions;
}

std::map<std::string, std::string> plugin_versions(const RunConfig& config, Registry& registry) {
  std::map<std::string, std::string> versions = training_plugin_versions(config, registry);
  for (const PluginSpec& probe : config.probes)
    add_plugin_versions(probe, registry, versions);
  return versions;
}

// The probes of `config` run on a reused run's copy in `folder`, whose source was probed
// otherwise: from its checkpoint and PE snapshots, as `pelab probe` runs them. The source's probe
// records are not this run's and go.
void probe_reused_run(const RunConfig& config, Registry& registry, const RunFolder& folder,
                      RunSummary& summary, spdlog::logger& logger) {
  folder.clear_probes();
  summary.probes.clear();
  const LoadedRun run = load_run(folder.dir(), registry, config.to_toml());
  std::vector<std::string> names;
  for (const auto& probe : run_probes(run, registry, folder)) {
    summary.probes[probe.name] = probe.scalars;
    names.push_back(probe.name);
    if (!probe.error.empty()) logger.warn("probe {} failed: {}", probe.name, probe.error);
  }
  summary.plugins = plugin_versions(config, registry);
  logger.info("probed again on the copy, as this run's configuration asks: {}",
              names.empty() ? std::string("no probes") : fmt::format("{}", fmt::join(names, ", ")));
}

// Copies a finished run of the same configuration and seed into the claimed `folder`, when
// `options.reuse_from` holds one: the run is then as good as trained here (RunOptions).
bool reuse_identical_run(const RunConfig& config, const StoredConfig& resolved, Registry& registry,
                         const RunFolder& folder, const RunOptions& options, RunOutcome& outcome) {
  if (options.reuse_from.empty()) return false;
  const auto found = ReusableRun::find(resolved, training_plugin_versions(config, registry),
                                       plugin_versions(config, registry),
                                       fs::path(folder.dir()).filename().string(),
                                       options.reuse_from, folder.dir(), &outcome.not_reused);
  if (!found) {
    if (!outcome.not_reused.empty())
      run_logger(folder)->warn("not reused, trained here: {}", outcome.not_reused);
    return false;
  }
  folder.clear_outputs();
  folder.copy_outputs_from(RunFolder(found->dir));
  folder.write_config(config);
  RunSummary summary = found->summary;
  summary.experiment = config.experiment;
  summary.point = config.point;
  summary.reused_from = found->dir;
  summary.configuration = folder.read_stored_config().identity();  // this folder's name and point
  const auto logger = run_logger(folder);
  logger->info(
      "reused from {}: a finished run of the same training configuration and seed "
      "(trained on {}); not trained again",
      found->dir, summary.compute.short_text());
  if (found->probes_differ) probe_reused_run(config, registry, folder, summary, *logger);
  outcome.probed_again = found->probes_differ;
  folder.write_summary(summary);
  outcome.reused_from = found->dir;
  outcome.final_metrics = summary.final_metrics;
  outcome.seconds = summary.wall_seconds;
  return outcome.skipped = true;
}

// Rank 0 (or a single process) decides what becomes of a run: skipped when it has finished with the
// same configuration, left to another live process that holds it, resumed from its checkpoint, or
// started afresh, or copied from an identical run under the claim (RunOptions::reuse_from; then
// kSkipped). Plans other than kFresh and kResume need no claim after it returns. The other ranks
// learn the plan (share_plan), a failure included.
struct ClaimedRun {
  RankPlan plan = RankPlan::kFresh;
  std::unique_ptr<RunClaim> claim;
};

ClaimedRun claim_run(const RunConfig& config, Registry& registry, const std::string& output_root,
                     const RunFolder& folder, const RunOptions& options, Collective* ranks,
                     RunOutcome& outcome) {
  const StoredConfig resolved = StoredConfig::parse(config.to_toml(), folder.config_path());
  auto finished = [&] {
    const auto summary = folder.read_summary();
    if (options.force || !summary || !summary->finished()) return false;
    check_same_config(folder, resolved, /*resuming=*/false, registry);
    outcome.final_metrics = summary->final_metrics;
    return outcome.skipped = true;
  };
  ClaimedRun claimed;
  try {
    // Before anything of the run is read or written: the point serves one configuration.
    claim_point(config, output_root, registry, options.force);
    if (finished()) {
      claimed.plan = share_plan(ranks, RankPlan::kSkipped);
      return claimed;
    }
    std::optional<ClaimOwner> holder;
    claimed.claim = RunClaim::try_claim(folder.dir(), &holder);
    if (!claimed.claim) {
      outcome.claimed_elsewhere = true;
      outcome.holder = holder ? holder->describe() : "another process";
      claimed.plan = share_plan(ranks, RankPlan::kClaimedElsewhere);
      return claimed;
    }
    if (finished()) {  // by the process that held it a moment ago
      claimed.plan = share_plan(ranks, RankPlan::kSkipped);
      return claimed;
    }
    folder.remove_stale_temporaries();
    const bool resume = folder.has_checkpoint() && !options.force;
    if (resume) check_same_config(folder, resolved, /*resuming=*/true, registry);
    claimed.plan = resume ? RankPlan::kResume
                   : reuse_identical_run(config, resolved, registry, folder, options, outcome)
                       ? RankPlan::kSkipped
                       : RankPlan::kFresh;
  } catch (const Error&) {
    share_plan(ranks, RankPlan::kFailed);
    throw;
  }
  share_plan(ranks, claimed.plan);
  return claimed;
}

// build_run, with a failure (a plugin that refuses its parameters or fails) recorded in the run's
// own files too.
BuiltRun build_recorded(const RunConfig& config, Registry& registry, const RunFolder& folder,
                        Collective* ranks, spdlog::logger& logger) {
  try {
    return build_run(config, registry, WithTrainer::kYes, nullptr, ranks);
  } catch (const Error& e) {
    logger.error("{}", e.what());
    RunSummary failed = summary_of(config, "failed");
    failed.error = e.what();
    const std::string unrecorded = record_failure(folder, failed);
    if (unrecorded.empty()) throw;
    throw Error(e.what() + unrecorded);
  }
}

// The log's first lines: what trains the run, on what host, and the host's warnings that concern
// it (the bf16 warning only for runs that compute in bf16).
void log_run_start(spdlog::logger& logger, const RunConfig& config, const BuiltRun& run,
                   const RunClaim& claim, const HostExecution& execution, Collective* ranks,
                   const HostInfo& host) {
  const std::int64_t world = ranks != nullptr ? ranks->size() : 1;
  logger.info(
      "run {} seed {} on {}: {} parameters, {}{}", config.relative_dir(), config.seed,
      claim.owner_description(), run.model->parameter_count(),
      world > 1 ? fmt::format("{} ranks ({}), each ", world, ranks->rendezvous().source) : "",
      execution.text());
  logger.info("host: {}", host_line(host));
  const std::string& precision = config.train.string("precision");
  for (const std::string& warning : host.warnings) {
    if (warning.find("bf16") == std::string::npos || precision == "bf16")
      logger.warn("{}", warning);
  }
}

// A trained run's probes and summary; the last checkpoint is the one kept.
void finish_run(const RunConfig& config, BuiltRun& run, const RunTraining& training,
                const RunFolder& folder, Registry& registry, std::int64_t threads,
                std::int64_t world, const HostInfo& host, spdlog::logger& logger,
                RunOutcome& outcome) {
  RunSummary summary = summary_of(config, "finished");
  // Probes read the model with host tensors, wherever it trained.
  run.model->to(torch::kCPU);
  TrainedEncoder trained(*run.model, *run.task);
  const ProbeContext context{run.layout, training.snapshots(), &trained, run.task.get(), &registry};
  for (const auto& probe : run_probes(config.probes, context, registry, folder)) {
    summary.probes[probe.name] = probe.scalars;
    if (!probe.error.empty()) logger.warn("probe {} failed: {}", probe.name, probe.error);
  }
  outcome.seconds = training.wall_seconds();
  outcome.final_metrics = final_metrics(training.rows());
  summary.epoch = config.train.integer("epochs");
  summary.objective = run.task->objective().name();
  summary.parameters = run.model->parameter_count();
  summary.threads = threads;
  summary.ranks = world;
  summary.wall_seconds = outcome.seconds;
  summary.steps_per_second = training.steps_per_second();
  summary.torch_version = TORCH_VERSION;
  summary.plugins = plugin_versions(config, registry);
  summary.compute = compute_record(host, config.train.string("precision"));
  summary.final_metrics = outcome.final_metrics;
  summary.snapshot_files = static_cast<std::int64_t>(folder.snapshot_file_epochs().size());
  summary.configuration = folder.read_stored_config().identity();
  folder.write_summary(summary);
  folder.remove_previous_checkpoint();
  logger.info("finished in {}", format_duration(outcome.seconds));
}

}  // namespace

RunOutcome execute_run(const RunConfig& config, Registry& registry, const std::string& output_root,
                       const RunOptions& options) {
  Collective* ranks =
      options.ranks != nullptr && options.ranks->size() > 1 ? options.ranks : nullptr;
  RunOutcome outcome;
  outcome.dir = (fs::path(output_root) / config.relative_dir()).string();
  const HostExecution execution = host_execution(config, options);
  if (ranks != nullptr && ranks->rank() != 0)
    return follow_rank_zero(config, registry, *ranks, execution, outcome);

  const RunFolder folder(outcome.dir);
  const ClaimedRun claimed =
      claim_run(config, registry, output_root, folder, options, ranks, outcome);
  if (claimed.plan != RankPlan::kFresh && claimed.plan != RankPlan::kResume) return outcome;
  const auto started = Clock::now();

  const auto logger = run_logger(folder);
  execution.apply();
  BuiltRun run = build_recorded(config, registry, folder, ranks, *logger);
  const HostInfo host = host_info();
  log_run_start(*logger, config, run, *claimed.claim, execution, ranks, host);

  RunTraining training(config, run, &folder, claimed.claim.get(), *logger, ranks, started);
  if (claimed.plan == RankPlan::kResume) {
    training.resume();
  } else {
    training.start_fresh();
  }
  training.train(options.progress, options.progress_fd);
  finish_run(config, run, training, folder, registry, execution.threads,
             ranks != nullptr ? ranks->size() : 1, host, *logger, outcome);
  return outcome;
}

}  // namespace pelab
