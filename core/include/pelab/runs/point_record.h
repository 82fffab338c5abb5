#pragma once

// The configuration a sweep point serves, `<experiment>/<point>/point.toml`. The first run of a
// point records it before it trains, under an exclusive lock (`<point>/.point.lock`); every later
// or concurrent run of the point compares its own configuration with it and is refused when they
// differ, naming the keys. Two manifests started together on one experiment folder therefore
// never mix in one point: without it, each run checked only the finished runs of its own folder,
// and two configurations that started at once both claimed seeds of the same point.

#include <string>

#include "pelab/base/export.h"
#include "pelab/config/manifest.h"

namespace pelab {

class Registry;

/// Records (first run) or checks (every other) the configuration that `config`'s point serves in
/// the experiment folder under `output_root`. What a point may differ in between its runs is not
/// compared: the seed, the description, the host execution keys (train.threads,
/// train.flush_subnormals) and train.epochs (a run resumed with more epochs extends itself; the
/// record keeps the latest length). `replace` (`--force`) records `config` in place of a
/// different record. Throws pelab::Error naming the record and each differing key.
PELAB_API void claim_point(const RunConfig& config, const std::string& output_root,
                           Registry& registry, bool replace);

}  // namespace pelab
