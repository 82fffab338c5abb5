#pragma once

// Everything a plugin author needs, in one include: the plugin ABI and registration macro, the
// interfaces of the four kinds, parameters, errors (PELAB_CHECK), the registry (to build nested
// plugins such as a PE's initializer), the coordinate guard and portable random numbers (Random).

#include "pelab/coordinates.h"
#include "pelab/error.h"
#include "pelab/initializer.h"
#include "pelab/layout.h"
#include "pelab/params.h"
#include "pelab/plugin.h"
#include "pelab/positional_encoding.h"
#include "pelab/probe.h"
#include "pelab/random.h"
#include "pelab/registry.h"
#include "pelab/task.h"
