#include "probe_command.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <boost/filesystem.hpp>

#include "pelab/error.h"
#include "pelab/manifest.h"
#include "pelab/registry.h"
#include "pelab/run_folder.h"
#include "pelab/run_io.h"
#include "pelab/run_loader.h"

namespace pelab::cli {

namespace fs = boost::filesystem;

namespace {

// A resolved configuration without its [[probe]] tables (they come last in a config.toml, but any
// table after them is kept).
std::string without_probes(const std::string& toml) {
  std::istringstream in(toml);
  std::string out;
  bool in_probe = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "[[probe]]") {
      in_probe = true;
    } else if (!line.empty() && line[0] == '[') {
      in_probe = false;
    }
    if (!in_probe) out += line + "\n";
  }
  return out;
}

std::string probe_table(const PluginSpec& spec) {
  std::string out = fmt::format("\n[[probe]]\nplugin = {}\n", format_value(spec.name));
  for (const auto& [name, value] : spec.params.values())
    out += fmt::format("{} = {}\n", name, format_value(value));
  return out;
}

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
  const std::string config_text = folder.read_config_text();
  const RunConfig stored = folder.read_config(registry);
  const std::string config_path = folder.path("config.toml");

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
              config_path);
  std::string text = without_probes(config_text);
  std::vector<std::string> names;
  for (const auto& spec : selected) {
    text += probe_table(spec);
    names.push_back(spec.name);
  }
  const LoadedRun run =
      load_run(dir, registry, text, probe_overrides(probe_options.overrides, names));
  if (run.snapshots.empty()) {
    std::fprintf(stderr, "warning: %s has no PE snapshots in pe/\n", dir.c_str());
  }
  const ProbeContext context{run.layout, run.snapshots, run.model.get(), run.task.get(), &registry};
  const std::vector<ProbeOutcome> outcomes = run_probes(run.config.probes, context, registry, dir);

  // summary.json's probes entry: these probes' scalars replace what was there for them.
  std::optional<RunSummary> summary = folder.read_summary();
  int failed = 0;
  std::printf("probes of %s (PE snapshots: %zu%s)\n", dir.c_str(), run.snapshots.size(),
              run.model ? fmt::format(", model of epoch {}", run.checkpoint_epoch).c_str()
                        : ", no checkpoint");
  for (const auto& outcome : outcomes) {
    if (summary) summary->probes[outcome.name] = outcome.scalars;
    std::string line;
    for (const auto& [name, value] : outcome.scalars) {
      if (name.find("_block") == std::string::npos)
        line += fmt::format("  {} {}", name, short_number(value));
    }
    std::printf("  %-16s%s\n", outcome.name.c_str(), line.c_str());
    if (!outcome.note.empty()) std::printf("  %-16s  note: %s\n", "", outcome.note.c_str());
    if (!outcome.error.empty()) {
      std::fprintf(stderr, "error: probe %s: %s\n", outcome.name.c_str(), outcome.error.c_str());
      ++failed;
    }
  }
  if (summary) folder.write_summary(*summary);
  std::printf("written: %s/probes/<name>.json, .npy%s\n", dir.c_str(),
              summary ? "; summary.json updated" : " (no summary.json: the run has not ended)");
  return failed > 0 ? 1 : 0;
}

ProbeCommand::ProbeCommand(CLI::App& app, const GlobalOptions& global)
    : Command(app, "probe",
              "Run probes on a finished run folder (default: the probes of its config.toml); "
              "writes probes/<name>.json and .npy and updates summary.json"),
      global_(global) {
  command_
      ->add_option("run", probe_options_.run_dir, "The run folder (<out>/<exp>/<point>/seed-<s>)")
      ->required();
  command_->add_option("--probe", probe_options_.probes, "A probe to run (repeatable)")
      ->allow_extra_args(false);
  command_
      ->add_option("--set", probe_options_.overrides,
                   "Set a probe parameter: --set rsa.permutations=100 (repeatable)")
      ->allow_extra_args(false);
}

}  // namespace pelab::cli
