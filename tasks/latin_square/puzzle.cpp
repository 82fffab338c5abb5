#include "puzzle.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include <fmt/format.h>

#include <pelab/sdk.h>

namespace pelab::latin_square {
namespace {

struct Repeat {
  int shape;
  bool in_column;
  int line;  // 0-based
};

// The first shape shown twice in a row (rows first) or a column.
std::optional<Repeat> first_repeat(const Cells& cells) {
  for (bool in_column : {false, true}) {
    for (int line = 0; line < kSide; ++line) {
      unsigned seen = 0;
      for (int i = 0; i < kSide; ++i) {
        const int digit = in_column ? cells[cell_at(i, line)] : cells[cell_at(line, i)];
        if (digit < 1 || digit > kShapes) continue;
        if (seen & (1u << digit)) return Repeat{digit, in_column, line};
        seen |= 1u << digit;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::string to_string(Condition condition) {
  switch (condition) {
    case Condition::kBinary:
      return "binary";
    case Condition::kTernary:
      return "ternary";
    case Condition::kQuaternary:
      return "quaternary";
  }
  PELAB_INTERNAL_ASSERT(false, "condition {}", static_cast<int>(condition));
}

std::optional<Condition> parse_condition(const std::string& text) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (Condition condition : kAllConditions) {
    if (lower == to_string(condition)) return condition;
  }
  return std::nullopt;
}

std::string check_digits(const std::string& digits) {
  if (digits.size() != static_cast<std::size_t>(kCells)) {
    return fmt::format("puzzle has {} digits, expected {} ({})", digits.size(), kCells,
                       kDigitsHelp);
  }
  std::vector<int> queries;
  for (int k = 0; k < kCells; ++k) {
    const char c = digits[k];
    if (c < '0' || c > '0' + kQueryDigit) {
      return fmt::format("puzzle '{}' has '{}' at position {}, expected a digit 0-5 ({})", digits,
                         c, k + 1, kDigitsHelp);
    }
    if (c == '0' + kQueryDigit) queries.push_back(k + 1);
  }
  if (queries.empty()) {
    return fmt::format("puzzle '{}' has no query cell (digit 5), expected exactly one ({})", digits,
                       kDigitsHelp);
  }
  if (queries.size() > 1) {
    return fmt::format(
        "puzzle '{}' has {} query cells (digit 5, at positions {}), expected exactly one ({})",
        digits, queries.size(), fmt::join(queries, ", "), kDigitsHelp);
  }
  if (const std::optional<Repeat> repeat = first_repeat(cells_from_digits(digits))) {
    return fmt::format("puzzle '{}' repeats shape {} in {} {}, which a Latin square forbids",
                       digits, repeat->shape, repeat->in_column ? "column" : "row",
                       repeat->line + 1);
  }
  return "";
}

Cells cells_from_digits(const std::string& digits) {
  PELAB_INTERNAL_ASSERT(digits.size() == static_cast<std::size_t>(kCells), "'{}'", digits);
  Cells cells{};
  for (int k = 0; k < kCells; ++k)
    cells[k] = static_cast<std::int8_t>(digits[k] - '0');
  return cells;
}

bool is_latin_consistent(const Cells& cells) {
  return !first_repeat(cells).has_value();
}

Puzzle Puzzle::from_digits(const std::string& digits, int solution, Condition condition) {
  const std::string problem = check_digits(digits);
  PELAB_CHECK(problem.empty(), "{}", problem);
  PELAB_CHECK(solution >= 1 && solution <= kShapes, "solution {} is not a shape 1-4", solution);
  Puzzle puzzle;
  puzzle.cells = cells_from_digits(digits);
  puzzle.query = static_cast<int>(std::find(puzzle.cells.begin(), puzzle.cells.end(), kQueryDigit) -
                                  puzzle.cells.begin());
  puzzle.solution = solution;
  puzzle.condition = condition;
  return puzzle;
}

std::string Puzzle::digits() const {
  std::string text(kCells, '0');
  for (int k = 0; k < kCells; ++k)
    text[k] = static_cast<char>('0' + cells[k]);
  return text;
}

int Puzzle::shape_count() const {
  return static_cast<int>(std::count_if(cells.begin(), cells.end(), [](std::int8_t digit) {
    return digit >= 1 && digit <= kShapes;
  }));
}

}  // namespace pelab::latin_square
