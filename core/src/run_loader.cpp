#include "pelab/run_loader.h"

#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <torch/torch.h>
#include <boost/filesystem.hpp>
#include <nlohmann/json.hpp>

#include "pelab/error.h"
#include "pelab/registry.h"
#include "pelab/run_io.h"
#include "pelab/task.h"
#include "pelab/transformer_encoder.h"

namespace pelab {

namespace fs = boost::filesystem;
using json = nlohmann::ordered_json;

std::vector<ProbeOutcome> run_probes(const std::vector<PluginSpec>& probes,
                                     const ProbeContext& context, Registry& registry,
                                     const std::string& run_dir) {
  std::vector<ProbeOutcome> outcomes;
  std::map<std::string, int> seen;
  for (const auto& spec : probes) {
    ProbeOutcome outcome;
    // A probe listed twice (e.g. modularity of rows and of columns) writes `<name>_2`, ...
    const int count = ++seen[spec.name];
    outcome.name = count == 1 ? spec.name : fmt::format("{}_{}", spec.name, count);
    json document = {{"probe", spec.name}};
    if (!context.snapshots.empty()) document["epoch"] = context.snapshots.back().epoch;
    // Arrays of an earlier run of this probe would outlive a failure or a renamed array.
    const std::string prefix = outcome.name + "-";
    boost::system::error_code ignored;
    if (fs::is_directory(run_dir + "/probes")) {
      for (const auto& entry : fs::directory_iterator(run_dir + "/probes")) {
        const std::string file = entry.path().filename().string();
        if (file.rfind(prefix, 0) == 0 && entry.path().extension() == ".npy")
          fs::remove(entry.path(), ignored);
      }
    }
    try {
      std::shared_ptr<Probe> probe = registry.create_probe(spec);
      const ProbeResult result = probe->run(context);
      outcome.scalars = result.scalars;
      outcome.note = result.note;
      for (const auto& [name, array] : result.arrays) {
        if (!array.defined()) continue;
        const std::string file = fmt::format("probes/{}-{}.npy", outcome.name, name);
        write_npy(run_dir + "/" + file, array);
        outcome.arrays.push_back(file);
      }
    } catch (const std::exception& e) {
      // A probe's failure must not lose the run it probes: record it and go on.
      outcome.scalars.clear();
      outcome.error = e.what();
    }
    json scalars = json::object();
    for (const auto& [name, value] : outcome.scalars)
      scalars[name] = value;  // NaN is written as null
    document["scalars"] = scalars;
    document["arrays"] = outcome.arrays;
    if (!outcome.note.empty()) document["note"] = outcome.note;
    if (!outcome.error.empty()) document["error"] = outcome.error;
    write_file_atomically(fmt::format("{}/probes/{}.json", run_dir, outcome.name),
                          document.dump(2) + "\n");
    outcomes.push_back(std::move(outcome));
  }
  return outcomes;
}

std::vector<PESnapshot> read_snapshots(const std::string& dir) {
  std::map<std::int64_t, PESnapshot> by_epoch;
  const fs::path folder = fs::path(dir) / "pe";
  if (!fs::is_directory(folder)) return {};
  static const std::regex name("(tables|kernels)-epoch-([0-9]+)\\.npy");
  for (const auto& entry : fs::directory_iterator(folder)) {
    std::smatch match;
    const std::string file = entry.path().filename().string();
    if (!std::regex_match(file, match, name)) continue;
    const std::int64_t epoch = std::stoll(match[2].str());
    PESnapshot& snapshot = by_epoch[epoch];
    snapshot.epoch = epoch;
    (match[1].str() == "tables" ? snapshot.tables : snapshot.kernels) =
        read_npy(entry.path().string());
  }
  std::vector<PESnapshot> snapshots;
  for (auto& [epoch, snapshot] : by_epoch)
    snapshots.push_back(std::move(snapshot));
  return snapshots;
}

LoadedRun load_run(const std::string& dir, Registry& registry, const std::string& config_text,
                   const std::vector<std::string>& overrides) {
  const std::string config_path = dir + "/config.toml";
  PELAB_CHECK(fs::is_regular_file(config_path),
              "'{}' is not a run folder: it has no config.toml (a run folder is "
              "<out>/<experiment>/<point>/seed-<s>/)",
              dir);
  const std::string text = config_text.empty() ? read_file(config_path) : config_text;
  const Manifest manifest = Manifest::from_string(text, config_path, registry, overrides);
  PELAB_CHECK(manifest.runs().size() == 1,
              "{} expands to {} runs; a run's config.toml describes exactly one", config_path,
              manifest.runs().size());
  LoadedRun run;
  run.dir = dir;
  run.config = manifest.runs().front();
  {  // The sweep point is a comment of the resolved configuration.
    std::istringstream lines(text);
    const std::string marker = "# sweep point: ";
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind(marker, 0) == 0) run.config.point = line.substr(marker.size());
    }
  }
  torch::manual_seed(static_cast<std::uint64_t>(run.config.seed));
  run.task = registry.create_task(run.config.task);
  run.layout = run.task->layout();
  run.layout.validate();

  const std::string checkpoint = dir + "/checkpoint.pt";
  if (fs::is_regular_file(checkpoint)) {
    const ModelConfig model_config = ModelConfig::from_params(run.config.model);
    const RunConfig& config = run.config;
    const Layout& layout = run.layout;
    auto model = std::make_shared<TransformerEncoder>(
        model_config, run.task->input_size(), run.task->objective(), [&](const ModelShape& shape) {
          return registry.create_positional_encoding(config.pe, layout, shape);
        });
    try {
      torch::serialize::InputArchive archive, model_archive;
      archive.load_from(checkpoint);
      archive.read("model", model_archive);
      model->load(model_archive);
      torch::Tensor epoch;
      archive.read("epoch", epoch);
      run.checkpoint_epoch = epoch.item<std::int64_t>();
    } catch (const c10::Error& e) {
      throw Error(fmt::format("cannot read the model from '{}': {}", checkpoint,
                              e.what_without_backtrace()));
    }
    model->eval();
    run.model = model;
  }
  run.snapshots = read_snapshots(dir);
  return run;
}

}  // namespace pelab
