#include "probe_command.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include <fmt/format.h>

#include "pelab/base/error.h"
#include "pelab/config/manifest.h"
#include "pelab/interfaces/probe.h"
#include "pelab/plugins/registry.h"
#include "pelab/runs/experiment_folder.h"
#include "pelab/runs/probing.h"
#include "pelab/runs/run_folder.h"
#include "pelab/runs/run_loader.h"

namespace pelab::cli {

namespace {

// "rsa.permutations=100" (or "probe.rsa.permutations=100") -> "probe.<i>.permutations=100" for
// every selected probe i named rsa.
std::vector<std::string> probe_overrides(const std::vector<std::string>& overrides,
                                         const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& text : overrides) {
    std::string rest = text;
    if (rest.rfind("probe.", 0) == 0) rest = rest.substr(6);
    const auto dot = rest.find('.');
    const auto equals = rest.find('=');
    PELAB_CHECK(dot != std::string::npos && equals != std::string::npos && dot < equals,
                "--set '{}': expected NAME.key=value, with NAME a probe, e.g. --set "
                "rsa.permutations=100",
                text);
    const std::string name = rest.substr(0, dot);
    bool found = false;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i] != name) continue;
      out.push_back(fmt::format("probe.{}.{}", i, rest.substr(dot + 1)));
      found = true;
    }
    if (!found) {
      std::string listed;
      for (const auto& n : names)
        listed += (listed.empty() ? "" : ", ") + n;
      throw Error(
          fmt::format("--set '{}': no probe named '{}' runs here (the probes: {}); add "
                      "--probe {}",
                      text, name, listed.empty() ? "none" : listed, name));
    }
  }
  return out;
}

std::string short_number(double value) {
  return std::isfinite(value) ? fmt::format("{:.4g}", value) : "nan";
}

}  // namespace

int probe(const GlobalOptions& global, const ProbeOptions& probe_options) {
  Registry registry = global.make_registry();
  const std::string dir = probe_options.run_dir;
  const RunFolder folder(dir);
  const RunConfig stored = folder.read_config(registry);

  // The probes to run: the run's own, or those named with --probe (with the run's parameters
  // for a probe it already has).
  std::vector<PluginSpec> selected;
  if (probe_options.probes.empty()) {
    selected = stored.probes;
  } else {
    for (const auto& name : probe_options.probes) {
      bool found = false;
      for (const auto& spec : stored.probes) {
        if (spec.name == name) {
          selected.push_back(spec);
          found = true;
        }
      }
      if (!found) selected.push_back(registry.default_spec(PluginKind::kProbe, name));
    }
  }
  PELAB_CHECK(!selected.empty(), "{} has no [[probe]] tables: name the probes with --probe NAME",
              folder.config_path());
  // The run's configuration with these probes, resolved again with their --set overrides.
  RunConfig probed = stored;
  probed.probes = selected;
  std::vector<std::string> names;
  for (const auto& spec : selected)
    names.push_back(spec.name);
  const LoadedRun run =
      load_run(dir, registry, probed.to_toml(), probe_overrides(probe_options.overrides, names));
  if (run.snapshots.empty()) {
    fmt::print(stderr, "warning: {} has no PE snapshots in {}/\n", dir, RunFolder::kSnapshotFolder);
  }
  const std::vector<ProbeOutcome> outcomes = run_probes(run, registry, folder);

  // The summary's probes entry: these probes' scalars replace what was there for them.
  std::optional<RunSummary> summary = folder.read_summary();
  int failed = 0;
  fmt::print("probes of {} (PE snapshots: {}{})\n", dir, run.snapshots.size(),
             run.model ? fmt::format(", model of epoch {}", run.checkpoint_epoch)
                       : std::string(", no checkpoint"));
  for (const auto& outcome : outcomes) {
    if (summary) summary->probes[outcome.name] = outcome.scalars;
    std::string line;
    for (const auto& [name, value] : outcome.scalars) {
      if (!is_per_block_scalar(name)) line += fmt::format("  {} {}", name, short_number(value));
    }
    fmt::print("  {:<16}{}\n", outcome.name, line);
    if (!outcome.note.empty()) fmt::print("  {:<16}  note: {}\n", "", outcome.note);
    if (!outcome.error.empty()) {
      fmt::print(stderr, "error: probe {}: {}\n", outcome.name, outcome.error);
      ++failed;
    }
  }
  if (summary) folder.write_summary(*summary);
  const std::string summary_note =
      summary ? fmt::format("; {} updated", RunFolder::kSummaryFile)
              : fmt::format(" (no {}: the run has not ended)", RunFolder::kSummaryFile);
  fmt::print("written: {}/{}/<name>.json, .npy{}\n", dir, RunFolder::kProbeFolder, summary_note);
  return failed > 0 ? 1 : 0;
}

ProbeCommand::ProbeCommand(CLI::App& app, const GlobalOptions& global)
    : Command(
          app, "probe",
          fmt::format("Run probes on a finished run folder (default: the probes of its {}); "
                      "writes {}/<name>.json and .npy and updates {}",
                      RunFolder::kConfigFile, RunFolder::kProbeFolder, RunFolder::kSummaryFile)),
      global_(global) {
  command_
      ->add_option("run", probe_options_.run_dir,
                   fmt::format("The run folder (<out>/<exp>/{})", kRunLayout))
      ->required();
  command_->add_option("--probe", probe_options_.probes, "A probe to run (repeatable)")
      ->allow_extra_args(false);
  command_
      ->add_option("--set", probe_options_.overrides,
                   "Set a probe parameter: --set rsa.permutations=100 (repeatable)")
      ->allow_extra_args(false);
}

}  // namespace pelab::cli
