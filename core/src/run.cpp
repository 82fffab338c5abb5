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
#include <nlohmann/json.hpp>

#include "pelab/error.h"
#include "pelab/registry.h"
#include "pelab/run_io.h"
#include "pelab/run_loader.h"
#include "pelab/trainer.h"
#include "pelab/transformer_encoder.h"

namespace pelab {

namespace fs = boost::filesystem;
using Clock = std::chrono::steady_clock;
using json = nlohmann::ordered_json;

namespace {

std::string format_duration(double seconds) {
  const auto total = static_cast<long long>(seconds + 0.5);
  if (total >= 3600) return fmt::format("{}h{:02}m", total / 3600, (total % 3600) / 60);
  if (total >= 60) return fmt::format("{}m{:02}s", total / 60, total % 60);
  return fmt::format("{}s", total);
}

std::string metrics_csv(const std::vector<MetricRow>& rows) {
  std::string out = "epoch,split,group,metric,value\n";
  for (const auto& row : rows) {
    out += fmt::format("{},{},{},{},{}\n", row.epoch, csv_field(row.split), csv_field(row.group),
                       csv_field(row.metric), format_number(row.value));
  }
  return out;
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

std::string snapshot_name(const char* what, std::int64_t epoch) {
  return fmt::format("pe/{}-epoch-{:06}.npy", what, epoch);
}

void write_snapshot(const std::string& dir, const PESnapshot& snapshot) {
  if (snapshot.tables.defined()) {
    write_npy(dir + "/" + snapshot_name("tables", snapshot.epoch), snapshot.tables);
  }
  if (snapshot.kernels.defined()) {
    write_npy(dir + "/" + snapshot_name("kernels", snapshot.epoch), snapshot.kernels);
  }
}

void save_checkpoint(const std::string& path, TransformerEncoder& model,
                     torch::optim::Optimizer& optimizer, std::int64_t epoch) {
  torch::serialize::OutputArchive archive;
  torch::serialize::OutputArchive model_archive, optimizer_archive;
  model.save(model_archive);
  optimizer.save(optimizer_archive);
  archive.write("model", model_archive);
  archive.write("optimizer", optimizer_archive);
  archive.write("epoch", torch::tensor(epoch));
  archive.write("rng_state", at::detail::getDefaultCPUGenerator().get_state());
  std::ostringstream bytes;
  archive.save_to(bytes);
  write_file_atomically(path, bytes.str());
}

std::int64_t load_checkpoint(const std::string& path, TransformerEncoder& model,
                             torch::optim::Optimizer& optimizer) {
  torch::serialize::InputArchive archive;
  archive.load_from(path);
  torch::serialize::InputArchive model_archive, optimizer_archive;
  archive.read("model", model_archive);
  archive.read("optimizer", optimizer_archive);
  model.load(model_archive);
  optimizer.load(optimizer_archive);
  torch::Tensor epoch, rng_state;
  archive.read("epoch", epoch);
  archive.read("rng_state", rng_state);
  at::Generator generator = at::detail::getDefaultCPUGenerator();  // a handle: shares its state
  generator.set_state(rng_state);
  return epoch.item<std::int64_t>();
}

// Rows of a metrics.csv written by metrics_csv(), up to and including `last_epoch`.
std::vector<MetricRow> read_metrics(const std::string& path, std::int64_t last_epoch) {
  std::vector<MetricRow> rows;
  std::istringstream in(read_file(path));
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    const std::vector<std::string> fields = parse_csv_line(line);
    PELAB_CHECK(fields.size() == 5, "{}: malformed row '{}'; delete the run folder to start over",
                path, line);
    MetricRow row{std::stoll(fields[0]), fields[1], fields[2], fields[3], std::stod(fields[4])};
    if (row.epoch <= last_epoch) rows.push_back(row);
  }
  return rows;
}

bool finished(const std::string& summary_path, std::map<std::string, double>* metrics) {
  if (!fs::exists(summary_path)) return false;
  const json summary = json::parse(read_file(summary_path), nullptr, false);
  if (summary.is_discarded() || summary.value("status", "") != "finished") return false;
  if (summary.contains("final")) {
    for (const auto& [key, value] : summary["final"].items()) {
      // JSON has no NaN: a non-finite metric was stored as null.
      (*metrics)[key] = value.is_number() ? value.get<double>() : std::nan("");
    }
  }
  return true;
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
std::string resolved_again(const std::string& path, Registry& registry) {
  const std::string text = read_file(path);
  try {
    const Manifest manifest = Manifest::from_string(text, path, registry, {});
    if (manifest.runs().size() == 1) return manifest.runs().front().to_toml();
  } catch (const Error&) {
  }
  return text;
}

// A run folder may only be reused for the same configuration (resuming may extend the epochs).
void check_same_config(const std::string& dir, const std::string& current, bool resuming,
                       Registry& registry) {
  const std::string path = dir + "/config.toml";
  if (!fs::exists(path)) return;
  // The description documents the experiment; editing it changes no run.
  std::set<std::string> ignored = {"experiment.description"};
  if (resuming) ignored.insert("train.epochs");
  const auto differences = config_differences(resolved_again(path, registry), current, ignored);
  if (differences.empty()) return;
  std::string listed;
  for (const auto& difference : differences)
    listed += "\n  " + difference;
  throw Error(fmt::format(
      "{} holds a {} run of another configuration:{}\nRun with --force to replace it, or write "
      "to another folder with --out.",
      dir, resuming ? "partial" : "finished", listed));
}

json probe_scalars_json(const std::map<std::string, double>& values) {
  json scalars = json::object();
  for (const auto& [name, value] : values)
    scalars[name] = value;
  return scalars;
}

}  // namespace

RunOutcome execute_run(const RunConfig& config, Registry& registry, const std::string& output_root,
                       const RunOptions& options) {
  RunOutcome outcome;
  outcome.dir = (fs::path(output_root) / config.relative_dir()).string();
  const std::string dir = outcome.dir;
  const std::string summary_path = dir + "/summary.json";
  const std::string resolved = config.to_toml();
  if (!options.force && finished(summary_path, &outcome.final_metrics)) {
    check_same_config(dir, resolved, /*resuming=*/false, registry);
    outcome.skipped = true;
    return outcome;
  }
  boost::system::error_code error;
  fs::create_directories(dir, error);
  PELAB_CHECK(!error, "cannot create the run folder '{}': {}", dir, error.message());
  const auto started = Clock::now();

  auto logger = std::make_shared<spdlog::logger>(
      "run", std::make_shared<spdlog::sinks::basic_file_sink_mt>(dir + "/run.log"));
  logger->flush_on(spdlog::level::info);

  const std::int64_t threads = config.train.integer("threads") > 0
                                   ? config.train.integer("threads")
                                   : std::max(1u, std::thread::hardware_concurrency());
  torch::set_num_threads(static_cast<int>(threads));
  torch::manual_seed(static_cast<std::uint64_t>(config.seed));

  const TrainConfig train_config = TrainConfig::from_params(config.train);
  const ModelConfig model_config = ModelConfig::from_params(config.model);
  PELAB_CHECK(config.train.string("device") == "cpu",
              "device = \"{}\" needs a LibTorch built with CUDA; this build runs on the CPU",
              config.train.string("device"));

  std::shared_ptr<Task> task = registry.create_task(config.task);
  const Layout layout = task->layout();
  layout.validate();
  auto model = std::make_shared<TransformerEncoder>(
      model_config, task->input_size(), task->objective(), [&](const ModelShape& shape) {
        return registry.create_positional_encoding(config.pe, layout, shape);
      });
  Trainer trainer(*model, *task, train_config);
  logger->info("run {} seed {}: {} parameters, {} threads", config.relative_dir(), config.seed,
               model->parameter_count(), threads);
  if (train_config.bf16_autocast && !cpu_has_native_bf16()) {
    logger->warn(
        "precision = \"bf16\" on a CPU without AVX512-BF16: bf16 is emulated here and "
        "slower than fp32; use precision = \"fp32\"");
  }

  std::vector<MetricRow> rows;
  std::vector<PESnapshot> snapshots;
  std::int64_t first_epoch = 1;
  const std::string checkpoint_path = dir + "/checkpoint.pt";
  if (fs::exists(checkpoint_path) && !options.force) {
    check_same_config(dir, resolved, /*resuming=*/true, registry);
    const std::int64_t epoch = load_checkpoint(checkpoint_path, *model, trainer.optimizer());
    rows = read_metrics(dir + "/metrics.csv", epoch);
    for (std::int64_t e = 0; e <= epoch; ++e) {
      const std::string tables = dir + "/" + snapshot_name("tables", e);
      const std::string kernels = dir + "/" + snapshot_name("kernels", e);
      if (!fs::exists(tables) && !fs::exists(kernels)) continue;
      PESnapshot snapshot;
      snapshot.epoch = e;
      if (fs::exists(tables)) snapshot.tables = read_npy(tables);
      if (fs::exists(kernels)) snapshot.kernels = read_npy(kernels);
      snapshots.push_back(snapshot);
    }
    first_epoch = epoch + 1;
    trainer.resume_after_epoch(epoch);
    write_file_atomically(dir + "/config.toml", resolved);  // may extend the epochs
    logger->info("resumed from the checkpoint of epoch {}", epoch);
  } else {
    for (const char* stale : {"metrics.csv", "summary.json", "checkpoint.pt"}) {
      fs::remove(fs::path(dir) / stale, error);
    }
    fs::remove_all(fs::path(dir) / "pe", error);
    fs::remove_all(fs::path(dir) / "probes", error);
    write_file_atomically(dir + "/config.toml", resolved);
    snapshots.push_back(model->snapshot(0));
    write_snapshot(dir, snapshots.back());
    auto initial = trainer.evaluate(0);
    rows.insert(rows.end(), initial.begin(), initial.end());
    write_file_atomically(dir + "/metrics.csv", metrics_csv(rows));
  }

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
        snapshots.push_back(model->snapshot(epoch));
        write_snapshot(dir, snapshots.back());
        write_file_atomically(dir + "/metrics.csv", metrics_csv(rows));
        const std::int64_t every =
            train_config.checkpoint_every > 0 ? train_config.checkpoint_every : 1;
        if ((epoch / train_config.eval_every) % every == 0 || epoch == epochs) {
          save_checkpoint(checkpoint_path, *model, trainer.optimizer(), epoch);
        }
        logger->info("epoch {}: {}", epoch, [&] {
          std::string text;
          for (const auto& row : evaluation) {
            if (row.group == "all") text += fmt::format("{}={:.4f} ", metric_key(row), row.value);
          }
          return text;
        }());
      }
      if (options.progress) {
        const double per_epoch = training_seconds / static_cast<double>(epoch - first_epoch + 1);
        const double steps_per_second = static_cast<double>(trained_steps) / training_seconds;
        const std::string line =
            fmt::format("  seed {} epoch {}/{}  loss {:.4f}  {:.1f} steps/s  ETA {}", config.seed,
                        epoch, epochs, loss, steps_per_second,
                        format_duration(per_epoch * static_cast<double>(epochs - epoch)));
        if (interactive) {
          std::fprintf(stderr, "\r%-78s", line.c_str());
          if (epoch == epochs) std::fprintf(stderr, "\n");
        } else if (evaluate) {
          std::fprintf(stderr, "%s\n", line.c_str());
        }
      }
    }
  } catch (const Error& e) {
    json summary = {{"status", "failed"},     {"error", e.what()},
                    {"epoch", current_epoch}, {"experiment", config.experiment},
                    {"point", config.point},  {"seed", config.seed}};
    write_file_atomically(summary_path, summary.dump(2) + "\n");
    logger->error("{}", e.what());
    throw Error(fmt::format("run {} failed in epoch {}: {} (its files are kept in {})",
                            config.relative_dir(), current_epoch, e.what(), dir));
  }
  write_file_atomically(dir + "/metrics.csv", metrics_csv(rows));

  json probes = json::object();
  const ProbeContext context{layout, snapshots, model.get(), task.get(), &registry};
  for (const auto& probe : run_probes(config.probes, context, registry, dir)) {
    probes[probe.name] = probe_scalars_json(probe.scalars);
    if (!probe.error.empty()) logger->warn("probe {} failed: {}", probe.name, probe.error);
  }

  outcome.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  outcome.final_metrics = final_metrics(rows);
  json final_json = json::object();
  for (const auto& [key, value] : outcome.final_metrics)
    final_json[key] = value;
  json summary = {
      {"status", "finished"},
      {"experiment", config.experiment},
      {"point", config.point},
      {"seed", config.seed},
      {"epochs", epochs},
      {"objective", task->objective().name()},
      {"parameters", model->parameter_count()},
      {"threads", threads},
      {"wall_seconds", outcome.seconds},
      {"steps_per_second",
       training_seconds > 0 ? static_cast<double>(trained_steps) / training_seconds : 0.0},
      {"torch_version", TORCH_VERSION},
      {"final", final_json},
      {"probes", probes},
  };
  write_file_atomically(summary_path, summary.dump(2) + "\n");
  logger->info("finished in {}", format_duration(outcome.seconds));
  return outcome;
}

}  // namespace pelab
