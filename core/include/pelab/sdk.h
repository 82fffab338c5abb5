#pragma once

// Everything a plugin author needs, in one include: the plugin ABI and registration macro, the
// interfaces of the four kinds, parameters, errors (PELAB_CHECK), the registry (to build nested
// plugins such as a PE's initializer), the coordinate guard and portable random numbers (Random).

#include "pelab/base/error.h"
#include "pelab/base/random.h"
#include "pelab/config/params.h"
#include "pelab/interfaces/coordinates.h"
#include "pelab/interfaces/initializer.h"
#include "pelab/interfaces/layout.h"
#include "pelab/interfaces/positional_encoding.h"
#include "pelab/interfaces/probe.h"
#include "pelab/interfaces/task.h"
#include "pelab/plugins/plugin.h"
#include "pelab/plugins/registry.h"
