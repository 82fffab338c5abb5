#pragma once

// One reading of an environment variable for the core: a variable set to the empty string counts as
// unset, as a shell's `VAR= pelab ...` means.

#include <cstdlib>

namespace pelab {

// The variable's value, or nullptr when it is unset or empty.
inline const char* environment_value(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

}  // namespace pelab
