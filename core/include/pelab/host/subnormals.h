#pragma once

// Subnormal floats (fp32 values below 1.2e-38 in magnitude) are computed in microcode on Intel
// CPUs: a matrix product with 1% of its inputs subnormal ran 13-33x slower, with all of them
// 150-175x (pelab_subnormals_benchmark on a Xeon with AMX, docs/performance.md). Training makes
// them where a softmax or a gradient underflows, and a run that does can slow 10x midway.
// Flushing them to zero (the FTZ and DAZ modes of the SSE control register) removes the stall and
// changes nothing a model learns from: the values are 38 orders of magnitude below the ones that
// matter.

#include "pelab/base/export.h"

namespace pelab {

/// Sets flush-to-zero and denormals-are-zero (`flush`) or IEEE gradual underflow (`!flush`) on the
/// calling thread and on every thread of ATen's intra-op pool (which the OpenMP build of OpenBLAS
/// shares); threads created later inherit the calling thread's mode. Returns false, changing
/// nothing, where the CPU has no such mode (not x86 with SSE3).
PELAB_API bool set_flush_subnormals(bool flush);

/// Whether the calling thread flushes subnormals to zero now (both FTZ and DAZ set).
PELAB_API bool flushes_subnormals();

}  // namespace pelab
