#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace pelab::latin_square {

// The Latin Square Task grid: 4x4 cells, row-major, cell k at row k / 4 and column k % 4.
inline constexpr int kSide = 4;
inline constexpr int kCells = kSide * kSide;
inline constexpr int kShapes = 4;
// Cell digits, as in the LSTNN CSV files: 0 blank, 1-4 a shape, 5 the query cell ('?').
inline constexpr std::int8_t kBlank = 0;
inline constexpr std::int8_t kQueryDigit = 5;

/// What the cell digits mean, for error messages.
inline constexpr const char* kDigitsHelp = "row-major 4x4, 0 blank, 1-4 shapes, 5 query";

using Cells = std::array<std::int8_t, kCells>;

inline constexpr int row_of(int cell) {
  return cell / kSide;
}
inline constexpr int column_of(int cell) {
  return cell % kSide;
}
inline constexpr int cell_at(int row, int column) {
  return row * kSide + column;
}

/// The relational complexity of a puzzle: how many lines (rows/columns) must be related to find the
/// answer. The numeric values are the group indices of the task's datasets.
enum class Condition : std::int8_t { kBinary = 0, kTernary = 1, kQuaternary = 2 };

inline constexpr int kConditions = 3;
inline constexpr std::array<Condition, kConditions> kAllConditions = {
    Condition::kBinary, Condition::kTernary, Condition::kQuaternary};

/// "binary", "ternary", "quaternary": the group names of the task.
std::string to_string(Condition condition);
/// Parses a condition name in any case ("Binary" in the CSV files); nullopt for anything else.
std::optional<Condition> parse_condition(const std::string& text);

/// One LST puzzle: the visible cells, the query cell, its answer and its condition.
struct Puzzle {
  Cells cells{};     // kBlank, 1-4 or kQueryDigit; exactly one kQueryDigit
  int query = -1;    // index of the query cell
  int solution = 0;  // the shape (1-4) that belongs in the query cell
  Condition condition = Condition::kBinary;

  /// Parses 16 digits; throws pelab::Error saying what is wrong with them.
  static Puzzle from_digits(const std::string& digits, int solution, Condition condition);

  /// The 16 digits, as written in the CSV files.
  std::string digits() const;
  /// Number of cells showing a shape (the query cell excluded).
  int shape_count() const;
};

/// Why `digits` is not a puzzle (wrong length, a character that is not 0-5, not exactly one query
/// cell, a shape repeated in a row or column); "" when it is one.
std::string check_digits(const std::string& digits);

/// Cells from 16 digits that check_digits() accepts.
Cells cells_from_digits(const std::string& digits);

/// Whether no shape appears twice in a row or a column.
bool is_latin_consistent(const Cells& cells);

}  // namespace pelab::latin_square
