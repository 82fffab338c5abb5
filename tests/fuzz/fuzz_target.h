#pragma once

// What every pelab fuzz target shares: the contract it checks, and scratch files for the readers
// that take a path.
//
// The contract: a reader given any bytes either succeeds or throws pelab::Error (a message for the
// user). Any other exception (std::out_of_range from a stoll, c10::Error from LibTorch, a JSON
// library's exception) reaches the user as "internal error ... please report this as a bug", so
// it is a finding: the target aborts, and libFuzzer (or the replay driver) reports the input.
// Crashes, leaks and undefined behaviour are findings through the sanitizers.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <typeinfo>

#include "pelab/base/error.h"

namespace pelab::fuzz {

/// Runs `read`; returns normally when it succeeds or throws pelab::Error, aborts with the
/// exception's type and message otherwise.
template <typename Read>
void expect_pelab_errors_only(const char* what, Read&& read) {
  try {
    read();
  } catch (const pelab::Error&) {
    // The user-facing outcome for bad input.
  } catch (const std::exception& error) {
    std::fprintf(stderr, "\n%s threw %s instead of pelab::Error: %s\n", what, typeid(error).name(),
                 error.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "\n%s threw a non-std exception\n", what);
    std::abort();
  }
}

/// The input as a string.
inline std::string as_string(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

/// A folder of this process's own, for readers that take a path: in /dev/shm when there is one
/// (memory, not disk, for millions of inputs), removed at exit.
const std::string& scratch_dir();

/// Writes `contents` to `scratch_dir()/name` and returns the path.
std::string write_scratch_file(const std::string& name, const std::string& contents);

}  // namespace pelab::fuzz
