#include "fuzz_target.h"

#include <fstream>

#include <boost/filesystem.hpp>

namespace pelab::fuzz {

namespace {

class ScratchDir {
 public:
  ScratchDir() {
    namespace fs = boost::filesystem;
    const fs::path base =
        fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    path_ = (base / fs::unique_path("pelab-fuzz-%%%%-%%%%-%%%%")).string();
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    boost::system::error_code ignored;
    boost::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

const std::string& scratch_dir() {
  static const ScratchDir dir;
  return dir.path();
}

std::string write_scratch_file(const std::string& name, const std::string& contents) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  if (!out) {
    std::fprintf(stderr, "cannot write the scratch file %s\n", path.c_str());
    std::abort();
  }
  return path;
}

}  // namespace pelab::fuzz
