#include "pelab/runs/reusable_run.h"

#include <algorithm>

#include <fmt/format.h>
#include <torch/version.h>
#include <boost/filesystem.hpp>

#include "pelab/base/error.h"
#include "pelab/config/sections.h"
#include "pelab/runs/experiment_folder.h"

namespace pelab {

namespace fs = boost::filesystem;

namespace {

// The folders under `root` that may be experiment folders: `root` itself and its subfolders.
std::vector<fs::path> experiment_candidates(const fs::path& root) {
  std::vector<fs::path> found = {root};
  boost::system::error_code unreadable;
  for (fs::directory_iterator it(root, unreadable), end; !unreadable && it != end;
       it.increment(unreadable)) {
    boost::system::error_code unreadable_entry;
    if (fs::is_directory(it->path(), unreadable_entry) &&
        it->path().filename().string().front() != '.')
      found.push_back(it->path());
  }
  std::sort(found.begin() + 1, found.end());
  return found;
}

// The [[probe]] tables' keys ("probe.<i>.<key>", StoredConfig::values).
bool is_probe_key(const std::string& key) {
  return key.rfind("probe.", 0) == 0;
}

// The keys of `a` and `b` that do not define the training: the ignored ones and the probes'.
std::set<std::string> non_training_keys(const StoredConfig& a, const StoredConfig& b) {
  std::set<std::string> keys = ReusableRun::ignored_keys();
  for (const StoredConfig* config : {&a, &b}) {
    for (const auto& [key, value] : config->values) {
      if (is_probe_key(key)) keys.insert(key);
    }
  }
  return keys;
}

// Every key of `wanted` is in `recorded`, at the same version.
bool records_versions(const std::map<std::string, std::string>& recorded,
                      const std::map<std::string, std::string>& wanted) {
  return std::all_of(wanted.begin(), wanted.end(), [&](const auto& entry) {
    const auto it = recorded.find(entry.first);
    return it != recorded.end() && it->second == entry.second;
  });
}

bool same_folder(const fs::path& a, const fs::path& b) {
  boost::system::error_code missing;
  return fs::exists(a, missing) && fs::exists(b, missing) && fs::equivalent(a, b, missing);
}

}  // namespace

const std::set<std::string>& ReusableRun::ignored_keys() {
  static const std::set<std::string> keys = [] {
    std::set<std::string> ignored = host_execution_keys();
    ignored.insert({"experiment.name", "experiment.description", "experiment.point"});
    return ignored;
  }();
  return keys;
}

void ReusableRun::check_roots(const std::vector<std::string>& roots) {
  for (const std::string& root : roots) {
    PELAB_CHECK(fs::is_directory(root),
                "--reuse {}: no such folder (give an output root, such as runs, or an "
                "experiment's folder)",
                root);
  }
}

std::optional<ReusableRun> ReusableRun::find(
    const StoredConfig& config, const std::map<std::string, std::string>& training_plugins,
    const std::map<std::string, std::string>& plugins, const std::string& seed_folder,
    const std::vector<std::string>& roots, const std::string& except, std::string* near_miss) {
  check_roots(roots);
  for (const std::string& root : roots) {
    for (const fs::path& experiment : experiment_candidates(root)) {
      for (const std::string& relative : ExperimentFolder(experiment.string()).seed_folders()) {
        if (fs::path(relative).filename().string() != seed_folder) continue;
        const fs::path dir = experiment / relative;
        if (same_folder(dir, except)) continue;
        const RunFolder folder(dir.string());
        if (!folder.has_config()) continue;
        std::optional<RunSummary> summary;
        try {
          summary = folder.read_summary();
          if (summary) folder.check_config_unchanged(*summary);
        } catch (const Error&) {
          continue;  // a damaged or edited folder is no match; its own sweep reports it
        }
        if (!summary || !summary->finished()) continue;
        StoredConfig stored;
        try {
          stored = folder.read_stored_config();
        } catch (const Error&) {
          continue;  // an unreadable file is no match; its own sweep reports it
        }
        if (!stored.differences(config, non_training_keys(stored, config)).empty()) continue;
        // The same training configuration and seed; copied unless it may have trained otherwise
        // or is not all there.
        std::string why_not;
        if (summary->torch_version != TORCH_VERSION) {
          // Another LibTorch rounds differently (and a long run amplifies it).
          why_not = fmt::format("it was trained with LibTorch {}, this pelab has {}",
                                summary->torch_version, TORCH_VERSION);
        } else if (!summary->plugins.empty() &&
                   !records_versions(summary->plugins, training_plugins)) {
          // A plugin at another version may train otherwise under the same configuration.
          why_not = "it was trained by other versions of its task's or PE's plugins";
        } else {
          // Only a whole run is copied: its metrics complete, its snapshots all there (a shipped
          // archive's records are not).
          why_not = folder.why_not_whole(*summary, stored.integer("train.eval_every").value_or(1));
        }
        if (!why_not.empty()) {
          if (near_miss != nullptr && near_miss->empty())
            *near_miss = fmt::format("{}: {}", dir.string(), why_not);
          continue;
        }
        // The keys left to differ are the probes'.
        const bool probes_differ = !stored.differences(config, ignored_keys()).empty() ||
                                   (!summary->plugins.empty() && summary->plugins != plugins);
        return ReusableRun{dir.string(), std::move(*summary), probes_differ};
      }
    }
  }
  return std::nullopt;
}

}  // namespace pelab
