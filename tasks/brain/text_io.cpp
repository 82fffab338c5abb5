#include "text_io.h"

#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <fmt/format.h>

#include <pelab/sdk.h>

namespace pelab::brain::detail {

std::string trim(const std::string& text) {
  const char* blank = " \t\r\n";
  const auto first = text.find_first_not_of(blank);
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(blank) - first + 1);
}

std::string without_bom(const std::string& line) {
  return line.rfind("\xEF\xBB\xBF", 0) == 0 ? line.substr(3) : line;
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  bool was_quoted = false;
  for (std::size_t c = 0; c < line.size(); ++c) {
    const char ch = line[c];
    if (quoted) {
      if (ch == '"' && c + 1 < line.size() && line[c + 1] == '"') {
        field += '"';
        ++c;
      } else if (ch == '"') {
        quoted = false;
      } else {
        field += ch;
      }
    } else if (ch == '"' && trim(field).empty()) {
      quoted = was_quoted = true;
      field.clear();
    } else if (ch == ',') {
      fields.push_back(was_quoted ? field : trim(field));
      field.clear();
      was_quoted = false;
    } else if (!was_quoted) {
      field += ch;
    }
  }
  fields.push_back(was_quoted ? field : trim(field));
  return fields;
}

std::string csv_field(const std::string& field) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
  std::string quoted = "\"";
  for (char ch : field)
    quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return quoted + "\"";
}

bool parse_number(const std::string& field, double& value) {
  const char* begin = field.data();
  const char* end = begin + field.size();
  if (begin != end && *begin == '+') ++begin;  // from_chars does not take a leading '+'
  const auto [stop, error] = std::from_chars(begin, end, value);
  return begin != end && error == std::errc() && stop == end;
}

std::string format_number(double value) {
  char buffer[64];
  const auto [stop, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return error == std::errc() ? std::string(buffer, stop) : fmt::format("{}", value);
}

void write_text_atomically(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path temporary =
      target.parent_path() / fmt::format(".tmp-{}-{}", getpid(), target.filename().string());
  {
    std::ofstream out(temporary, std::ios::binary);
    out << content;
    out.close();
    std::error_code error;
    if (!out) {
      fs::remove(temporary, error);
      throw Error(fmt::format("{}: could not write the file (is the folder writable?)", path));
    }
  }
  std::error_code error;
  fs::rename(temporary, target, error);
  if (error) {
    fs::remove(temporary, error);
    throw Error(fmt::format("{}: could not write the file (rename failed)", path));
  }
}

}  // namespace pelab::brain::detail
