#include "pelab/run_loader.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include <fmt/format.h>
#include <torch/torch.h>
#include <boost/filesystem.hpp>
#include <nlohmann/json.hpp>

#include "pelab/error.h"
#include "pelab/registry.h"
#include "pelab/run.h"
#include "pelab/run_folder.h"
#include "pelab/run_io.h"
#include "pelab/task.h"
#include "pelab/transformer_encoder.h"

namespace pelab {

namespace fs = boost::filesystem;
using json = nlohmann::ordered_json;

std::string probe_output_name(const std::string& plugin, int occurrence) {
  return occurrence == 1 ? plugin : fmt::format("{}_{}", plugin, occurrence);
}

std::string to_string(Better better) {
  switch (better) {
    case Better::kHigher:
      return "higher";
    case Better::kLower:
      return "lower";
    case Better::kNeither:
      break;
  }
  return "neither";
}

namespace {

std::string scalar_names(const std::map<std::string, double>& scalars) {
  std::string names;
  for (const auto& [name, value] : scalars)
    names += (names.empty() ? "" : ", ") + name;
  return names.empty() ? std::string("none") : names;
}

}  // namespace

std::vector<ProbeOutcome> run_probes(const std::vector<PluginSpec>& probes,
                                     const ProbeContext& context, Registry& registry,
                                     const std::string& run_dir) {
  std::vector<ProbeOutcome> outcomes;
  std::map<std::string, int> seen;
  for (const auto& spec : probes) {
    ProbeOutcome outcome;
    // A probe listed twice (e.g. modularity of rows and of columns) writes `<name>_2`, ...
    outcome.name = probe_output_name(spec.name, ++seen[spec.name]);
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
      for (const Headline& headline : result.headlines) {
        PELAB_CHECK(result.scalars.count(headline.scalar),
                    "the probe declares the headline scalar '{}' but returned no scalar of that "
                    "name (it returned: {}); a headline must name one of the result's scalars",
                    headline.scalar, scalar_names(result.scalars));
      }
      outcome.scalars = result.scalars;
      outcome.headlines = result.headlines;
      outcome.note = result.note;
      for (const auto& [name, array] : result.arrays) {
        if (!array.defined()) continue;
        const std::string file = fmt::format("probes/{}-{}.npy", outcome.name, name);
        write_npy(run_dir + "/" + file, array);
        outcome.arrays.push_back(file);
      }
    } catch (const c10::Error& e) {
      // A probe's failure must not lose the run it probes: record it and go on (LibTorch's
      // backtrace is for its developers, not the run's record).
      outcome.scalars.clear();
      outcome.error = fmt::format("LibTorch: {}", e.what_without_backtrace());
    } catch (const std::exception& e) {
      outcome.scalars.clear();
      outcome.error = e.what();
    }
    json scalars = json::object();
    for (const auto& [name, value] : outcome.scalars)
      scalars[name] = value;  // NaN is written as null
    document["scalars"] = scalars;
    if (!outcome.headlines.empty()) {
      json headlines = json::array();
      for (const Headline& headline : outcome.headlines) {
        headlines.push_back({{"scalar", headline.scalar},
                             {"better", to_string(headline.better)},
                             {"meaning", headline.meaning}});
      }
      document["headlines"] = headlines;
    }
    document["arrays"] = outcome.arrays;
    if (!outcome.note.empty()) document["note"] = outcome.note;
    if (!outcome.error.empty()) document["error"] = outcome.error;
    write_file_atomically(fmt::format("{}/probes/{}.json", run_dir, outcome.name),
                          document.dump(2) + "\n");
    outcomes.push_back(std::move(outcome));
  }
  return outcomes;
}

LoadedRun load_run(const std::string& dir, Registry& registry, const std::string& config_text,
                   const std::vector<std::string>& overrides) {
  const RunFolder folder(dir);
  LoadedRun loaded;
  loaded.dir = dir;
  loaded.config = folder.read_config(registry, config_text, overrides);
  BuiltRun run = build_run(loaded.config, registry, WithTrainer::kNo);
  loaded.task = run.task;
  loaded.layout = run.layout;
  if (folder.has_checkpoint()) {
    const auto checkpoint = folder.load_checkpoint(*run.model, /*optimizer=*/nullptr);
    if (!checkpoint.warning.empty())
      std::fprintf(stderr, "warning: %s\n", checkpoint.warning.c_str());
    loaded.checkpoint_epoch = checkpoint.epoch;
    run.model->eval();
    loaded.model = run.model;
  }
  loaded.snapshots = folder.read_snapshots();
  // Training writes the PE's table or kernel at every checkpoint; none on disk means the files were
  // removed, and a probe would otherwise report "no PE" where there is one.
  const PESnapshot expected = run.model->snapshot(0);
  PELAB_CHECK(
      !loaded.snapshots.empty() || (!expected.tables.defined() && !expected.kernels.defined()),
      "{}: the run's PE snapshots are missing: {} holds no tables-epoch-*.npy or "
      "kernels-epoch-*.npy, though its PE ('{}') has a {} that training writes at every "
      "checkpoint. Restore the folder from a copy, or train the run again (pelab run "
      "{} --force)",
      dir, folder.path("pe"), loaded.config.pe.name, expected.tables.defined() ? "table" : "kernel",
      folder.path("config.toml"));
  return loaded;
}

}  // namespace pelab
