#include "volume.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <system_error>

#include <fmt/format.h>

#include <nifti2_io.h>

#include <pelab/sdk.h>

namespace pelab::brain {
namespace {

namespace fs = std::filesystem;

using NiftiPtr = std::unique_ptr<nifti_image, decltype(&nifti_image_free)>;

// Closes a znz file (plain or gzip) when it goes.
struct OpenFile {
  znzFile fp;
  ~OpenFile() {
    if (!znz_isnull(fp)) znzclose(fp);
  }
};

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool has_nifti_extension(const std::string& path) {
  return ends_with(path, ".nii") || ends_with(path, ".nii.gz");
}

// libnifti reports problems on stderr; we report them ourselves, once, as pelab::Error.
void quiet_libnifti() {
  nifti_set_debug_level(0);
}

template <typename T>
void convert(const void* raw, std::int64_t count, double slope, double inter, float* out) {
  const T* in = static_cast<const T*>(raw);
  if (slope == 0.0) {
    for (std::int64_t v = 0; v < count; ++v)
      out[v] = static_cast<float>(in[v]);
  } else {
    for (std::int64_t v = 0; v < count; ++v)
      out[v] = static_cast<float>(slope * static_cast<double>(in[v]) + inter);
  }
}

// The conversion of libnifti's native voxels to float; null for a datatype that is not real.
using Converter = void (*)(const void*, std::int64_t, double, double, float*);
Converter converter_for(int datatype) {
  switch (datatype) {
    case NIFTI_TYPE_UINT8:
      return &convert<std::uint8_t>;
    case NIFTI_TYPE_INT8:
      return &convert<std::int8_t>;
    case NIFTI_TYPE_INT16:
      return &convert<std::int16_t>;
    case NIFTI_TYPE_UINT16:
      return &convert<std::uint16_t>;
    case NIFTI_TYPE_INT32:
      return &convert<std::int32_t>;
    case NIFTI_TYPE_UINT32:
      return &convert<std::uint32_t>;
    case NIFTI_TYPE_INT64:
      return &convert<std::int64_t>;
    case NIFTI_TYPE_UINT64:
      return &convert<std::uint64_t>;
    case NIFTI_TYPE_FLOAT32:
      return &convert<float>;
    case NIFTI_TYPE_FLOAT64:
      return &convert<double>;
    default:
      return nullptr;
  }
}

double spatial_unit_to_mm(int units) {
  switch (units) {
    case NIFTI_UNITS_METER:
      return 1000.0;
    case NIFTI_UNITS_MICRON:
      return 1e-3;
    default:
      return 1.0;  // mm, or unknown (taken as mm, as most tools do)
  }
}

double time_unit_to_seconds(int units) {
  switch (units) {
    case NIFTI_UNITS_MSEC:
      return 1e-3;
    case NIFTI_UNITS_USEC:
      return 1e-6;
    case NIFTI_UNITS_SEC:
    case NIFTI_UNITS_UNKNOWN:
      return 1.0;
    default:
      return 0.0;  // Hz, ppm, rad/s: not a time
  }
}

Affine from_dmat44(const nifti_dmat44& m) {
  Affine affine{};
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c)
      affine[r * 4 + c] = m.m[r][c];
  return affine;
}

nifti_dmat44 to_dmat44(const Affine& affine) {
  nifti_dmat44 m;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c)
      m.m[r][c] = affine[r * 4 + c];
  return m;
}

std::string dims_string(const nifti_image& nim) {
  std::string text = fmt::format("{}", nim.dim[1]);
  for (int d = 2; d <= nim.dim[0] && d <= 7; ++d)
    text += fmt::format("x{}", nim.dim[d]);
  return text;
}

int nifti_datatype(StorageType type) {
  switch (type) {
    case StorageType::kFloat32:
      return NIFTI_TYPE_FLOAT32;
    case StorageType::kFloat64:
      return NIFTI_TYPE_FLOAT64;
    case StorageType::kInt16:
      return NIFTI_TYPE_INT16;
    case StorageType::kInt32:
      return NIFTI_TYPE_INT32;
    case StorageType::kUint8:
      return NIFTI_TYPE_UINT8;
  }
  return NIFTI_TYPE_FLOAT32;
}

template <typename T>
void store_integers(const std::string& path, const Volume& volume, const WriteOptions& options,
                    void* raw) {
  T* out = static_cast<T*>(raw);
  const double lo = static_cast<double>(std::numeric_limits<T>::min());
  const double hi = static_cast<double>(std::numeric_limits<T>::max());
  for (std::size_t v = 0; v < volume.data.size(); ++v) {
    const double stored = std::nearbyint((volume.data[v] - options.scl_inter) / options.scl_slope);
    PELAB_CHECK(stored >= lo && stored <= hi,
                "{}: voxel value {} does not fit the integer type written (stored {} with "
                "scl_slope {} and scl_inter {}); choose another slope or a float type",
                path, volume.data[v], stored, options.scl_slope, options.scl_inter);
    out[v] = static_cast<T>(stored);
  }
}

void store_voxels(const std::string& path, const Volume& volume, const WriteOptions& options,
                  void* raw) {
  switch (options.type) {
    case StorageType::kFloat32:
      std::copy(volume.data.begin(), volume.data.end(), static_cast<float*>(raw));
      return;
    case StorageType::kFloat64:
      std::copy(volume.data.begin(), volume.data.end(), static_cast<double*>(raw));
      return;
    case StorageType::kInt16:
      return store_integers<std::int16_t>(path, volume, options, raw);
    case StorageType::kInt32:
      return store_integers<std::int32_t>(path, volume, options, raw);
    case StorageType::kUint8:
      return store_integers<std::uint8_t>(path, volume, options, raw);
  }
}

// `value` with its bytes reversed when `swapped`.
template <typename Integer>
Integer in_native_order(Integer value, bool swapped) {
  if (swapped) {
    auto* bytes = reinterpret_cast<unsigned char*>(&value);
    std::reverse(bytes, bytes + sizeof value);
  }
  return value;
}

// A dimension count of 1..7, positive sizes, and a voxel count that an int64 holds.
// nifti_image_read trusts dim[0] and copies that many entries into fixed arrays (libnifti2
// 3.0.1): a corrupt header smashed its stack; and it multiplies the sizes without checking, so
// 2^33 x 2^33 x 2^33 wrapped around to a small count that a tiny file "held" (both found by
// fuzzing, tests/fuzz/regressions/brain_files).
template <typename Size>
bool dims_sound(const Size (&dim)[8], bool swapped) {
  const Size count = in_native_order(dim[0], swapped);
  if (count < 1 || count > 7) return false;
  std::int64_t voxels = 1;
  for (Size i = 1; i <= count; ++i) {
    const Size size = in_native_order(dim[i], swapped);
    if (size < 1 || __builtin_mul_overflow(voxels, static_cast<std::int64_t>(size), &voxels))
      return false;
  }
  return true;
}

// libnifti's own header checks and ours, before libnifti builds an image from the header.
// nifti_read_header returns the header even when its check fails, in the file's byte order.
bool header_is_sound(const void* header, int version) {
  if (header == nullptr) return false;
  if (version == 2) {
    const auto* h = static_cast<const nifti_2_header*>(header);
    return nifti_hdr2_looks_good(h) && dims_sound(h->dim, h->sizeof_hdr != 540);
  }
  const auto* h = static_cast<const nifti_1_header*>(header);  // NIfTI-1 and ANALYZE 7.5
  return nifti_hdr1_looks_good(h) && dims_sound(h->dim, h->sizeof_hdr != 348);
}

// The header, checked against what the caller expects; `version` gets 1 or 2.
NiftiPtr read_header(const std::string& path, Expect expect, int& version) {
  std::error_code error;
  PELAB_CHECK(fs::is_regular_file(path, error), "{}: no such file", path);
  PELAB_CHECK(has_nifti_extension(path), "{}: expected a NIfTI file named .nii or .nii.gz", path);
  quiet_libnifti();
  const std::unique_ptr<void, decltype(&std::free)> header(
      nifti_read_header(path.c_str(), &version, 1), &std::free);
  NiftiPtr nim(header_is_sound(header.get(), version) ? nifti_image_read(path.c_str(), 0) : nullptr,
               &nifti_image_free);
  PELAB_CHECK(
      nim != nullptr,
      "{}: not a NIfTI-1 or NIfTI-2 file (no valid header; is it truncated, another format, "
      "or are its dimensions impossible?)",
      path);
  PELAB_CHECK(nim->nifti_type != NIFTI_FTYPE_ANALYZE && (version == 1 || version == 2),
              "{}: an ANALYZE 7.5 header, not NIfTI-1 or NIfTI-2 (its orientation is ambiguous); "
              "convert it to NIfTI (e.g. with nibabel or FSL)",
              path);
  PELAB_CHECK(converter_for(nim->datatype) != nullptr,
              "{}: voxel datatype {} is not supported (expected integers or floats)", path,
              nifti_datatype_string(nim->datatype));
  PELAB_CHECK(nim->nu <= 1 && nim->nv <= 1 && nim->nw <= 1,
              "{}: has {} dimensions ({}), at most 4 (x, y, z, time) are supported", path,
              nim->dim[0], dims_string(*nim));
  const std::int64_t nt = std::max<std::int64_t>(nim->nt, 1);
  PELAB_CHECK(expect != Expect::k4D || nt > 1,
              "{}: is a 3D image ({}), expected a 4D functional image (x, y, z, time)", path,
              dims_string(*nim));
  PELAB_CHECK(expect != Expect::k3D || nt == 1,
              "{}: is a 4D image ({}), expected a 3D image (a label image or a mask)", path,
              dims_string(*nim));
  return nim;
}

// The voxels as stored, in this machine's byte order. libnifti's loader would do this too, but
// it silently replaces NaN and infinite floats by 0, and we report them instead.
std::vector<char> read_voxel_bytes(const std::string& path, const nifti_image& nim) {
  std::size_t bytes = 0;
  PELAB_CHECK(nim.nvox >= 0 && nim.nbyper > 0 &&
                  !__builtin_mul_overflow(static_cast<std::size_t>(nim.nvox),
                                          static_cast<std::size_t>(nim.nbyper), &bytes),
              "{}: the header describes {} voxels of {} bytes, more than any file holds", path,
              nim.nvox, nim.nbyper);
  OpenFile file{znzopen(nim.iname, "rb", nifti_is_gzfile(nim.iname))};
  PELAB_CHECK(!znz_isnull(file.fp), "{}: cannot open the file to read its voxels", path);
  // Read in chunks rather than allocating what the header claims: a corrupt or truncated file
  // may claim terabytes (found by fuzzing), and a .nii.gz does not say how much data it holds.
  std::vector<char> raw;
  if (znzseek(file.fp, static_cast<znz_off_t>(nim.iname_offset), SEEK_SET) >= 0) {
    std::vector<char> chunk(std::min<std::size_t>(bytes, std::size_t{1} << 20));
    while (raw.size() < bytes) {
      const std::size_t got =
          znzread(chunk.data(), 1, std::min(chunk.size(), bytes - raw.size()), file.fp);
      if (got == 0) break;
      raw.insert(raw.end(), chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(got));
    }
  }
  const std::size_t got = raw.size();
  PELAB_CHECK(got == bytes,
              "{}: truncated: the header describes {} {} voxels ({} bytes of data from offset "
              "{}), the file holds {} of them",
              path, dims_string(nim), nifti_datatype_string(nim.datatype), bytes, nim.iname_offset,
              got);
  if (nim.byteorder != nifti_short_order() && nim.swapsize > 1)
    nifti_swap_Nbytes(nim.nvox, nim.swapsize, raw.data());
  return raw;
}

// The voxel-to-world affine in mm: the sform, else the qform, else diag(pixdim).
Affine affine_of(const nifti_image& nim, AffineSource& source) {
  Affine affine{};
  if (nim.sform_code > 0) {
    source = AffineSource::kSform;
    affine = from_dmat44(nim.sto_xyz);
  } else if (nim.qform_code > 0) {
    source = AffineSource::kQform;
    affine = from_dmat44(nim.qto_xyz);
  } else {
    source = AffineSource::kPixdim;
    affine = Affine{nim.dx, 0, 0, 0, 0, nim.dy, 0, 0, 0, 0, nim.dz, 0, 0, 0, 0, 1};
  }
  const double to_mm = spatial_unit_to_mm(nim.xyz_units);
  for (int e = 0; e < 12; ++e)
    affine[e] *= to_mm;
  return affine;
}

}  // namespace

std::array<double, 3> Grid::world(double i, double j, double k) const {
  const Affine& a = affine;
  return {a[0] * i + a[1] * j + a[2] * k + a[3], a[4] * i + a[5] * j + a[6] * k + a[7],
          a[8] * i + a[9] * j + a[10] * k + a[11]};
}

std::string describe(const Grid& grid) {
  const Affine& a = grid.affine;
  return fmt::format(
      "{}x{}x{} with affine [[{:g}, {:g}, {:g}, {:g}], [{:g}, {:g}, {:g}, {:g}], "
      "[{:g}, {:g}, {:g}, {:g}]]",
      grid.nx, grid.ny, grid.nz, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10],
      a[11]);
}

void check_same_grid(const Grid& a, const std::string& a_name, const Grid& b,
                     const std::string& b_name, double tolerance_mm) {
  bool same = a.nx == b.nx && a.ny == b.ny && a.nz == b.nz;
  for (std::size_t e = 0; same && e < a.affine.size(); ++e)
    same = std::abs(a.affine[e] - b.affine[e]) <= tolerance_mm;
  PELAB_CHECK(same,
              "{} and {} are not on the same voxel grid: {} is {}, {} is {}; resample one onto "
              "the other's grid (labels with nearest-neighbour interpolation)",
              a_name, b_name, a_name, describe(a), b_name, describe(b));
}

const char* to_string(AffineSource source) {
  switch (source) {
    case AffineSource::kSform:
      return "sform";
    case AffineSource::kQform:
      return "qform";
    case AffineSource::kPixdim:
      return "pixdim";
  }
  return "?";
}

std::string Volume::shape() const {
  if (nt == 1) return fmt::format("{}x{}x{}", grid.nx, grid.ny, grid.nz);
  return fmt::format("{}x{}x{}x{}", grid.nx, grid.ny, grid.nz, nt);
}

Volume read_volume(const std::string& path, Expect expect) {
  int version = 0;
  const NiftiPtr nim = read_header(path, expect, version);
  const std::vector<char> raw = read_voxel_bytes(path, *nim);

  Volume volume;
  volume.path = path;
  volume.grid.nx = nim->nx;
  volume.grid.ny = nim->ny;
  volume.grid.nz = nim->nz;
  volume.grid.affine = affine_of(*nim, volume.affine_source);
  volume.nt = std::max<std::int64_t>(nim->nt, 1);
  volume.nifti_version = version;
  const double to_mm = spatial_unit_to_mm(nim->xyz_units);
  volume.voxel_size_mm = {std::abs(nim->dx) * to_mm, std::abs(nim->dy) * to_mm,
                          std::abs(nim->dz) * to_mm};
  volume.tr_seconds =
      volume.nt > 1 ? std::abs(nim->dt) * time_unit_to_seconds(nim->time_units) : 0.0;

  // NIfTI: a slope of 0 (or one that is not finite) means the values are stored unscaled.
  const bool scaled =
      nim->scl_slope != 0.0 && std::isfinite(nim->scl_slope) && std::isfinite(nim->scl_inter);
  volume.data.resize(static_cast<std::size_t>(nim->nvox));
  converter_for(nim->datatype)(raw.data(), nim->nvox, scaled ? nim->scl_slope : 0.0,
                               scaled ? nim->scl_inter : 0.0, volume.data.data());
  std::int64_t non_finite = 0;
  for (float value : volume.data)
    non_finite += std::isfinite(value) ? 0 : 1;
  PELAB_CHECK(non_finite == 0,
              "{}: {} of its {} voxel values are NaN or infinite; replace them (e.g. by 0 outside "
              "the brain) before use",
              path, non_finite, volume.data.size());
  return volume;
}

void write_volume(const std::string& path, const Volume& volume, const WriteOptions& options) {
  PELAB_CHECK(has_nifti_extension(path), "{}: a NIfTI file must be named .nii or .nii.gz", path);
  PELAB_CHECK(options.nifti_version == 1 || options.nifti_version == 2,
              "{}: NIfTI version {} does not exist, expected 1 or 2", path, options.nifti_version);
  PELAB_CHECK(options.scl_slope != 0.0 && std::isfinite(options.scl_slope),
              "{}: scl_slope must be finite and non-zero", path);
  const Grid& grid = volume.grid;
  PELAB_CHECK(grid.voxels() > 0 && volume.nt >= 1 &&
                  volume.data.size() == static_cast<std::size_t>(grid.voxels() * volume.nt),
              "{}: the volume is {} but holds {} values", path, volume.shape(), volume.data.size());

  const std::int64_t dims[8] = {
      volume.nt > 1 ? 4 : 3, grid.nx, grid.ny, grid.nz, volume.nt, 1, 1, 1};
  quiet_libnifti();
  NiftiPtr nim(nifti_make_new_nim(dims, nifti_datatype(options.type), 1), &nifti_image_free);
  PELAB_CHECK(nim != nullptr, "{}: libnifti could not allocate the image ({})", path,
              volume.shape());
  store_voxels(path, volume, options, nim->data);
  const bool is_float =
      options.type == StorageType::kFloat32 || options.type == StorageType::kFloat64;
  nim->scl_slope = is_float ? 0.0 : options.scl_slope;
  nim->scl_inter = is_float ? 0.0 : options.scl_inter;

  // The qform: the affine's rotation, voxel sizes and offset as NIfTI's quaternion form.
  const nifti_dmat44 affine = to_dmat44(grid.affine);
  double dx = 0, dy = 0, dz = 0;
  nifti_dmat44_to_quatern(affine, &nim->quatern_b, &nim->quatern_c, &nim->quatern_d,
                          &nim->qoffset_x, &nim->qoffset_y, &nim->qoffset_z, &dx, &dy, &dz,
                          &nim->qfac);
  nim->qform_code = options.xform_code;
  nim->qto_xyz = affine;
  nim->sform_code = options.xform_code;
  nim->sto_xyz = affine;
  nim->pixdim[1] = nim->dx = dx;
  nim->pixdim[2] = nim->dy = dy;
  nim->pixdim[3] = nim->dz = dz;
  nim->pixdim[4] = nim->dt = volume.nt > 1 ? volume.tr_seconds : 0.0;
  nim->xyz_units = NIFTI_UNITS_MM;
  nim->time_units = NIFTI_UNITS_SEC;

  // libnifti builds the header (nifti_image_write itself always writes NIfTI-1); we write the
  // header, the empty extension flag and the voxels next to the target, then rename.
  nim->nifti_type = options.nifti_version == 2 ? NIFTI_FTYPE_NIFTI2_1 : NIFTI_FTYPE_NIFTI1_1;
  nifti_1_header header1;
  nifti_2_header header2;
  const bool version2 = options.nifti_version == 2;
  nim->iname_offset = version2 ? sizeof(nifti_2_header) + 4 : sizeof(nifti_1_header) + 4;
  PELAB_CHECK((version2 ? nifti_convert_nim2n2hdr(nim.get(), &header2)
                        : nifti_convert_nim2n1hdr(nim.get(), &header1)) == 0,
              "{}: libnifti cannot make a NIfTI-{} header for a {} image", path,
              options.nifti_version, volume.shape());
  // nifti_convert_nim2n2hdr sets only "n+2"; NIfTI-2's magic goes on with "\0\r\n\032\n".
  if (version2) std::memcpy(header2.magic, "n+2\0\r\n\032\n", 8);

  const fs::path target(path);
  const fs::path temporary =
      target.parent_path() / fmt::format(".tmp-{}-{}", getpid(), target.filename().string());
  bool written = false;
  {
    OpenFile file{znzopen(temporary.c_str(), "wb", ends_with(path, ".gz"))};
    if (!znz_isnull(file.fp)) {
      const char extension_flag[4] = {0, 0, 0, 0};
      const std::size_t header_size = version2 ? sizeof header2 : sizeof header1;
      const auto data_size = static_cast<std::size_t>(nim->nvox * nim->nbyper);
      written = znzwrite(version2 ? static_cast<const void*>(&header2) : &header1, 1, header_size,
                         file.fp) == header_size &&
                znzwrite(extension_flag, 1, 4, file.fp) == 4 &&
                znzwrite(nim->data, 1, data_size, file.fp) == data_size;
      written = Xznzclose(&file.fp) == 0 && written;
      file.fp = nullptr;
    }
  }
  std::error_code error;
  if (written) fs::rename(temporary, target, error);
  if (!written || error) {
    fs::remove(temporary, error);
    throw Error(fmt::format("{}: could not write the NIfTI file (is the folder writable?)", path));
  }
}

}  // namespace pelab::brain
