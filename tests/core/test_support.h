#pragma once

// Helpers shared by the core tests: where the fixtures and built plugins are, and a scratch
// folder that cleans up after itself.

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/filesystem.hpp>

#include "pelab/plugins/registry.h"

namespace pelab::test {

/// The folder of the deliberately broken plugins (tests/fixtures), built by CMake.
inline std::string fixture_plugin_dir(const std::string& sub = "") {
  return sub.empty() ? std::string(PELAB_FIXTURE_DIR) : std::string(PELAB_FIXTURE_DIR) + "/" + sub;
}

/// A fixture manifest in the source tree.
inline std::string fixture_manifest(const std::string& name) {
  return std::string(PELAB_SOURCE_DIR) + "/tests/fixtures/manifests/" + name;
}

/// A registry that sees only the plugins built with the project, whatever PELAB_PLUGIN_PATH says.
inline Registry builtin_registry() {
  return Registry({Registry::builtin_plugin_folder()});
}

/// A fresh, empty folder, removed (with its contents) when the object goes.
class ScratchDir {
 public:
  ScratchDir() {
    path_ = (boost::filesystem::temp_directory_path() /
             boost::filesystem::unique_path("pelab-test-%%%%-%%%%-%%%%"))
                .string();
    boost::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    boost::system::error_code ignored;
    boost::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

/// Sets an environment variable for the life of the object, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const char* value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    had_ = std::getenv(name_.c_str()) != nullptr;
    if (value) {
      ::setenv(name_.c_str(), value, 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ~ScopedEnv() {
    if (had_) {
      ::setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::string old_;
  bool had_ = false;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace pelab::test
