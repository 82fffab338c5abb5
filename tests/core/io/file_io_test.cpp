// The run folder's file formats: .npy snapshots, atomic writes, CSV fields, exact numbers.

#include "pelab/io/file_io.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <boost/filesystem.hpp>

#include "pelab/base/error.h"
#include "test_support.h"

namespace pelab {
namespace {

using ::pelab::test::ScratchDir;
using ::testing::HasSubstr;

namespace fs = boost::filesystem;

std::size_t header_length(const std::string& npy) {
  return static_cast<unsigned char>(npy[8]) | (static_cast<unsigned char>(npy[9]) << 8);
}

std::string header_of(const std::string& npy) {
  return npy.substr(10, header_length(npy));
}

// The message of the Error that from_npy throws for `bytes`.
std::string npy_error(const std::string& bytes) {
  try {
    from_npy(bytes, "snapshot.npy");
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "from_npy accepted the bytes";
  return "";
}

// A .npy document with a hand-written header (version 1.0), padded as NumPy pads it.
std::string npy_with_header(std::string header, const std::string& payload) {
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + payload;
}

torch::Tensor sample(torch::ScalarType type, const std::vector<std::int64_t>& shape) {
  if (type == torch::kBool) return torch::rand(shape) > 0.5;
  if (type == torch::kFloat32 || type == torch::kFloat64) return torch::randn(shape).to(type);
  return torch::randint(0, 200, shape).to(type);
}

// Every supported dtype, in 0-d, 1-d, n-d and empty shapes. One test rather than a parameterised
// suite: each ctest case is a process, and loading LibTorch dominates the suite's time.
TEST(Npy, RoundTripKeepsDtypeShapeAndValues) {
  const std::vector<torch::ScalarType> types = {torch::kFloat32, torch::kFloat64, torch::kInt32,
                                                torch::kInt64,   torch::kUInt8,   torch::kBool};
  const std::vector<std::vector<std::int64_t>> shapes = {{}, {5}, {2, 3}, {2, 1, 4}, {0}, {3, 0}};
  torch::manual_seed(7);
  for (const auto type : types) {
    for (const auto& shape : shapes) {
      SCOPED_TRACE(::testing::Message()
                   << c10::toString(type) << " [" << torch::IntArrayRef(shape) << "]");
      const torch::Tensor original = sample(type, shape);
      const std::string bytes = to_npy(original);
      const torch::Tensor back = from_npy(bytes);
      EXPECT_EQ(back.scalar_type(), type);
      EXPECT_EQ(back.sizes().vec(), shape);
      EXPECT_TRUE(torch::equal(back, original));
      // The payload starts on a 64-byte boundary, as in NumPy's own files.
      EXPECT_EQ((10 + header_length(bytes)) % 64, 0u);
      EXPECT_EQ(bytes[10 + header_length(bytes) - 1], '\n');
      EXPECT_EQ(bytes.size(),
                10 + header_length(bytes) + original.numel() * original.element_size());
    }
  }
}

TEST(Npy, HeaderSpellsDtypeAndShapeLikeNumPy) {
  EXPECT_THAT(header_of(to_npy(torch::zeros({3}, torch::kInt64))),
              HasSubstr("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }"));
  EXPECT_THAT(header_of(to_npy(torch::zeros({2, 3}, torch::kFloat32))),
              HasSubstr("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"));
  EXPECT_THAT(header_of(to_npy(torch::tensor(1.5, torch::kFloat64))),
              HasSubstr("{'descr': '<f8', 'fortran_order': False, 'shape': (), }"));
  EXPECT_THAT(header_of(to_npy(torch::zeros({1}, torch::kBool))), HasSubstr("'descr': '|b1'"));
  EXPECT_THAT(header_of(to_npy(torch::zeros({1}, torch::kUInt8))), HasSubstr("'descr': '|u1'"));
  EXPECT_THAT(header_of(to_npy(torch::zeros({1}, torch::kInt32))), HasSubstr("'descr': '<i4'"));
}

TEST(Npy, ExactBytesOfASmallArray) {
  // What numpy.save(f, numpy.arange(3, dtype='<i8')) writes.
  std::string expected("\x93NUMPY\x01\x00\x76\x00", 10);
  expected += "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }";
  expected += std::string(60, ' ') + "\n";
  for (std::int64_t v = 0; v < 3; ++v) {
    expected.append(reinterpret_cast<const char*>(&v), sizeof v);  // little-endian host
  }
  EXPECT_EQ(to_npy(torch::arange(3, torch::kInt64)), expected);
}

TEST(Npy, NonContiguousTensorsAreWrittenInCOrder) {
  const torch::Tensor t = torch::arange(6, torch::kFloat32).reshape({2, 3}).transpose(0, 1);
  const torch::Tensor back = from_npy(to_npy(t));
  EXPECT_EQ(back.sizes().vec(), (std::vector<std::int64_t>{3, 2}));
  EXPECT_TRUE(torch::equal(back, t));
}

TEST(Npy, ReadsHeadersWrittenByNumPy) {
  // NumPy's spacing, and a version 2.0 header with a 4-byte length.
  const float values[2] = {1.5f, -2.0f};
  const std::string payload(reinterpret_cast<const char*>(values), sizeof values);
  const torch::Tensor v1 = from_npy(
      npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", payload));
  EXPECT_TRUE(torch::equal(v1, torch::tensor({1.5f, -2.0f})));

  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }";
  header.append((64 - (12 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string v2("\x93NUMPY\x02\x00", 8);
  const std::uint32_t length = static_cast<std::uint32_t>(header.size());
  v2.append(reinterpret_cast<const char*>(&length), 4);
  v2 += header + payload;
  EXPECT_TRUE(torch::equal(from_npy(v2), torch::tensor({{1.5f, -2.0f}})));
}

TEST(Npy, RejectsGarbageWithAClearError) {
  EXPECT_THAT(npy_error(""), HasSubstr("snapshot.npy: not a .npy file (bad magic)"));
  EXPECT_THAT(npy_error("hello, this is text and not an array"),
              HasSubstr("snapshot.npy: not a .npy file (bad magic)"));
  EXPECT_THAT(npy_error(std::string("\x93NUMPY\x09\x00\x10\x00", 10)),
              HasSubstr("unsupported .npy version 9"));

  const std::string good = to_npy(torch::arange(4, torch::kFloat32));
  EXPECT_THAT(npy_error(good.substr(0, 40)), HasSubstr("truncated .npy header"));
  EXPECT_THAT(npy_error(good.substr(0, good.size() - 1)),
              HasSubstr("payload is 15 bytes, expected 16"));
  EXPECT_THAT(npy_error(good + "x"), HasSubstr("payload is 17 bytes, expected 16"));

  EXPECT_THAT(
      npy_error(npy_with_header("{'descr': '<f2', 'fortran_order': False, 'shape': (1,), }", "ab")),
      HasSubstr("unsupported .npy dtype '<f2'"));
  EXPECT_THAT(npy_error(npy_with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }",
                                        "abcd")),
              HasSubstr("unsupported .npy dtype '>f4'"));
  EXPECT_THAT(npy_error(npy_with_header("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }",
                                        "abcd")),
              HasSubstr("Fortran-ordered"));
  // Found by fuzzing (tests/fuzz/regressions/npy): shapes that are not sizes, or far larger than
  // the file, were a std::invalid_argument or an attempt to allocate terabytes.
  EXPECT_THAT(
      npy_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (x,), }", "")),
      HasSubstr("malformed .npy shape '(x,)'"));
  EXPECT_THAT(npy_error(npy_with_header(
                  "{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 2), }", "")),
              HasSubstr("dimensions are non-negative integers"));
  EXPECT_THAT(
      npy_error(npy_with_header(
          "{'descr': '<f4', 'fortran_order': False, 'shape': (4000000000, 4000000000), }", "abcd")),
      HasSubstr("payload is 4 bytes, expected more than 2^63 for the shape (4000000000, "
                "4000000000)"));
  EXPECT_THAT(npy_error(npy_with_header(
                  "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000), }", "")),
              HasSubstr("payload is 0 bytes, expected 4000000000000 for the shape"));
  EXPECT_THAT(
      npy_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4000000000, "
                                "40000000000000000, 0), }",
                                "")),
      HasSubstr("payload is 0 bytes, expected more than 2^63"));
  EXPECT_EQ(from_npy(npy_with_header("{'descr':'<f4','fortran_order':False,'shape':( 1 ,)}",
                                     std::string("\0\0\x80\x3f", 4)))
                .item<float>(),
            1.0f);
  EXPECT_THAT(npy_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, }", "")),
              HasSubstr("lacks 'shape'"));
}

TEST(Npy, RefusesDtypesItCannotWrite) {
  EXPECT_THROW(to_npy(torch::zeros({2}, torch::kFloat16)), Error);
  EXPECT_THROW(to_npy(torch::zeros({2}, torch::kComplexFloat)), Error);
}

TEST(Npy, FileRoundTrip) {
  ScratchDir dir;
  const torch::Tensor t = torch::randn({4, 3}, torch::kFloat64);
  write_npy(dir / "pe/tables.npy", t);
  EXPECT_TRUE(torch::equal(read_npy(dir / "pe/tables.npy"), t));
  try {
    read_npy(dir / "missing.npy");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("missing.npy"));
    EXPECT_THAT(e.what(), HasSubstr("no such file"));
  }
}

TEST(WriteFileAtomically, CreatesFoldersReplacesAndLeavesNoTemporary) {
  ScratchDir dir;
  const std::string path = dir / "a/b/c/file.txt";
  write_file_atomically(path, "a longer first version\n");
  EXPECT_EQ(read_file(path), "a longer first version\n");
  write_file_atomically(path, "short");
  EXPECT_EQ(read_file(path), "short");
  write_file_atomically(path, std::string("\0binary\0", 8));
  EXPECT_EQ(read_file(path), std::string("\0binary\0", 8));
  write_file_atomically(path, "");
  EXPECT_EQ(read_file(path), "");

  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir / "a/b/c")) {
    names.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"file.txt"}));
}

// An output folder that cannot be created is the user's to fix (e.g. `pelab run --out` on a
// file): a pelab::Error naming the path, not a stray exception the CLI calls an internal error.
TEST(WriteFileAtomically, UnwritableFolderIsAUserError) {
  ScratchDir dir;
  write_file_atomically(dir / "blocker", "a file where a folder should be");
  try {
    write_file_atomically(dir / "blocker/inside.txt", "x");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("blocker"));
  } catch (const std::exception& e) {
    FAIL() << "not a pelab::Error: " << e.what();
  }
}

TEST(ReadFile, MissingFileIsAUserError) {
  try {
    read_file("/nonexistent/pelab/file.txt");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("'/nonexistent/pelab/file.txt'"));
  }
}

TEST(FormatNumber, ShortestRepresentation) {
  EXPECT_EQ(format_number(0.1), "0.1");
  EXPECT_EQ(format_number(0.3), "0.3");
  EXPECT_EQ(format_number(1.0), "1");
  EXPECT_EQ(format_number(-2.5), "-2.5");
  EXPECT_EQ(format_number(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(format_number(1e-4), "0.0001");
}

TEST(FormatNumber, ReadsBackExactly) {
  std::mt19937_64 random(12345);
  std::vector<double> values = {1.0 / 3.0, 2.0 / 3.0,  1e-300,       5e-324, 1.7976931348623157e308,
                                -0.0,      123456.789, 6.02214076e23};
  for (int i = 0; i < 2000; ++i) {
    std::uint64_t bits = random();
    double value;
    std::memcpy(&value, &bits, sizeof value);
    if (std::isfinite(value)) values.push_back(value);
  }
  for (double value : values) {
    const std::string text = format_number(value);
    const double back = std::strtod(text.c_str(), nullptr);
    EXPECT_EQ(std::memcmp(&back, &value, sizeof value), 0) << text;
    EXPECT_LE(text.size(), 24u) << text;
  }
}

TEST(CsvField, QuotesOnlyWhenNeeded) {
  EXPECT_EQ(csv_field("test"), "test");
  EXPECT_EQ(csv_field(""), "");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_field("cr\r"), "\"cr\r\"");
}

// Cases from RFC 3629 and Markus Kuhn's UTF-8 decoder stress test; Python's
// bytes.decode("utf-8", "backslashreplace") gives the same escapes (upper-case hex aside).
TEST(ValidUtf8, KeepsValidTextAndEscapesEachInvalidByte) {
  EXPECT_EQ(valid_utf8(""), "");
  EXPECT_EQ(valid_utf8("plain, \"quoted\"\n"), "plain, \"quoted\"\n");
  EXPECT_EQ(valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");             // 2, 3 and 4 bytes
  EXPECT_EQ(valid_utf8("caf\xe9"), "caf\\xE9");                       // Latin-1
  EXPECT_EQ(valid_utf8("\xe2\x82"), "\\xE2\\x82");                    // cut short
  EXPECT_EQ(valid_utf8("\xc0\x80"), "\\xC0\\x80");                    // overlong NUL
  EXPECT_EQ(valid_utf8("\xed\xa0\x80"), "\\xED\\xA0\\x80");           // a surrogate
  EXPECT_EQ(valid_utf8("\xf4\x90\x80\x80"), "\\xF4\\x90\\x80\\x80");  // beyond U+10FFFF
  EXPECT_EQ(valid_utf8("\x80x\xff"), "\\x80x\\xFF");                  // lone continuation, 0xFF
  EXPECT_EQ(csv_field("a\xff,b"), "\"a\\xFF,b\"");
}

}  // namespace
}  // namespace pelab
