#pragma once

#include <string>
#include <vector>

#include <torch/types.h>

#include "pelab/base/export.h"

namespace pelab {

/// Writes `contents` to `path` so that readers see either the old file or the whole new one:
/// a temporary file in the same folder, flushed, then renamed over `path`. Creates parent folders.
PELAB_API void write_file_atomically(const std::string& path, const std::string& contents);

/// Reads a whole file; throws pelab::Error naming the file when it cannot.
PELAB_API std::string read_file(const std::string& path);

/// Serialises a tensor in NumPy's .npy format (version 1.0, little-endian, C order): float32,
/// float64, int32, int64, uint8 and bool are supported.
PELAB_API std::string to_npy(const torch::Tensor& tensor);
/// Parses a .npy document written by to_npy or by numpy.save for those dtypes.
PELAB_API torch::Tensor from_npy(const std::string& bytes, const std::string& what = "npy data");
/// to_npy + write_file_atomically.
PELAB_API void write_npy(const std::string& path, const torch::Tensor& tensor);
PELAB_API torch::Tensor read_npy(const std::string& path);

/// Text as pelab writes it into a JSON, CSV, HTML or markdown file: valid UTF-8 unchanged, and each
/// byte that is not part of a valid UTF-8 sequence written as the four characters `\xNN`, so that a
/// file name or a data file's text in another encoding reaches a record readably instead of
/// aborting the write (a JSON writer refuses invalid UTF-8). The one path for all of them.
PELAB_API std::string valid_utf8(const std::string& text);

/// Quotes a CSV field when it needs it (RFC 4180); invalid UTF-8 escaped by valid_utf8().
PELAB_API std::string csv_field(const std::string& field);
/// Splits one CSV line written with csv_field() back into its fields.
PELAB_API std::vector<std::string> parse_csv_line(const std::string& line);

/// A value printed with the shortest representation that reads back exactly ("0.1", not
/// "0.10000000000000001"), so that identical runs give byte-identical files.
PELAB_API std::string format_number(double value);

/// A duration for people: "42s", "3m07s", "2h05m"; "-" for a negative (unknown) one.
PELAB_API std::string format_duration(double seconds);

}  // namespace pelab
