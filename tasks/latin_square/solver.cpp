#include "solver.h"

#include <algorithm>

#include <pelab/sdk.h>

namespace pelab::latin_square {
namespace {

constexpr unsigned kAllShapes = 0b11110;  // bits 1-4

bool is_shape(int digit) {
  return digit >= 1 && digit <= kShapes;
}

unsigned shapes_in_row(const Cells& cells, int row) {
  unsigned mask = 0;
  for (int j = 0; j < kSide; ++j) {
    const int digit = cells[cell_at(row, j)];
    if (is_shape(digit)) mask |= 1u << digit;
  }
  return mask;
}

unsigned shapes_in_column(const Cells& cells, int column) {
  unsigned mask = 0;
  for (int i = 0; i < kSide; ++i) {
    const int digit = cells[cell_at(i, column)];
    if (is_shape(digit)) mask |= 1u << digit;
  }
  return mask;
}

int popcount(unsigned mask) {
  return __builtin_popcount(mask);
}

// The one shape of a single-bit mask.
int only_shape(unsigned mask) {
  return __builtin_ctz(mask);
}

void fill(Cells& square, int cell, std::vector<Cells>& out) {
  if (cell == kCells) {
    out.push_back(square);
    return;
  }
  const int row = row_of(cell), column = column_of(cell);
  for (int shape = 1; shape <= kShapes; ++shape) {
    bool free = true;
    for (int j = 0; j < column; ++j)
      free = free && square[cell_at(row, j)] != shape;
    for (int i = 0; i < row; ++i)
      free = free && square[cell_at(i, column)] != shape;
    if (!free) continue;
    square[cell] = static_cast<std::int8_t>(shape);
    fill(square, cell + 1, out);
  }
  square[cell] = kBlank;
}

}  // namespace

std::string to_string(Strategy strategy) {
  switch (strategy) {
    case Strategy::kRow:
      return "row";
    case Strategy::kColumn:
      return "column";
    case Strategy::kRowAndColumn:
      return "row-and-column";
    case Strategy::kHiddenInRow:
      return "hidden-in-row";
    case Strategy::kHiddenInColumn:
      return "hidden-in-column";
  }
  PELAB_INTERNAL_ASSERT(false, "strategy {}", static_cast<int>(strategy));
}

std::optional<Deduction> deduce(const Cells& cells) {
  const auto query_it = std::find(cells.begin(), cells.end(), kQueryDigit);
  PELAB_INTERNAL_ASSERT(query_it != cells.end(), "a puzzle without a query cell");
  const int query = static_cast<int>(query_it - cells.begin());
  const int r = row_of(query), c = column_of(query);
  const unsigned row = shapes_in_row(cells, r), column = shapes_in_column(cells, c);

  if (popcount(row) == kShapes - 1) {
    return Deduction{only_shape(kAllShapes & ~row), Condition::kBinary, Strategy::kRow};
  }
  if (popcount(column) == kShapes - 1) {
    return Deduction{only_shape(kAllShapes & ~column), Condition::kBinary, Strategy::kColumn};
  }
  const unsigned candidates = kAllShapes & ~(row | column);
  if (popcount(candidates) == 1) {
    return Deduction{only_shape(candidates), Condition::kTernary, Strategy::kRowAndColumn};
  }
  if (candidates == 0) return std::nullopt;  // row and column already show all four shapes

  // Hidden singles: candidates that no other blank cell of the line can take.
  unsigned hidden_in_row = candidates, hidden_in_column = candidates;
  for (int j = 0; j < kSide; ++j) {
    if (j != c && cells[cell_at(r, j)] == kBlank) hidden_in_row &= shapes_in_column(cells, j);
  }
  for (int i = 0; i < kSide; ++i) {
    if (i != r && cells[cell_at(i, c)] == kBlank) hidden_in_column &= shapes_in_row(cells, i);
  }
  const unsigned hidden = hidden_in_row | hidden_in_column;
  if (popcount(hidden) != 1) return std::nullopt;  // none, or a contradiction
  return Deduction{only_shape(hidden), Condition::kQuaternary,
                   hidden_in_row != 0 ? Strategy::kHiddenInRow : Strategy::kHiddenInColumn};
}

const std::vector<Cells>& all_latin_squares() {
  static const std::vector<Cells> squares = [] {
    std::vector<Cells> out;
    Cells square{};
    fill(square, 0, out);
    return out;
  }();
  return squares;
}

unsigned possible_answers(const Cells& cells) {
  const auto query_it = std::find(cells.begin(), cells.end(), kQueryDigit);
  PELAB_INTERNAL_ASSERT(query_it != cells.end(), "a puzzle without a query cell");
  const int query = static_cast<int>(query_it - cells.begin());
  unsigned answers = 0;
  for (const Cells& square : all_latin_squares()) {
    bool agrees = true;
    for (int k = 0; k < kCells && agrees; ++k) {
      agrees = !is_shape(cells[k]) || cells[k] == square[k];
    }
    if (agrees) answers |= 1u << square[query];
  }
  return answers;
}

std::optional<int> unique_answer(const Cells& cells) {
  const unsigned answers = possible_answers(cells);
  if (popcount(answers) != 1) return std::nullopt;
  return only_shape(answers);
}

}  // namespace pelab::latin_square
