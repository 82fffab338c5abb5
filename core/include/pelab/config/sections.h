#pragma once

#include <set>
#include <string>

#include "pelab/base/export.h"
#include "pelab/interfaces/params.h"

namespace pelab {

/// The schemas of a manifest's core sections, the one place where their defaults are written: the
/// manifest resolves [experiment], [model] and [train] against them, ModelConfig and TrainConfig
/// read what they resolved to (their default constructors read the defaults), and `pelab describe
/// experiment|model|train` shows them.
PELAB_API const ParamSchema& experiment_schema();
PELAB_API const ParamSchema& model_schema();
PELAB_API const ParamSchema& train_schema();

/// The keys that set how a run is computed on its host rather than what it computes: the threads
/// and whether subnormal floats are flushed. Like another BLAS kernel they change its speed and at
/// most its last bits, so a run resumes, is reused (`--reuse`) and joins its point in a report
/// whatever they were; its summary's compute record says what they were.
PELAB_API const std::set<std::string>& host_execution_keys();

/// What the runs of one point may differ in: the seeds, the description, how a run is computed
/// (host_execution_keys()) and its length (a run resumed with more epochs extends itself, as its
/// config.toml records). Everything else is what a run is.
PELAB_API const std::set<std::string>& per_run_keys();

}  // namespace pelab
