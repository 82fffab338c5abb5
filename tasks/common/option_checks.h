#pragma once

// The option checks of the shared network model and of the tasks built on it: each failure throws
// std::invalid_argument naming the option, its value and what is allowed, so that a task can turn
// it into the user's error (pelab::Error) with its own context.

#include <cmath>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>

namespace pelab::tasks {

/// A value as the messages show it: up to 10 significant digits.
inline std::string format_option(double value) {
  std::ostringstream out;
  out.precision(10);
  out << value;
  return out.str();
}

[[noreturn]] inline void reject_option(const std::string& option, const std::string& allowed,
                                       const std::string& got) {
  throw std::invalid_argument(option + " must be " + allowed + ", got " + got);
}

inline void require_option(bool ok, const std::string& option, const std::string& allowed,
                           double value) {
  if (!ok) reject_option(option, allowed, format_option(value));
}

// Written so that NaN fails every check.
inline void require_positive(double value, const std::string& option) {
  require_option(value > 0.0 && std::isfinite(value), option, "> 0 (finite)", value);
}

inline void require_non_negative(double value, const std::string& option) {
  require_option(value >= 0.0 && std::isfinite(value), option, ">= 0 (finite)", value);
}

inline void require_finite(double value, const std::string& option) {
  require_option(std::isfinite(value), option, "finite", value);
}

/// The network model's space: 2D or 3D.
inline void require_dims(std::int64_t dims) {
  require_option(dims == 2 || dims == 3, "dims", "2 or 3", static_cast<double>(dims));
}

}  // namespace pelab::tasks
