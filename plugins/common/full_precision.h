#pragma once

// A scope in which autocast is off, for the few products of a PE that set angles: under bf16
// autocast a matmul of positions and frequencies would return bf16, and an angle of 50 radians
// would be rounded to a multiple of 0.25 (bf16 keeps 8 bits), or a matrix exponential of
// LieRE's large generators computed in bf16 would overflow. Inside, operations run in their
// inputs' precision (the PE's parameters: fp32); the rotation is then applied outside, where the
// model's products run in bf16. Hugging Face's rotary embeddings do the same (autocast disabled
// for the frequencies). Without autocast (fp32 training) the scope changes nothing.

#include <c10/core/DispatchKeySet.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

namespace pelab::plugin_common {

class FullPrecision {
 public:
  FullPrecision() : no_autocast_(c10::autocast_dispatch_keyset) {}
  FullPrecision(const FullPrecision&) = delete;
  FullPrecision& operator=(const FullPrecision&) = delete;

 private:
  c10::impl::ExcludeDispatchKeyGuard no_autocast_;
};

}  // namespace pelab::plugin_common
