#pragma once

#include <cstdint>
#include <vector>

#include "puzzle.h"

namespace pelab::latin_square {

/// Indices into a puzzle list, for the training and the test split.
struct Split {
  std::vector<std::int64_t> train;
  std::vector<std::int64_t> test;
};

/// A train/test split stratified by condition, as in the paper (90/10 of each condition).
/// The puzzles of each condition are shuffled with pelab::Random::from_seed_sequence(seed) (a
/// std::mt19937_64); the first round(n * train_fraction) go to train, the rest to test. Both lists
/// interleave the conditions (binary, ternary, quaternary, binary, ...), so every prefix of them is
/// stratified too (see stratified_prefix). Throws pelab::Error if a condition would leave train or
/// test empty.
Split stratified_split(const std::vector<Puzzle>& puzzles, double train_fraction,
                       std::uint64_t seed);

/// The first `limit` of `indices` (all of them when limit is 0 or not smaller): for a list from
/// stratified_split, within one puzzle of equal counts per condition.
std::vector<std::int64_t> take_prefix(const std::vector<std::int64_t>& indices, std::int64_t limit);

}  // namespace pelab::latin_square
