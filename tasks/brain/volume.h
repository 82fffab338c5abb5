#pragma once

// NIfTI images (NIfTI-1 and NIfTI-2, .nii and .nii.gz) read and written through libnifti2, as
// float voxels on a grid with its voxel-to-world affine in millimetres.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace pelab::brain {

/// A 4x4 matrix, row-major: voxel indices (i, j, k, 1) -> world coordinates (x, y, z, 1) in mm.
using Affine = std::array<double, 16>;

/// The voxel grid of an image: its spatial shape and its affine.
struct Grid {
  std::int64_t nx = 0;
  std::int64_t ny = 0;
  std::int64_t nz = 0;
  Affine affine{};

  std::int64_t voxels() const { return nx * ny * nz; }
  /// The linear index of voxel (i, j, k): i + nx * (j + ny * k), NIfTI's order (x fastest).
  std::int64_t index(std::int64_t i, std::int64_t j, std::int64_t k) const {
    return i + nx * (j + ny * k);
  }
  /// The world position (mm) of voxel (i, j, k)'s centre.
  std::array<double, 3> world(double i, double j, double k) const;
};

/// "17x21x3" and the affine's top three rows, for messages.
std::string describe(const Grid& grid);

/// Throws pelab::Error when the two grids differ in shape, or in an affine entry by more than
/// tolerance_mm; the message names both sources with their shapes and affines.
void check_same_grid(const Grid& a, const std::string& a_name, const Grid& b,
                     const std::string& b_name, double tolerance_mm = 1e-3);

/// Where a volume's affine came from, in NIfTI's order of precedence.
enum class AffineSource { kSform, kQform, kPixdim };
const char* to_string(AffineSource source);

/// A 3D or 4D image with float voxels.
struct Volume {
  std::string path;  // the file it was read from (or will be written to), for messages
  Grid grid;
  std::int64_t nt = 1;  // volumes (time points); 1 for a 3D image
  /// [nt, nz, ny, nx]: the value of voxel (i, j, k) at time t is data[grid.index(i, j, k) +
  /// grid.voxels() * t], so each volume is contiguous. scl_slope / scl_inter are applied.
  std::vector<float> data;
  AffineSource affine_source = AffineSource::kSform;
  std::array<double, 3> voxel_size_mm{1.0, 1.0, 1.0};  // pixdim[1..3]
  double tr_seconds = 0.0;  // pixdim[4] in seconds for a 4D image (0 when 3D or unknown)
  int nifti_version = 1;    // 1 or 2

  /// "17x21x3x20" or "33x41x25".
  std::string shape() const;
  float at(std::int64_t i, std::int64_t j, std::int64_t k, std::int64_t t = 0) const {
    return data[static_cast<std::size_t>(grid.index(i, j, k) + grid.voxels() * t)];
  }
};

/// What the caller needs an image to be. A 4D image with one volume counts as 3D.
enum class Expect { kAny, k3D, k4D };

/// Reads a NIfTI-1 or NIfTI-2 file (.nii or .nii.gz). Any real datatype is converted to float
/// with scl_slope / scl_inter applied (a slope of 0 means none, as NIfTI says). The affine is the
/// sform when sform_code > 0, else the qform when qform_code > 0, else diag(pixdim); spatial units
/// in metres or micrometres are converted to mm (unknown units are taken as mm), time units to
/// seconds. Throws pelab::Error, in one line naming the file, when the file is missing, is not
/// NIfTI (or ANALYZE 7.5, whose orientation is ambiguous), is truncated, has an unsupported
/// datatype (complex, RGB) or more than 4 dimensions, does not have the dimensionality `expect`
/// asks for, or contains NaN or infinite values (the message gives how many).
Volume read_volume(const std::string& path, Expect expect = Expect::kAny);

/// How write_volume stores the voxels.
enum class StorageType { kFloat32, kFloat64, kInt16, kInt32, kUint8 };

struct WriteOptions {
  StorageType type = StorageType::kFloat32;
  /// Integer types store round((value - scl_inter) / scl_slope); out of range is an error.
  double scl_slope = 1.0;
  double scl_inter = 0.0;
  int nifti_version = 1;  // 1 or 2
  /// The qform_code and sform_code written with the volume's affine: 1 scanner, 4 MNI-152.
  int xform_code = 1;
};

/// Writes `volume` to `path` (.nii, or .nii.gz for gzip), atomically (a temporary file in the
/// same folder, then a rename): units mm and s, the affine as both sform and qform (the qform
/// keeps only its rigid part and voxel sizes, as NIfTI's quaternion form does).
void write_volume(const std::string& path, const Volume& volume, const WriteOptions& options = {});

}  // namespace pelab::brain
