#pragma once

// An integer field of a JSON file pelab wrote (summary.json, claim.json), read from a file that a
// hand edit or a half-written disk may have left in any state.

#include <cstdint>

namespace pelab {

// Reads `field` of `object` into `into`, which is left as it is when the field is absent; false
// when the field holds anything but an integer. nlohmann would convert a floating-point number
// with a cast, which is undefined behaviour outside the integer's range (the fuzzer wrote a
// seed of 4.5e63).
template <typename Json>
bool read_integer(const Json& object, const char* field, std::int64_t& into) {
  const auto found = object.find(field);
  if (found == object.end()) return true;
  if (!found->is_number_integer()) return false;
  into = found->template get<std::int64_t>();
  return true;
}

}  // namespace pelab
