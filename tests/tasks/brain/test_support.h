#pragma once

// Helpers shared by the brain data tests: the vendored sample, a scratch folder, small images
// and the check that an error's message says what it should.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../../core/test_support.h"
#include "pelab/base/error.h"
#include "volume.h"

namespace pelab::brain::testing {

/// A file of the real sample vendored in tasks/brain/data.
inline std::string data_file(const std::string& name) {
  return std::string(PELAB_SOURCE_DIR) + "/tasks/brain/data/" + name;
}

/// A fresh, empty folder, removed (with its contents) when the object goes: the core tests' one.
using ScratchDir = ::pelab::test::ScratchDir;

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// The message of the pelab::Error that `action` throws ("" and a test failure if none).
inline std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const pelab::Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected a pelab::Error";
  return "";
}

/// A volume on a grid with a diagonal affine (voxel size `mm`, origin `origin`), values from
/// `value(i, j, k, t)`.
template <typename F>
Volume make_volume(const std::string& path, std::int64_t nx, std::int64_t ny, std::int64_t nz,
                   std::int64_t nt, double mm, std::array<double, 3> origin, F value) {
  Volume volume;
  volume.path = path;
  volume.grid = {
      nx, ny, nz, {mm, 0, 0, origin[0], 0, mm, 0, origin[1], 0, 0, mm, origin[2], 0, 0, 0, 1}};
  volume.nt = nt;
  volume.voxel_size_mm = {mm, mm, mm};
  volume.tr_seconds = nt > 1 ? 2.0 : 0.0;
  volume.data.resize(static_cast<std::size_t>(nx * ny * nz * nt));
  for (std::int64_t t = 0; t < nt; ++t)
    for (std::int64_t k = 0; k < nz; ++k)
      for (std::int64_t j = 0; j < ny; ++j)
        for (std::int64_t i = 0; i < nx; ++i)
          volume.data[volume.grid.index(i, j, k) + nx * ny * nz * t] =
              static_cast<float>(value(i, j, k, t));
  return volume;
}

}  // namespace pelab::brain::testing
