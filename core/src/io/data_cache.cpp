#include "pelab/io/data_cache.h"

#include <cstdint>
#include <cstdlib>

#include <fmt/format.h>
#include <boost/filesystem.hpp>

#include "base/environment.h"
#include "base/fnv1a.h"
#include "pelab/base/error.h"
#include "pelab/io/file_io.h"

namespace pelab {

namespace fs = boost::filesystem;

namespace {

constexpr const char* kDescriptionFile = "description.txt";

}  // namespace

std::string DataCache::default_root() {
  if (const char* dir = environment_value("PELAB_CACHE_DIR")) return dir;
  if (const char* dir = environment_value("XDG_CACHE_HOME")) return std::string(dir) + "/pelab";
  const char* home = environment_value("HOME");
  PELAB_CHECK(home != nullptr,
              "no folder for pelab's data cache: set PELAB_CACHE_DIR (or XDG_CACHE_HOME or HOME)");
  return std::string(home) + "/.cache/pelab";
}

DataCache::DataCache(const std::string& kind, std::string description, const std::string& root)
    : description_(std::move(description)) {
  dir_ =
      fmt::format("{}/{}/{:016x}", root.empty() ? default_root() : root, kind, fnv1a(description_));
}

bool DataCache::ready() const {
  const std::string path = this->path(kDescriptionFile);
  boost::system::error_code error;
  if (!fs::is_regular_file(path, error)) return false;
  // A hash collision, or an entry written for other parameters, must not be used.
  return read_file(path) == description_;
}

void DataCache::commit() const {
  write_file_atomically(path(kDescriptionFile), description_);
}

}  // namespace pelab
