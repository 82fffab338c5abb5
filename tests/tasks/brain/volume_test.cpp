#include "volume.h"

#include <cmath>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

#include "test_support.h"

namespace pelab::brain {
namespace {

using testing::data_file;
using testing::error_of;
using testing::make_volume;
using testing::read_bytes;
using testing::ScratchDir;
using testing::write_text;

template <typename T>
T little_endian(const std::string& bytes, std::size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

template <typename T>
T big_endian(const std::string& bytes, std::size_t offset) {
  std::string reversed(bytes.rbegin() + (bytes.size() - offset - sizeof(T)),
                       bytes.rbegin() + (bytes.size() - offset));
  return little_endian<T>(reversed, 0);
}

void patch(const std::string& path, std::size_t offset, const void* data, std::size_t size) {
  std::string bytes = read_bytes(path);
  std::memcpy(&bytes[offset], data, size);
  write_text(path, bytes);
}

Volume small_4d(const std::string& path) {
  return make_volume(path, 3, 4, 2, 5, 2.5, {-10, 20, 30.5}, [](auto i, auto j, auto k, auto t) {
    return 100 * i + 10 * j + k + 0.25 * t;
  });
}

TEST(BrainVolume, ReadsTheRealFunctionalSample) {
  const std::string path = data_file("functional.nii");
  const Volume volume = read_volume(path, Expect::k4D);
  EXPECT_EQ(volume.shape(), "17x21x3x20");
  EXPECT_EQ(volume.nifti_version, 1);
  EXPECT_EQ(volume.affine_source, AffineSource::kSform);
  const Affine expected{-4, 0, 0, 32, 0, 4, 0, -40, 0, 0, 8, 0, 0, 0, 0, 1};
  for (int e = 0; e < 16; ++e)
    EXPECT_DOUBLE_EQ(volume.grid.affine[e], expected[e]) << e;
  EXPECT_DOUBLE_EQ(volume.voxel_size_mm[0], 4.0);
  EXPECT_DOUBLE_EQ(volume.voxel_size_mm[2], 8.0);
  EXPECT_DOUBLE_EQ(volume.tr_seconds, 2.0);

  // int16 on disk with scl_slope / scl_inter: check a few voxels against the raw bytes.
  const std::string bytes = read_bytes(path);
  const double slope = little_endian<float>(bytes, 112);
  const double inter = little_endian<float>(bytes, 116);
  const auto offset = static_cast<std::size_t>(little_endian<float>(bytes, 108));
  ASSERT_NE(slope, 0.0);
  for (std::size_t v : {0ul, 777ul, 10000ul, 21419ul}) {
    const double raw = little_endian<std::int16_t>(bytes, offset + 2 * v);
    EXPECT_FLOAT_EQ(volume.data[v], static_cast<float>(slope * raw + inter)) << v;
  }
}

TEST(BrainVolume, ReadsTheRealAnatomicalSampleWhichIsBigEndian) {
  const std::string path = data_file("anatomical.nii");
  const Volume volume = read_volume(path, Expect::k3D);
  EXPECT_EQ(volume.shape(), "33x41x25");
  EXPECT_EQ(volume.nt, 1);
  EXPECT_DOUBLE_EQ(volume.tr_seconds, 0.0);
  // A sane affine: 2 mm voxels on the diagonal, the grid spans less than a head.
  for (int d = 0; d < 3; ++d) {
    EXPECT_DOUBLE_EQ(std::abs(volume.grid.affine[d * 5]), 2.0);
    EXPECT_DOUBLE_EQ(volume.voxel_size_mm[d], 2.0);
    EXPECT_LT(std::abs(volume.grid.affine[d * 4 + 3]), 200.0);
  }
  const std::string bytes = read_bytes(path);
  ASSERT_EQ(big_endian<std::int32_t>(bytes, 0), 348);  // big-endian header
  ASSERT_EQ(big_endian<std::int16_t>(bytes, 70), 4);   // int16
  const auto offset = static_cast<std::size_t>(big_endian<float>(bytes, 108));
  const float slope = big_endian<float>(bytes, 112);
  for (std::size_t v : {0ul, 5000ul, 16912ul, 33824ul}) {
    const float raw = big_endian<std::int16_t>(bytes, offset + 2 * v);
    const float expected = slope == 0.0f ? raw : slope * raw + big_endian<float>(bytes, 116);
    EXPECT_FLOAT_EQ(volume.data[v], expected) << v;
  }
}

TEST(BrainVolume, TheWrongDimensionalityIsAnErrorNamingTheFile) {
  const std::string functional = data_file("functional.nii");
  const std::string anatomical = data_file("anatomical.nii");
  std::string message = error_of([&] { read_volume(anatomical, Expect::k4D); });
  EXPECT_NE(message.find(anatomical), std::string::npos) << message;
  EXPECT_NE(message.find("3D image (33x41x25), expected a 4D"), std::string::npos) << message;
  message = error_of([&] { read_volume(functional, Expect::k3D); });
  EXPECT_NE(message.find(functional), std::string::npos) << message;
  EXPECT_NE(message.find("4D image (17x21x3x20), expected a 3D"), std::string::npos) << message;
}

TEST(BrainVolume, NiiGzRoundTrip) {
  ScratchDir dir;
  const Volume original = small_4d(dir / "small.nii.gz");
  write_volume(original.path, original);
  const std::string bytes = read_bytes(original.path);
  ASSERT_GE(bytes.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f);  // gzip
  EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0x8b);
  const Volume back = read_volume(original.path, Expect::k4D);
  EXPECT_EQ(back.shape(), "3x4x2x5");
  EXPECT_EQ(back.data, original.data);
  EXPECT_EQ(back.grid.affine, original.grid.affine);
  EXPECT_DOUBLE_EQ(back.tr_seconds, 2.0);
  EXPECT_DOUBLE_EQ(back.voxel_size_mm[1], 2.5);
  // The world position of a voxel goes through the affine.
  const auto xyz = back.grid.world(1, 2, 1);
  EXPECT_DOUBLE_EQ(xyz[0], -7.5);
  EXPECT_DOUBLE_EQ(xyz[1], 25.0);
  EXPECT_DOUBLE_EQ(xyz[2], 33.0);
}

TEST(BrainVolume, Nifti2RoundTrip) {
  ScratchDir dir;
  const Volume original = small_4d(dir / "small2.nii");
  WriteOptions options;
  options.nifti_version = 2;
  options.type = StorageType::kFloat64;
  write_volume(original.path, original, options);
  const std::string bytes = read_bytes(original.path);
  EXPECT_EQ(little_endian<std::int32_t>(bytes, 0), 540);  // NIfTI-2 header
  EXPECT_EQ(bytes.substr(4, 8), std::string("n+2\0\r\n\032\n", 8));
  const Volume back = read_volume(original.path);
  EXPECT_EQ(back.nifti_version, 2);
  EXPECT_EQ(back.shape(), "3x4x2x5");
  EXPECT_EQ(back.data, original.data);
  EXPECT_EQ(back.grid.affine, original.grid.affine);
}

TEST(BrainVolume, IntegerStorageAppliesSlopeAndIntercept) {
  ScratchDir dir;
  const Volume original =
      make_volume(dir / "scaled.nii", 4, 3, 2, 1, 3.0, {0, 0, 0}, [](auto i, auto j, auto k, auto) {
        return 100.0 + 0.5 * static_cast<double>(i + 4 * j + 12 * k);
      });
  WriteOptions options;
  options.type = StorageType::kInt16;
  options.scl_slope = 0.5;
  options.scl_inter = 100.0;
  write_volume(original.path, original, options);
  const std::string bytes = read_bytes(original.path);
  EXPECT_EQ(little_endian<std::int16_t>(bytes, 352 + 2 * 5), 5);  // stored (value - 100) / 0.5
  EXPECT_FLOAT_EQ(little_endian<float>(bytes, 112), 0.5f);
  EXPECT_EQ(read_volume(original.path, Expect::k3D).data, original.data);

  options.scl_slope = 1e-4;  // (111.5 - 100) / 1e-4 does not fit an int16
  const std::string message =
      error_of([&] { write_volume(dir / "overflow.nii", original, options); });
  EXPECT_NE(message.find("overflow.nii"), std::string::npos) << message;
}

TEST(BrainVolume, SpatialAndTimeUnitsAreConverted) {
  ScratchDir dir;
  const Volume original = small_4d(dir / "units.nii");
  write_volume(original.path, original);
  const char metres_and_ms = 1 | 16;  // NIFTI_UNITS_METER | NIFTI_UNITS_MSEC
  patch(original.path, 123, &metres_and_ms, 1);
  Volume back = read_volume(original.path);
  EXPECT_DOUBLE_EQ(back.grid.affine[0], 2500.0);
  EXPECT_DOUBLE_EQ(back.grid.affine[3], -10000.0);
  EXPECT_DOUBLE_EQ(back.grid.affine[15], 1.0);
  EXPECT_DOUBLE_EQ(back.voxel_size_mm[2], 2500.0);
  EXPECT_DOUBLE_EQ(back.tr_seconds, 0.002);
  const char microns = 3 | 8;  // NIFTI_UNITS_MICRON | NIFTI_UNITS_SEC
  patch(original.path, 123, &microns, 1);
  back = read_volume(original.path);
  EXPECT_DOUBLE_EQ(back.grid.affine[5], 2.5e-3);
  EXPECT_DOUBLE_EQ(back.tr_seconds, 2.0);
}

TEST(BrainVolume, AffineFallsBackFromSformToQformToPixdim) {
  ScratchDir dir;
  const Volume original = small_4d(dir / "forms.nii");
  write_volume(original.path, original);
  const std::int16_t zero = 0;
  patch(original.path, 254, &zero, 2);  // sform_code
  Volume back = read_volume(original.path);
  EXPECT_EQ(back.affine_source, AffineSource::kQform);
  for (int e = 0; e < 16; ++e)
    EXPECT_NEAR(back.grid.affine[e], original.grid.affine[e], 1e-9);
  patch(original.path, 252, &zero, 2);  // qform_code
  back = read_volume(original.path);
  EXPECT_EQ(back.affine_source, AffineSource::kPixdim);
  EXPECT_EQ(back.grid.affine, (Affine{2.5, 0, 0, 0, 0, 2.5, 0, 0, 0, 0, 2.5, 0, 0, 0, 0, 1}));
}

TEST(BrainVolume, TruncatedFilesAreErrorsNamingTheFile) {
  ScratchDir dir;
  const std::string bytes = read_bytes(data_file("functional.nii"));
  const std::string data_cut = dir / "data_cut.nii";
  write_text(data_cut, bytes.substr(0, 20000));
  std::string message = error_of([&] { read_volume(data_cut); });
  EXPECT_NE(message.find(data_cut), std::string::npos) << message;
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;

  const std::string header_cut = dir / "header_cut.nii";
  write_text(header_cut, bytes.substr(0, 200));
  message = error_of([&] { read_volume(header_cut); });
  EXPECT_NE(message.find(header_cut), std::string::npos) << message;
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;

  // A .nii.gz whose compressed stream stops early.
  Volume volume = small_4d(dir / "whole.nii.gz");
  for (float& value : volume.data)
    value = static_cast<float>(std::sin(value) * 1e4);
  write_volume(volume.path, volume);
  const std::string gz = read_bytes(volume.path);
  const std::string gz_cut = dir / "gz_cut.nii.gz";
  write_text(gz_cut, gz.substr(0, gz.size() / 2));
  message = error_of([&] { read_volume(gz_cut); });
  EXPECT_NE(message.find(gz_cut), std::string::npos) << message;
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
}

TEST(BrainVolume, ACorruptDimensionCountIsAnErrorNotAStackOverflow) {
  // Found by fuzzing (tests/fuzz/regressions/brain_files): libnifti2 copies dim[0] entries into
  // fixed arrays, so a header claiming 687865860 dimensions overflowed its stack.
  ScratchDir dir;
  Volume volume = small_4d(dir / "v1.nii");
  write_volume(volume.path, volume);
  const std::int16_t dims16 = 300;
  patch(volume.path, 40, &dims16, 2);
  std::string message = error_of([&] { read_volume(volume.path); });
  EXPECT_NE(message.find(volume.path + ": not a NIfTI-1 or NIfTI-2 file"), std::string::npos)
      << message;

  volume.path = dir / "v2.nii";
  WriteOptions version2;
  version2.nifti_version = 2;
  write_volume(volume.path, volume, version2);
  const std::int64_t dims64 = 687865860;
  patch(volume.path, 16, &dims64, 8);
  message = error_of([&] { read_volume(volume.path); });
  EXPECT_NE(message.find(volume.path + ": not a NIfTI-1 or NIfTI-2 file"), std::string::npos)
      << message;
}

TEST(BrainVolume, AHeaderClaimingTerabytesIsATruncatedFileNotAnAllocation) {
  // Found by fuzzing (tests/fuzz/regressions/brain_files): the voxels were allocated as the header
  // claimed before the file was read; 30000^3 float voxels are 108 TB.
  ScratchDir dir;
  Volume volume = small_4d(dir / "huge.nii");
  write_volume(volume.path, volume);
  const std::int16_t dims[4] = {4, 30000, 30000, 30000};
  patch(volume.path, 40, dims, sizeof dims);
  const std::string message = error_of([&] { read_volume(volume.path); });
  EXPECT_NE(message.find(volume.path + ": truncated"), std::string::npos) << message;
}

TEST(BrainVolume, OtherFilesAreErrorsNamingTheFile) {
  ScratchDir dir;
  const std::string text = dir / "notes.nii";
  write_text(text, std::string(2000, 'x'));
  std::string message = error_of([&] { read_volume(text); });
  EXPECT_NE(message.find(text), std::string::npos) << message;
  EXPECT_NE(message.find("not a NIfTI-1 or NIfTI-2 file"), std::string::npos) << message;

  const std::string missing = dir / "missing.nii.gz";
  message = error_of([&] { read_volume(missing); });
  EXPECT_NE(message.find(missing + ": no such file"), std::string::npos) << message;

  Volume volume = small_4d(dir / "analyze.nii");
  write_volume(volume.path, volume);
  patch(volume.path, 344, "\0\0\0\0", 4);  // no NIfTI magic: an ANALYZE 7.5 header
  message = error_of([&] { read_volume(volume.path); });
  EXPECT_NE(message.find(volume.path + ": an ANALYZE 7.5 header"), std::string::npos) << message;

  const std::string csv = dir / "table.csv";
  write_text(csv, "1,2,3\n");
  message = error_of([&] { read_volume(csv); });
  EXPECT_NE(message.find(csv), std::string::npos) << message;
  EXPECT_NE(message.find(".nii or .nii.gz"), std::string::npos) << message;
}

TEST(BrainVolume, NonFiniteValuesAreAnErrorCountingThem) {
  ScratchDir dir;
  Volume volume = small_4d(dir / "nan.nii");
  volume.data[3] = std::numeric_limits<float>::quiet_NaN();
  volume.data[50] = std::numeric_limits<float>::infinity();
  write_volume(volume.path, volume);
  const std::string message = error_of([&] { read_volume(volume.path); });
  EXPECT_NE(message.find(volume.path), std::string::npos) << message;
  EXPECT_NE(message.find("2 of its 120 voxel values are NaN or infinite"), std::string::npos)
      << message;
}

TEST(BrainVolume, GridsAreComparedWithATolerance) {
  Grid a{4, 3, 2, {2, 0, 0, 10, 0, 2, 0, 20, 0, 0, 2, 30, 0, 0, 0, 1}};
  Grid b = a;
  b.affine[3] += 5e-4;
  EXPECT_NO_THROW(check_same_grid(a, "a.nii", b, "b.nii"));
  b.affine[3] += 1e-2;
  std::string message = error_of([&] { check_same_grid(a, "a.nii", b, "b.nii"); });
  EXPECT_NE(message.find("a.nii is 4x3x2 with affine [[2, 0, 0, 10]"), std::string::npos)
      << message;
  EXPECT_NE(message.find("b.nii is 4x3x2 with affine [[2, 0, 0, 10.0105]"), std::string::npos)
      << message;
  b = a;
  b.nz = 3;
  message = error_of([&] { check_same_grid(a, "a.nii", b, "b.nii"); });
  EXPECT_NE(message.find("b.nii is 4x3x3"), std::string::npos) << message;
}

}  // namespace
}  // namespace pelab::brain
