#include "solver.h"

#include <map>
#include <optional>
#include <set>

#include <gtest/gtest.h>

#include "test_data.h"

namespace pelab::latin_square {
namespace {

using testing::human_puzzles;
using testing::paper_puzzles;

Cells cells(const std::string& digits) {
  return cells_from_digits(digits);
}

TEST(LatinSquareSolver, EnumeratesAll576LatinSquares) {
  const std::vector<Cells>& squares = all_latin_squares();
  ASSERT_EQ(squares.size(), 576u);
  const std::set<Cells> distinct(squares.begin(), squares.end());
  EXPECT_EQ(distinct.size(), 576u);
  for (const Cells& square : squares) {
    EXPECT_TRUE(is_latin_consistent(square));
    for (std::int8_t digit : square)
      EXPECT_TRUE(digit >= 1 && digit <= 4);
  }
}

struct Example {
  const char* digits;
  int answer;
  Condition condition;
  Strategy strategy;
};

TEST(LatinSquareSolver, AppliesEachRule) {
  const Example examples[] = {
      // The query's row shows 1, 2, 3.
      {"1235000000000000", 4, Condition::kBinary, Strategy::kRow},
      // The query's column shows 1, 2, 3.
      {"1000200030005000", 4, Condition::kBinary, Strategy::kColumn},
      // Row shows 1, 2; column shows 3.
      {"1205000300000000", 4, Condition::kTernary, Strategy::kRowAndColumn},
      // Row and column empty; shape 4 sits in the columns of the row's three other cells.
      {"5000040000400004", 4, Condition::kQuaternary, Strategy::kHiddenInRow},
      // Column shows 2; the column's other two blanks are in rows that show 4; the row's blank
      // at column 3 could still take 4, so only the column decides.
      {"5000200004000040", 4, Condition::kQuaternary, Strategy::kHiddenInColumn},
  };
  for (const Example& example : examples) {
    SCOPED_TRACE(example.digits);
    const std::optional<Deduction> deduction = deduce(cells(example.digits));
    ASSERT_TRUE(deduction.has_value());
    EXPECT_EQ(deduction->answer, example.answer);
    EXPECT_EQ(deduction->condition, example.condition);
    EXPECT_EQ(deduction->strategy, example.strategy);
    EXPECT_EQ(unique_answer(cells(example.digits)), example.answer);
  }
}

TEST(LatinSquareSolver, LeavesUndeterminedPuzzlesUnsolved) {
  // Nothing shown: any shape fits.
  EXPECT_FALSE(deduce(cells("5000000000000000")).has_value());
  EXPECT_FALSE(unique_answer(cells("5000000000000000")).has_value());
  EXPECT_EQ(possible_answers(cells("5000000000000000")), 0b11110u);
  // Row shows 1, column shows 2: 3 or 4.
  EXPECT_FALSE(deduce(cells("5100200000000000")).has_value());
  EXPECT_EQ(possible_answers(cells("5100200000000000")), 0b11000u);
}

// Measures the rules against the `solutions` and `condition` columns of a data file.
void expect_agreement(const std::vector<Puzzle>& puzzles, const std::string& what) {
  int answers = 0, conditions = 0, unique = 0;
  std::map<std::pair<Condition, Condition>, int> confusion;
  for (const Puzzle& puzzle : puzzles) {
    const std::optional<Deduction> deduction = deduce(puzzle.cells);
    if (deduction && deduction->answer == puzzle.solution) ++answers;
    if (deduction && deduction->condition == puzzle.condition) ++conditions;
    if (unique_answer(puzzle.cells) == puzzle.solution) ++unique;
    if (deduction) ++confusion[{puzzle.condition, deduction->condition}];
  }
  const int n = static_cast<int>(puzzles.size());
  EXPECT_EQ(answers, n) << what << ": the solver's answer equals `solutions`";
  EXPECT_EQ(conditions, n) << what << ": the solver's condition equals `condition`";
  EXPECT_EQ(unique, n) << what << ": every completion agrees with `solutions`";
  for (const auto& [pair, count] : confusion) {
    if (pair.first != pair.second) {
      ADD_FAILURE() << what << ": " << count << " " << to_string(pair.first)
                    << " puzzles classified " << to_string(pair.second);
    }
  }
}

TEST(LatinSquareSolver, AgreesWithTheHumanPuzzles) {
  expect_agreement(human_puzzles(), "human puzzles");
}

TEST(LatinSquareSolver, AgreesWithThePaperGeneratedPuzzles) {
  expect_agreement(paper_puzzles(), "generated puzzles");
}

}  // namespace
}  // namespace pelab::latin_square
