#pragma once

// The built `pelab` program run as a user runs it, from a test.

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace pelab::test {

struct Result {
  int exit_code = -1;
  std::string out;  // stdout, or stdout and stderr together
};

// Runs the built `pelab` with `arguments` (already shell-quoted) in a clean environment.
// `streams` picks what is captured: "2>&1" for both, "2>&1 >/dev/null" for stderr only.
inline Result pelab(const std::string& arguments, const std::string& streams = "2>&1") {
  const std::string command = "env -u PELAB_PLUGIN_PATH OMP_NUM_THREADS=1 '" +
                              std::string(PELAB_BINARY_DIR) + "/bin/pelab' " + arguments + " " +
                              streams;
  Result result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "cannot run " << command;
    return result;
  }
  std::array<char, 4096> buffer;
  std::size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.out.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// A shell word: `text` in single quotes (test paths hold no quote).
inline std::string quoted(const std::string& text) {
  return "'" + text + "'";
}

}  // namespace pelab::test
