#include "pelab/runs/probing.h"

#include <map>
#include <memory>

#include <fmt/format.h>
#include <torch/torch.h>

#include "pelab/base/error.h"
#include "pelab/plugins/registry.h"
#include "pelab/runs/run_loader.h"
#include "pelab/runs/trained_encoder.h"

namespace pelab {

std::string probe_output_name(const std::string& plugin, int occurrence) {
  return occurrence == 1 ? plugin : fmt::format("{}_{}", plugin, occurrence);
}

namespace {

std::string scalar_names(const std::map<std::string, double>& scalars) {
  std::string names;
  for (const auto& [name, value] : scalars)
    names += (names.empty() ? "" : ", ") + name;
  return names.empty() ? std::string("none") : names;
}

// Runs one probe into `outcome`, its arrays written to `folder`; throws what the probe throws.
void run_probe(const PluginSpec& spec, const ProbeContext& context, Registry& registry,
               const RunFolder& folder, ProbeOutcome& outcome) {
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
    if (array.defined())
      outcome.arrays.push_back(folder.write_probe_array(outcome.name, name, array));
  }
}

}  // namespace

std::vector<ProbeOutcome> run_probes(const std::vector<PluginSpec>& probes,
                                     const ProbeContext& context, Registry& registry,
                                     const RunFolder& folder) {
  std::vector<ProbeOutcome> outcomes;
  std::map<std::string, int> seen;
  for (const auto& spec : probes) {
    ProbeOutcome outcome;
    // A probe listed twice (e.g. modularity of rows and of columns) writes `<name>_2`, ...
    outcome.name = probe_output_name(spec.name, ++seen[spec.name]);
    outcome.plugin = spec.name;
    if (!context.snapshots.empty()) outcome.epoch = context.snapshots.back().epoch;
    folder.remove_probe_arrays(outcome.name);
    try {
      run_probe(spec, context, registry, folder, outcome);
    } catch (const c10::Error& e) {
      // LibTorch's backtrace is for its developers, not the run's record.
      outcome.scalars.clear();
      outcome.error = fmt::format("LibTorch: {}", e.what_without_backtrace());
    } catch (const std::exception& e) {
      outcome.scalars.clear();
      outcome.error = e.what();
    }
    folder.write_probe_record(outcome);
    outcomes.push_back(std::move(outcome));
  }
  return outcomes;
}

std::vector<ProbeOutcome> run_probes(const LoadedRun& run, Registry& registry,
                                     const RunFolder& folder) {
  std::unique_ptr<TrainedEncoder> trained;
  if (run.model && run.task) trained = std::make_unique<TrainedEncoder>(*run.model, *run.task);
  const ProbeContext context{run.layout, run.snapshots, trained.get(), run.task.get(), &registry};
  return run_probes(run.config.probes, context, registry, folder);
}

}  // namespace pelab
