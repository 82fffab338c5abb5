#pragma once

// The text of a JSON file pelab writes (summary.json, claim.json, probe records, the sweep
// record). Strings come from file names, data files and error messages, in any encoding; the JSON
// writer aborts on a byte that is not UTF-8 (it once left a run without its summary), so every
// string and key goes through valid_utf8() on the way out.

#include <string>

#include "pelab/io/file_io.h"

namespace pelab {

template <typename Json>
Json with_valid_utf8(const Json& value) {
  if (value.is_string()) return Json(valid_utf8(value.template get<std::string>()));
  if (value.is_array()) {
    Json out = Json::array();
    for (const auto& element : value)
      out.push_back(with_valid_utf8(element));
    return out;
  }
  if (value.is_object()) {
    Json out = Json::object();
    for (auto it = value.begin(); it != value.end(); ++it)
      out[valid_utf8(it.key())] = with_valid_utf8(it.value());
    return out;
  }
  return value;
}

// Indented by two, with a final newline.
template <typename Json>
std::string json_file_text(const Json& document) {
  return with_valid_utf8(document).dump(2) + "\n";
}

}  // namespace pelab
