#include "pelab/io/file_io.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <torch/torch.h>
#include <boost/filesystem.hpp>

#include "pelab/base/error.h"

namespace pelab {

namespace fs = boost::filesystem;

void write_file_atomically(const std::string& path, const std::string& contents) {
  const fs::path target(path);
  if (target.has_parent_path()) {
    boost::system::error_code error;
    // create_directories(".") fails ("Invalid argument") although "." exists.
    if (!fs::is_directory(target.parent_path(), error))
      fs::create_directories(target.parent_path(), error);
    PELAB_CHECK(!error, "cannot create the folder '{}' for '{}': {}", target.parent_path().string(),
                path, error.message());
  }
  const std::string temporary = fmt::format("{}.tmp.{}", path, ::getpid());
  {
    std::FILE* file = std::fopen(temporary.c_str(), "wb");
    PELAB_CHECK(file != nullptr, "cannot write '{}': {}", temporary, std::strerror(errno));
    // The first failure's errno says why (ENOSPC, EDQUOT, EIO); later calls may overwrite it.
    int cause = 0;
    auto step = [&cause](bool ok) {
      if (!ok && cause == 0) cause = errno != 0 ? errno : EIO;
    };
    errno = 0;
    step(std::fwrite(contents.data(), 1, contents.size(), file) == contents.size());
    step(std::fflush(file) == 0);
    step(::fsync(::fileno(file)) == 0);
    step(std::fclose(file) == 0);
    if (cause != 0) {
      std::remove(temporary.c_str());
      const bool full = cause == ENOSPC || cause == EDQUOT;
      throw Error(fmt::format("cannot write '{}': {}{}", path, std::strerror(cause),
                              full ? " (free some space, then run the command again)" : ""));
    }
  }
  PELAB_CHECK(std::rename(temporary.c_str(), path.c_str()) == 0, "cannot rename '{}' to '{}': {}",
              temporary, path, std::strerror(errno));
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  PELAB_CHECK(in.good(), "cannot read '{}': {}", path,
              fs::exists(path) ? "permission denied or not a file" : "no such file");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

namespace {

struct NpyType {
  torch::ScalarType scalar;
  const char* descr;
};

constexpr NpyType kNpyTypes[] = {
    {torch::kFloat32, "<f4"}, {torch::kFloat64, "<f8"}, {torch::kInt32, "<i4"},
    {torch::kInt64, "<i8"},   {torch::kUInt8, "|u1"},   {torch::kBool, "|b1"},
};

const NpyType* npy_type(torch::ScalarType scalar) {
  for (const auto& type : kNpyTypes) {
    if (type.scalar == scalar) return &type;
  }
  return nullptr;
}

const NpyType* npy_type(const std::string& descr) {
  for (const auto& type : kNpyTypes) {
    if (descr == type.descr) return &type;
  }
  return nullptr;
}

constexpr char kNpyMagic[] = "\x93NUMPY";

}  // namespace

std::string to_npy(const torch::Tensor& tensor) {
  PELAB_INTERNAL_ASSERT(tensor.defined(), "cannot write an undefined tensor");
  const NpyType* type = npy_type(tensor.scalar_type());
  PELAB_CHECK(type != nullptr, "cannot write a {} tensor as .npy",
              c10::toString(tensor.scalar_type()));
  const torch::Tensor data = tensor.detach().to(torch::kCPU).contiguous();

  std::string shape;
  for (std::int64_t i = 0; i < data.dim(); ++i)
    shape += fmt::format("{}, ", data.size(i));
  if (data.dim() > 1) shape.resize(shape.size() - 2);  // "(3,)" for 1D, "(2, 3)" otherwise
  if (data.dim() == 1) shape.pop_back();
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", type->descr, shape);
  // Magic (6) + version (2) + header length (2) + header + '\n' is a multiple of 64.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';

  std::string out(kNpyMagic, 6);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  if (data.numel() > 0)
    out.append(static_cast<const char*>(data.data_ptr()), data.numel() * data.element_size());
  return out;
}

namespace {

// The header of a .npy file (a Python dict literal) and where the payload after it starts.
struct NpyHeader {
  std::string text;
  std::size_t data_offset = 0;
};

// Checks the magic and version, then cuts out the header that the version's length field gives.
NpyHeader read_npy_header(const std::string& bytes, const std::string& what) {
  PELAB_CHECK(bytes.size() >= 10 && bytes.compare(0, 6, kNpyMagic, 6) == 0,
              "{}: not a .npy file (bad magic)", what);
  const int major = static_cast<unsigned char>(bytes[6]);
  std::size_t header_length = 0;
  std::size_t offset = 0;
  if (major == 1) {
    header_length = static_cast<unsigned char>(bytes[8]) |
                    (static_cast<std::size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    offset = 10;
  } else {
    PELAB_CHECK(bytes.size() >= 12 && (major == 2 || major == 3), "{}: unsupported .npy version {}",
                what, major);
    for (int i = 0; i < 4; ++i) {
      header_length |= static_cast<std::size_t>(static_cast<unsigned char>(bytes[8 + i]))
                       << (8 * i);
    }
    offset = 12;
  }
  PELAB_CHECK(bytes.size() >= offset + header_length, "{}: truncated .npy header", what);
  return {bytes.substr(offset, header_length), offset + header_length};
}

// The header is a Python dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3),
// }
// The value of `key` in it: the text after `'key':`, up to the end of the header.
std::string npy_header_value(const std::string& header, const std::string& key,
                             const std::string& what) {
  const std::size_t at = header.find("'" + key + "'");
  PELAB_CHECK(at != std::string::npos, "{}: .npy header lacks '{}'", what, key);
  std::size_t colon = header.find_first_not_of(' ', at + key.size() + 2);
  PELAB_CHECK(colon != std::string::npos && header[colon] == ':',
              "{}: malformed .npy header at '{}'", what, key);
  const std::size_t value = header.find_first_not_of(' ', colon + 1);
  return value == std::string::npos ? std::string() : header.substr(value);
}

// The dtype string of 'descr', unquoted: "<f4".
std::string npy_descr(const std::string& header, const std::string& what) {
  const std::string descr_text = npy_header_value(header, "descr", what);
  const std::size_t descr_end = descr_text.find('\'', 1);
  PELAB_CHECK(!descr_text.empty() && descr_text[0] == '\'' && descr_end != std::string::npos,
              "{}: malformed .npy header: 'descr' is not a quoted dtype", what);
  return descr_text.substr(1, descr_end - 1);
}

void check_npy_c_order(const std::string& header, const std::string& what) {
  const std::string order = npy_header_value(header, "fortran_order", what);
  PELAB_CHECK(order.rfind("False", 0) == 0 || order.rfind("True", 0) == 0,
              "{}: malformed .npy header: 'fortran_order' is neither True nor False", what);
  PELAB_CHECK(order.rfind("False", 0) == 0, "{}: Fortran-ordered .npy arrays are not supported",
              what);
}

// The tuple of 'shape' with its parentheses, as written: "(2, 3)".
std::string npy_shape_tuple(const std::string& header, const std::string& what) {
  const std::string shape_text = npy_header_value(header, "shape", what);
  const std::size_t shape_end = shape_text.find(')');
  PELAB_CHECK(!shape_text.empty() && shape_text[0] == '(' && shape_end != std::string::npos,
              "{}: malformed .npy header: 'shape' is not a tuple", what);
  return shape_text.substr(0, shape_end + 1);
}

struct NpyShape {
  std::vector<std::int64_t> dims;
  // The element count as LibTorch computes it, in order and in int64, whose overflow it refuses
  // even when a later dimension is 0 (found by fuzzing: (4000000000, 40000000000000000, 0)).
  std::int64_t numel = 1;
  bool numel_overflow = false;
};

// The dimensions of a shape tuple, each checked to be a non-negative integer.
NpyShape parse_npy_shape(const std::string& tuple, const std::string& what) {
  NpyShape shape;
  std::stringstream parts(tuple.substr(1, tuple.size() - 2));
  for (std::string part; std::getline(parts, part, ',');) {
    const std::size_t first = part.find_first_not_of(' ');
    if (first == std::string::npos) continue;  // the trailing comma of (3,)
    const std::string digits = part.substr(first, part.find_last_not_of(' ') - first + 1);
    PELAB_CHECK(digits.size() <= 18 && digits.find_first_not_of("0123456789") == std::string::npos,
                "{}: malformed .npy shape '{}': dimensions are non-negative integers", what, tuple);
    shape.dims.push_back(std::stoll(digits));
    shape.numel_overflow = __builtin_mul_overflow(shape.numel, shape.dims.back(), &shape.numel) ||
                           shape.numel_overflow;
  }
  return shape;
}

}  // namespace

torch::Tensor from_npy(const std::string& bytes, const std::string& what) {
  const NpyHeader header = read_npy_header(bytes, what);
  const std::string descr = npy_descr(header.text, what);
  const NpyType* type = npy_type(descr);
  PELAB_CHECK(type != nullptr, "{}: unsupported .npy dtype '{}'", what, descr);
  check_npy_c_order(header.text, what);
  const std::string shape_tuple = npy_shape_tuple(header.text, what);

  // Every dimension is checked, and the payload's size with it, before anything is allocated.
  const std::size_t data_offset = header.data_offset;
  const std::size_t element_size = c10::elementSize(type->scalar);
  const NpyShape shape = parse_npy_shape(shape_tuple, what);
  std::size_t payload = 0;
  const bool overflow =
      shape.numel_overflow ||
      __builtin_mul_overflow(static_cast<std::size_t>(shape.numel), element_size, &payload);
  PELAB_CHECK(!overflow && bytes.size() - data_offset == payload,
              "{}: .npy payload is {} bytes, expected {} for the shape {} of '{}'", what,
              bytes.size() - data_offset, overflow ? "more than 2^63" : std::to_string(payload),
              shape_tuple, descr);
  torch::Tensor tensor = torch::empty(shape.dims, torch::TensorOptions().dtype(type->scalar));
  // An empty array has no storage: its data pointer is null, which memcpy may not be given.
  if (payload > 0) std::memcpy(tensor.data_ptr(), bytes.data() + data_offset, payload);
  return tensor;
}

void write_npy(const std::string& path, const torch::Tensor& tensor) {
  write_file_atomically(path, to_npy(tensor));
}

torch::Tensor read_npy(const std::string& path) {
  return from_npy(read_file(path), path);
}

std::string valid_utf8(const std::string& text) {
  // The length of the valid UTF-8 sequence at `i`, or 0 (RFC 3629: no overlong forms, no
  // surrogates, nothing beyond U+10FFFF).
  const auto sequence_at = [&](std::size_t i) -> std::size_t {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char lead = byte(i);
    if (lead < 0x80) return 1;
    std::size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) low = 0xA0;
      if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
    } else {
      return 0;
    }
    if (i + length > text.size()) return 0;
    if (byte(i + 1) < low || byte(i + 1) > high) return 0;
    for (std::size_t k = 2; k < length; ++k) {
      if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
    }
    return length;
  };
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    if (const std::size_t length = sequence_at(i)) {
      out.append(text, i, length);
      i += length;
    } else {
      out += fmt::format("\\x{:02X}", static_cast<unsigned char>(text[i]));
      ++i;
    }
  }
  return out;
}

std::string csv_field(const std::string& raw) {
  const std::string field = valid_utf8(raw);
  if (field.find_first_of(",\"\n\r") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::vector<std::string> parse_csv_line(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

std::string format_number(double value) {
  return fmt::format("{}", value);
}

std::string format_duration(double seconds) {
  if (seconds < 0) return "-";
  const auto total = static_cast<long long>(seconds + 0.5);
  if (total >= 3600) return fmt::format("{}h{:02}m", total / 3600, (total % 3600) / 60);
  if (total >= 60) return fmt::format("{}m{:02}s", total / 60, total % 60);
  return fmt::format("{}s", total);
}

}  // namespace pelab
