#include "pelab/run.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <boost/filesystem.hpp>

#include "pelab/error.h"
#include "pelab/registry.h"
#include "pelab/run_claim.h"
#include "pelab/run_folder.h"
#include "pelab/run_io.h"
#include "pelab/run_loader.h"
#include "pelab/trainer.h"
#include "pelab/transformer_encoder.h"

namespace pelab {

namespace fs = boost::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

std::string format_duration(double seconds) {
  const auto total = static_cast<long long>(seconds + 0.5);
  if (total >= 3600) return fmt::format("{}h{:02}m", total / 3600, (total % 3600) / 60);
  if (total >= 60) return fmt::format("{}m{:02}s", total / 60, total % 60);
  return fmt::format("{}s", total);
}

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

// "section.key = value" for every assignment of a config.toml written by RunConfig::to_toml().
std::map<std::string, std::string> config_entries(const std::string& toml) {
  std::map<std::string, std::string> entries;
  std::istringstream in(toml);
  std::string section;
  int probe = -1;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    if (line == "[[probe]]") {
      section = fmt::format("probe.{}", ++probe);
    } else if (line[0] == '[') {
      section = line.substr(1, line.find(']') - 1);
    } else if (const auto equals = line.find(" = "); equals != std::string::npos) {
      entries[section + "." + line.substr(0, equals)] = line.substr(equals + 3);
    }
  }
  return entries;
}

// The keys whose values differ between two resolved configurations, except `ignored` ones.
std::vector<std::string> config_differences(const std::string& stored, const std::string& current,
                                            const std::set<std::string>& ignored) {
  const auto before = config_entries(stored);
  const auto after = config_entries(current);
  std::vector<std::string> differences;
  auto describe = [](const auto& map, const std::string& key) {
    auto it = map.find(key);
    return it == map.end() ? std::string("(absent)") : it->second;
  };
  std::set<std::string> keys;
  for (const auto& [key, value] : before)
    keys.insert(key);
  for (const auto& [key, value] : after)
    keys.insert(key);
  for (const auto& key : keys) {
    if (ignored.count(key) || describe(before, key) == describe(after, key)) continue;
    differences.push_back(
        fmt::format("{}: {} -> {}", key, describe(before, key), describe(after, key)));
  }
  return differences;
}

// A stored config.toml as this pelab resolves it: keys added since the run was written take their
// defaults, so that an upgrade alone is not a difference. A file that no longer resolves (a key
// since removed) is compared as it is, and the comparison names what changed.
std::string resolved_again(const RunFolder& folder, Registry& registry) {
  try {
    return folder.read_config(registry).to_toml();
  } catch (const Error&) {
    return folder.read_config_text();
  }
}

// A run folder may only be reused for the same configuration (resuming may extend the epochs).
void check_same_config(const RunFolder& folder, const std::string& current, bool resuming,
                       Registry& registry) {
  if (!folder.has_config()) return;
  // The description documents the experiment, and the threads set how fast it runs (a sweep's
  // launcher shares the cores out): changing them changes no run.
  std::set<std::string> ignored = {"experiment.description", "train.threads"};
  if (resuming) ignored.insert("train.epochs");
  const auto differences = config_differences(resolved_again(folder, registry), current, ignored);
  if (differences.empty()) return;
  std::string listed;
  for (const auto& difference : differences)
    listed += "\n  " + difference;
  throw Error(fmt::format(
      "{} holds a {} run of another configuration:{}\nRun with --force to replace it, or write "
      "to another folder with --out.",
      folder.dir(), resuming ? "partial" : "finished", listed));
}

}  // namespace

BuiltRun::BuiltRun() = default;
BuiltRun::BuiltRun(BuiltRun&&) noexcept = default;
BuiltRun& BuiltRun::operator=(BuiltRun&&) noexcept = default;
BuiltRun::~BuiltRun() = default;

BuiltRun build_run(const RunConfig& config, Registry& registry, WithTrainer with_trainer) {
  torch::manual_seed(static_cast<std::uint64_t>(config.seed));
  BuiltRun run;
  run.task = registry.create_task(config.task);
  run.layout = run.task->layout();
  run.layout.validate();
  const Layout& layout = run.layout;
  run.model = std::make_shared<TransformerEncoder>(
      ModelConfig::from_params(config.model), run.task->input_size(), run.task->objective(),
      [&](const ModelShape& shape) {
        return registry.create_positional_encoding(config.pe, layout, shape);
      });
  if (with_trainer == WithTrainer::kYes) {
    run.trainer =
        std::make_unique<Trainer>(*run.model, *run.task, TrainConfig::from_params(config.train));
  }
  return run;
}

namespace {

// Starts the run afresh in its folder: the initial snapshot and evaluation. Returns epoch 0.
std::int64_t start_fresh(const RunFolder& folder, const RunConfig& config, BuiltRun& run,
                         std::vector<MetricRow>& rows, std::vector<PESnapshot>& snapshots) {
  folder.clear_outputs();
  folder.write_config(config);
  snapshots.push_back(run.model->snapshot(0));
  folder.write_snapshot(snapshots.back());
  rows = run.trainer->evaluate(0);
  folder.write_metrics(rows);
  return 0;
}

// Restores the run from its checkpoint. Returns the checkpoint's epoch.
std::int64_t resume(const RunFolder& folder, const RunConfig& config, BuiltRun& run,
                    std::vector<MetricRow>& rows, std::vector<PESnapshot>& snapshots,
                    spdlog::logger& logger) {
  const auto checkpoint = folder.load_checkpoint(*run.model, &run.trainer->optimizer());
  if (!checkpoint.warning.empty()) logger.warn("{}", checkpoint.warning);
  rows = folder.read_metrics(checkpoint.epoch);
  snapshots = folder.read_snapshots(checkpoint.epoch);
  run.trainer->resume_after_epoch(checkpoint.epoch);
  folder.write_config(config);  // may extend the epochs
  logger.info("resumed from the checkpoint of epoch {} ({})", checkpoint.epoch, checkpoint.file);
  return checkpoint.epoch;
}

std::string evaluation_line(const std::vector<MetricRow>& evaluation) {
  std::string text;
  for (const auto& row : evaluation) {
    if (row.group == "all") text += fmt::format("{}={:.4f} ", metric_key(row), row.value);
  }
  return text;
}

}  // namespace

RunOutcome execute_run(const RunConfig& config, Registry& registry, const std::string& output_root,
                       const RunOptions& options) {
  RunOutcome outcome;
  outcome.dir = (fs::path(output_root) / config.relative_dir()).string();
  const RunFolder folder(outcome.dir);
  const std::string resolved = config.to_toml();
  auto finished = [&] {
    const auto summary = folder.read_summary();
    if (options.force || !summary || !summary->finished()) return false;
    check_same_config(folder, resolved, /*resuming=*/false, registry);
    outcome.final_metrics = summary->final_metrics;
    return outcome.skipped = true;
  };
  if (finished()) return outcome;
  std::optional<ClaimOwner> holder;
  const std::unique_ptr<RunClaim> claim = RunClaim::try_claim(outcome.dir, &holder);
  if (!claim) {
    outcome.claimed_elsewhere = true;
    outcome.holder = holder ? holder->describe() : "another process";
    return outcome;
  }
  if (finished()) return outcome;  // by the process that held it a moment ago
  const auto started = Clock::now();

  auto logger = std::make_shared<spdlog::logger>(
      "run", std::make_shared<spdlog::sinks::basic_file_sink_mt>(folder.path("run.log")));
  logger->flush_on(spdlog::level::info);
  const std::int64_t threads = config.train.integer("threads") > 0
                                   ? config.train.integer("threads")
                                   : std::max(1u, std::thread::hardware_concurrency());
  torch::set_num_threads(static_cast<int>(threads));
  PELAB_CHECK(config.train.string("device") == "cpu",
              "device = \"{}\" needs a LibTorch built with CUDA; this build runs on the CPU",
              config.train.string("device"));
  BuiltRun run = build_run(config, registry);
  Trainer& trainer = *run.trainer;
  const TrainConfig train_config = TrainConfig::from_params(config.train);
  logger->info("run {} seed {} on {}: {} parameters, {} threads", config.relative_dir(),
               config.seed, claim->owner_description(), run.model->parameter_count(), threads);
  if (train_config.bf16_autocast && !cpu_has_native_bf16()) {
    logger->warn(
        "precision = \"bf16\" on a CPU without AVX512-BF16: bf16 is emulated here and "
        "slower than fp32; use precision = \"fp32\"");
  }

  std::vector<MetricRow> rows;
  std::vector<PESnapshot> snapshots;
  const bool resuming = folder.has_checkpoint() && !options.force;
  if (resuming) check_same_config(folder, resolved, /*resuming=*/true, registry);
  const std::int64_t first_epoch =
      1 + (resuming ? resume(folder, config, run, rows, snapshots, *logger)
                    : start_fresh(folder, config, run, rows, snapshots));

  const std::int64_t epochs = train_config.epochs;
  const std::int64_t steps_per_epoch = trainer.steps_per_epoch();
  const bool interactive = options.progress && ::isatty(::fileno(stderr));
  double training_seconds = 0.0;
  std::int64_t trained_steps = 0;
  std::int64_t current_epoch = first_epoch;
  try {
    for (std::int64_t epoch = first_epoch; epoch <= epochs; ++epoch) {
      current_epoch = epoch;
      const auto epoch_started = Clock::now();
      const double loss = trainer.train_epoch();
      training_seconds += std::chrono::duration<double>(Clock::now() - epoch_started).count();
      trained_steps += steps_per_epoch;
      rows.push_back({epoch, "train_epoch", "all", "loss", loss});
      rows.push_back({epoch, "train_epoch", "all", "lr", trainer.current_learning_rate()});

      const bool evaluate = epoch % train_config.eval_every == 0 || epoch == epochs;
      if (evaluate) {
        auto evaluation = trainer.evaluate(epoch);
        rows.insert(rows.end(), evaluation.begin(), evaluation.end());
        snapshots.push_back(run.model->snapshot(epoch));
        folder.write_snapshot(snapshots.back());
        folder.write_metrics(rows);
        const std::int64_t every =
            train_config.checkpoint_every > 0 ? train_config.checkpoint_every : 1;
        if ((epoch / train_config.eval_every) % every == 0 || epoch == epochs) {
          folder.save_checkpoint(*run.model, trainer.optimizer(), epoch);
        }
        logger->info("epoch {}: {}", epoch, evaluation_line(evaluation));
      }
      const double per_epoch = training_seconds / static_cast<double>(epoch - first_epoch + 1);
      const double eta = per_epoch * static_cast<double>(epochs - epoch);
      claim->progress(epoch, epochs, eta);
      if (options.progress) {
        const double steps_per_second = static_cast<double>(trained_steps) / training_seconds;
        const std::string line =
            fmt::format("  seed {} epoch {}/{}  loss {:.4f}  {:.1f} steps/s  ETA {}", config.seed,
                        epoch, epochs, loss, steps_per_second, format_duration(eta));
        if (interactive) {
          std::fprintf(stderr, "\r%-78s", line.c_str());
          if (epoch == epochs) std::fprintf(stderr, "\n");
        } else if (evaluate) {
          std::fprintf(stderr, "%s\n", line.c_str());
        }
      }
    }
  } catch (const Error& e) {
    RunSummary failed;
    failed.status = "failed";
    failed.experiment = config.experiment;
    failed.point = config.point;
    failed.seed = config.seed;
    failed.epoch = current_epoch;
    failed.error = e.what();
    folder.write_summary(failed);
    logger->error("{}", e.what());
    throw Error(fmt::format("run {} failed in epoch {}: {} (its files are kept in {})",
                            config.relative_dir(), current_epoch, e.what(), outcome.dir));
  }
  folder.write_metrics(rows);

  RunSummary summary;
  const ProbeContext context{run.layout, snapshots, run.model.get(), run.task.get(), &registry};
  for (const auto& probe : run_probes(config.probes, context, registry, outcome.dir)) {
    summary.probes[probe.name] = probe.scalars;
    if (!probe.error.empty()) logger->warn("probe {} failed: {}", probe.name, probe.error);
  }
  outcome.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  outcome.final_metrics = final_metrics(rows);
  summary.status = "finished";
  summary.experiment = config.experiment;
  summary.point = config.point;
  summary.seed = config.seed;
  summary.epoch = epochs;
  summary.objective = run.task->objective().name();
  summary.parameters = run.model->parameter_count();
  summary.threads = threads;
  summary.wall_seconds = outcome.seconds;
  summary.steps_per_second =
      training_seconds > 0 ? static_cast<double>(trained_steps) / training_seconds : 0.0;
  summary.torch_version = TORCH_VERSION;
  summary.final_metrics = outcome.final_metrics;
  folder.write_summary(summary);
  folder.remove_previous_checkpoint();
  logger->info("finished in {}", format_duration(outcome.seconds));
  return outcome;
}

}  // namespace pelab
