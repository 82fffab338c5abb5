// Fuzzes manifest reading and validation (pelab/manifest.h), with `--set` overrides: any manifest
// gives runs or a pelab::Error. An input's leading lines of the form `--set KEY=VALUE` are the
// overrides, the rest is the manifest. A run that was read must also write a config.toml that
// reads back as the same run, since that is how every run folder is resumed.

#include <vector>

#include "fuzz_target.h"
#include "pelab/config/manifest.h"
#include "pelab/plugins/registry.h"

namespace {

pelab::Registry& registry() {
  static pelab::Registry registry({pelab::Registry::builtin_plugin_folder()});
  return registry;
}

void check_round_trip(const pelab::RunConfig& run) {
  const std::string written = run.to_toml();
  std::string again;
  try {
    const pelab::Manifest reread = pelab::Manifest::from_string(written, "config.toml", registry());
    again = reread.runs().at(0).to_toml();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "\na run's config.toml does not read back: %s\n--- config.toml ---\n%s\n",
                 error.what(), written.c_str());
    std::abort();
  }
  if (again != written) {
    std::fprintf(stderr,
                 "\na run's config.toml reads back as another run:\n--- written ---\n%s\n"
                 "--- read back and written again ---\n%s\n",
                 written.c_str(), again.c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  registry();  // loads every built-in plugin once, not per input
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text = pelab::fuzz::as_string(data, size);
  std::vector<std::string> overrides;
  static const std::string kSet = "--set ";
  while (text.compare(0, kSet.size(), kSet) == 0) {
    const std::size_t end = text.find('\n');
    overrides.push_back(
        text.substr(kSet.size(), end == std::string::npos ? end : end - kSet.size()));
    text = end == std::string::npos ? "" : text.substr(end + 1);
  }
  pelab::fuzz::expect_pelab_errors_only("Manifest::from_string", [&] {
    const pelab::Manifest manifest =
        pelab::Manifest::from_string(text, "manifest.toml", registry(), overrides);
    if (!manifest.runs().empty()) {
      check_round_trip(manifest.runs().front());
      check_round_trip(manifest.runs().back());
    }
  });
  return 0;
}
