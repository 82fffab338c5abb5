#pragma once

#include <istream>
#include <string>
#include <vector>

#include "puzzle.h"

namespace pelab::latin_square {

/// The header of the LSTNN CSV files. Columns are found by name; ID and LST_num are not used.
inline constexpr const char* kCsvHeader = "ID,LST_num,condition,puzzles,solutions";

/// Reads an LST puzzle file: a header line, then one puzzle per line (blank lines skipped).
/// `puzzles` is 16 digits (kDigitsHelp), `solutions` the shape 1-4, `condition` Binary, Ternary or
/// Quaternary. A bad row throws pelab::Error "<path>:<line>: <what is wrong>"; a file that cannot
/// be opened throws an Error naming the path.
std::vector<Puzzle> read_puzzle_csv(const std::string& path);

/// As read_puzzle_csv, from a stream; `name` stands for the file in messages.
std::vector<Puzzle> parse_puzzle_csv(std::istream& in, const std::string& name);

}  // namespace pelab::latin_square
