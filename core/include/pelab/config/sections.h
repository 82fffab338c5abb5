#pragma once

#include "pelab/base/export.h"
#include "pelab/config/params.h"

namespace pelab {

/// The schemas of a manifest's core sections, the one place where their defaults are written: the
/// manifest resolves [experiment], [model] and [train] against them, ModelConfig and TrainConfig
/// read what they resolved to (their default constructors read the defaults), and `pelab describe
/// experiment|model|train` shows them.
PELAB_API const ParamSchema& experiment_schema();
PELAB_API const ParamSchema& model_schema();
PELAB_API const ParamSchema& train_schema();

}  // namespace pelab
