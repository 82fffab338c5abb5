#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "pelab/base/export.h"

namespace pelab {

/// An error the user can fix: bad input, a bad manifest, a plugin that cannot be loaded.
/// The message says what is wrong, where, and how to fix it.
class PELAB_API Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// A broken invariant inside pelab itself: a bug, never the user's fault.
class PELAB_API InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

}  // namespace pelab

/// Checks a condition that depends on user input; throws pelab::Error with a formatted message.
#define PELAB_CHECK(condition, ...)                                   \
  do {                                                                \
    if (!(condition)) throw ::pelab::Error(fmt::format(__VA_ARGS__)); \
  } while (false)

/// Checks an internal invariant; a failure is a bug in pelab.
#define PELAB_INTERNAL_ASSERT(condition, ...)                                                    \
  do {                                                                                           \
    if (!(condition))                                                                            \
      throw ::pelab::InternalError(fmt::format("internal error at {}:{}: {} ({})", __FILE__,     \
                                               __LINE__, #condition, fmt::format(__VA_ARGS__))); \
  } while (false)
