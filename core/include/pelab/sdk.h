#pragma once

// Everything a plugin author needs, in one include, and all that pelab's own plugins and tasks
// include of it (the `layering` test holds them to it):
// - the plugin ABI and registration macro, the registry (to build nested plugins such as a PE's
//   initializer), the plugin kinds;
// - the interfaces of the four kinds, the layout and its coordinate guard, the parameters a
//   plugin declares and reads;
// - for probes that run the model: the trained model (attention, evaluation with a PE's tensors
//   replaced), and another finished run's records (PE snapshots, probe arrays);
// - for tasks: .npy, CSV and atomic files, number and size formatting, the data cache, the memory
//   check;
// - errors (PELAB_CHECK) and portable random numbers (Random).

#include "pelab/base/error.h"
#include "pelab/base/plugin_kind.h"
#include "pelab/base/random.h"
#include "pelab/host/host_info.h"
#include "pelab/interfaces/coordinates.h"
#include "pelab/interfaces/initializer.h"
#include "pelab/interfaces/layout.h"
#include "pelab/interfaces/params.h"
#include "pelab/interfaces/positional_encoding.h"
#include "pelab/interfaces/probe.h"
#include "pelab/interfaces/task.h"
#include "pelab/interfaces/trained_model.h"
#include "pelab/io/data_cache.h"
#include "pelab/io/file_io.h"
#include "pelab/plugins/plugin.h"
#include "pelab/plugins/registry.h"
#include "pelab/runs/finished_run.h"
