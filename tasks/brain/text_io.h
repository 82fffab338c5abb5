#pragma once

// Small text helpers shared by the brain library's CSV readers and writers (internal).

#include <string>
#include <vector>

namespace pelab::brain::detail {

/// `text` without leading and trailing blanks (spaces, tabs, CR, LF).
std::string trim(const std::string& text);

/// `line` without a leading UTF-8 byte order mark (spreadsheets write one).
std::string without_bom(const std::string& line);

/// The fields of one CSV line, trimmed; a field may be double-quoted (RFC 4180: "" is a quote).
std::vector<std::string> split_csv_line(const std::string& line);

/// Quotes a CSV field when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& field);

/// Parses a whole field as a number (locale-independent; "nan" and "inf" are numbers too).
bool parse_number(const std::string& field, double& value);

/// The shortest decimal text that reads back as exactly `value`.
std::string format_number(double value);

/// Writes `content` to `path` through a temporary file in the same folder and a rename, so that
/// a reader never sees half a file. Throws pelab::Error naming the path when it cannot.
void write_text_atomically(const std::string& path, const std::string& content);

}  // namespace pelab::brain::detail
