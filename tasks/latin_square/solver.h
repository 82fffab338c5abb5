#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "puzzle.h"

namespace pelab::latin_square {

// The rule-based solver: the deductions a person makes in the Latin Square Task, from the
// simplest up, and the condition named after the first one that finds the answer.
//
// Notation: the query cell q sits at row r and column c. R is the set of shapes shown in row r,
// C the set shown in column c (the query cell shows none). The candidates of q are
// K = {1, 2, 3, 4} \ (R u C).
//
//   binary      |R| = 3 or |C| = 3: the query's row alone, or its column alone, shows three
//               distinct shapes; the answer is the missing one. (Row checked first; in a
//               consistent puzzle both give the same answer.)
//   ternary     not binary, and |R u C| = 3: row and column together show three distinct shapes;
//               the answer is the missing one.
//   quaternary  not ternary (|K| >= 2), and exactly one candidate v in K is a "hidden single" of
//               the query's row or column: every other blank cell (r, j), j != c, of the row has v
//               in its own column j (or every other blank cell (i, c) of the column has v in its
//               own row i), so v can go nowhere else in that line and must go in q. This needs a
//               third line (the blank cell's column or row) besides the query's row and column.
//               The answer is v.
//
// Anything else (e.g. a puzzle whose answer follows only after filling other cells first, or not
// at all) is left unsolved: deduce() returns nullopt. On the 108 human puzzles and the 9000
// generated puzzles of the LSTNN repository these definitions agree with the `condition` column
// and the answer with the `solutions` column for every puzzle (see
// docs/tasks/latin_square.md); they are the rules of LSTNN's verify_LST.py, stated for every
// number of blank cells.

/// Which rule found the answer.
enum class Strategy : std::int8_t {
  kRow,             // binary: the query's row shows three shapes
  kColumn,          // binary: the query's column shows three shapes
  kRowAndColumn,    // ternary
  kHiddenInRow,     // quaternary: hidden single of the query's row
  kHiddenInColumn,  // quaternary: hidden single of the query's column
};

std::string to_string(Strategy strategy);

struct Deduction {
  int answer = 0;  // 1-4
  Condition condition = Condition::kBinary;
  Strategy strategy = Strategy::kRow;
};

/// Applies the rules above to `cells` (exactly one query cell). nullopt when no rule determines
/// the answer, or when the rules contradict each other (an inconsistent puzzle).
std::optional<Deduction> deduce(const Cells& cells);

/// Bit v (1-4) set when some complete Latin square that agrees with every shown cell has shape v
/// at the query cell: the exhaustive answer, to check the rules against. 0 when there is none.
unsigned possible_answers(const Cells& cells);

/// The answer when every completion agrees on the query cell, else nullopt.
std::optional<int> unique_answer(const Cells& cells);

/// All 576 4x4 Latin squares over shapes 1-4, in lexicographic order of their digits.
const std::vector<Cells>& all_latin_squares();

}  // namespace pelab::latin_square
