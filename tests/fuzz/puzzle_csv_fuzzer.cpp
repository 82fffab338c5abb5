// Fuzzes the Latin Square puzzle CSV reader (tasks/latin_square/puzzle_csv.h), which reads the
// LSTNN files and any puzzle file a manifest names: any bytes give puzzles or a pelab::Error.

#include <sstream>

#include "fuzz_target.h"
#include "puzzle_csv.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(pelab::fuzz::as_string(data, size));
  pelab::fuzz::expect_pelab_errors_only(
      "parse_puzzle_csv", [&] { pelab::latin_square::parse_puzzle_csv(in, "puzzles.csv"); });
  return 0;
}
