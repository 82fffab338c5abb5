// Fuzzes the readers of a stored run folder (pelab/run_folder.h, pelab/run_claim.h): config.toml
// (this pelab's and the legacy format), summary.json, metrics.csv, claim.json and a probe record
// (probes/<name>.json), and the check that a run is whole (what --reuse copies). These are files
// that a killed process, a full disk or a hand edit may have left in any state; `pelab run`,
// `pelab status`, `pelab probe` and `pelab report` read them. The input is written as each of the
// five files at once, so every seed exercises one reader's deep paths and the others' error paths.

#include <filesystem>

#include "fuzz_target.h"
#include "pelab/plugins/registry.h"
#include "pelab/runs/run_claim.h"
#include "pelab/runs/run_folder.h"

namespace {

pelab::Registry& registry() {
  static pelab::Registry registry({pelab::Registry::builtin_plugin_folder()});
  return registry;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  registry();
  std::filesystem::create_directories(pelab::fuzz::scratch_dir() + "/probes");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string contents = pelab::fuzz::as_string(data, size);
  for (const char* name :
       {"config.toml", "summary.json", "metrics.csv", "claim.json", "probes/fuzz.json"}) {
    pelab::fuzz::write_scratch_file(name, contents);
  }
  const pelab::RunFolder folder(pelab::fuzz::scratch_dir());
  pelab::fuzz::expect_pelab_errors_only("RunFolder::read_config",
                                        [&] { folder.read_config(registry()); });
  pelab::fuzz::expect_pelab_errors_only("RunFolder::read_summary", [&] { folder.read_summary(); });
  pelab::fuzz::expect_pelab_errors_only("RunFolder::read_metrics", [&] { folder.read_metrics(); });
  pelab::fuzz::expect_pelab_errors_only("RunFolder::read_probe_record",
                                        [&] { folder.read_probe_record("fuzz"); });
  pelab::fuzz::expect_pelab_errors_only("RunFolder::why_not_whole", [&] {
    if (const auto summary = folder.read_summary()) folder.why_not_whole(*summary, 1);
  });
  pelab::fuzz::expect_pelab_errors_only("RunClaim::read",
                                        [&] { pelab::RunClaim::read(folder.dir()); });
  return 0;
}
