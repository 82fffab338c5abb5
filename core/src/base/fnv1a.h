#pragma once

// FNV-1a, 64 bits: a hash of a string that is the same on every platform and in every release
// (std::hash is neither), for what must not change between runs: cache folder names, the seeds of
// evaluation masks.

#include <cstdint>
#include <string>

namespace pelab {

inline std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t hash = 14695981039346656037ull;
  for (const unsigned char c : text)
    hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

}  // namespace pelab
