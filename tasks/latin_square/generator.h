#pragma once

#include <cstdint>
#include <vector>

#include "puzzle.h"

namespace pelab::latin_square {

// Jaccard distance between two puzzles: each puzzle is the set of its (cell index, digit) pairs
// over the non-blank cells, the query marker (digit 5) included, and the distance is
// 1 - |A n B| / |A u B|. This is what the LSTNN notebook computes with scipy's `jaccard` on the
// flattened 4x4x5 one-hot tensors; on the vendored files every generated puzzle is at distance
// >= 0.8125 from every human puzzle by it.
double jaccard_distance(const Puzzle& a, const Puzzle& b);

/// The smallest jaccard_distance() from `puzzle` to any of `references`; 1 when there are none.
double min_jaccard_distance(const Puzzle& puzzle, const std::vector<Puzzle>& references);

struct GeneratorOptions {
  std::int64_t per_condition = 3000;
  std::uint64_t seed = 0;
  /// Keep only puzzles at least this far from every reference puzzle.
  double min_jaccard_distance = 0.8;
  /// Shapes shown (query excluded): the range of the LSTNN generated puzzles.
  int min_shapes = 3;
  int max_shapes = 11;
  /// Give up (pelab::Error) after this many tries per requested puzzle.
  std::int64_t max_attempts_per_puzzle = 2000;
};

/// Generates options.per_condition distinct puzzles of each condition, binary first, then ternary,
/// then quaternary. Each is made so:
///   1. a Latin square drawn uniformly from all 576, and a query cell drawn uniformly from 16;
///   2. the other 15 cells, in random order, are blanked one by one; a blank is kept only if the
///      rule-based solver (solver.h) still finds the answer and the puzzle's condition is no
///      harder than the requested one (blanking never makes a puzzle easier);
///   3. of the puzzles passed on the way that have the requested condition and show
///      min_shapes..max_shapes shapes, one is drawn uniformly (so the number of distractor cells
///      varies); none: start again at 1;
///   4. it is kept if it is new and at least min_jaccard_distance from every reference.
/// Condition k draws from its own stream of options.seed (pelab::Random::from_seed_sequence, a
/// std::mt19937_64), so the first n puzzles of a condition do not depend on per_condition. Throws
/// pelab::Error when the attempts run out (a threshold or a count that the puzzle space cannot
/// satisfy).
std::vector<Puzzle> generate_puzzles(const GeneratorOptions& options,
                                     const std::vector<Puzzle>& references);

}  // namespace pelab::latin_square
