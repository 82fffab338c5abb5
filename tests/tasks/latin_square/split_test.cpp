#include "split.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <set>

#include <gtest/gtest.h>

#include "pelab/base/error.h"
#include "test_data.h"

namespace pelab::latin_square {
namespace {

using testing::paper_puzzles;

std::array<int, kConditions> per_condition(const std::vector<Puzzle>& puzzles,
                                           const std::vector<std::int64_t>& indices) {
  std::array<int, kConditions> counts{};
  for (std::int64_t i : indices)
    ++counts[static_cast<int>(puzzles[i].condition)];
  return counts;
}

TEST(LatinSquareSplit, IsStratifiedLikeThePaper) {
  const std::vector<Puzzle>& puzzles = paper_puzzles();
  const Split split = stratified_split(puzzles, 0.9, 0);
  ASSERT_EQ(split.train.size(), 8100u);
  ASSERT_EQ(split.test.size(), 900u);
  EXPECT_EQ(per_condition(puzzles, split.train), (std::array<int, 3>{2700, 2700, 2700}));
  EXPECT_EQ(per_condition(puzzles, split.test), (std::array<int, 3>{300, 300, 300}));

  // A partition of all puzzles.
  std::vector<std::int64_t> all = split.train;
  all.insert(all.end(), split.test.begin(), split.test.end());
  std::sort(all.begin(), all.end());
  std::vector<std::int64_t> expected(puzzles.size());
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(all, expected);
}

TEST(LatinSquareSplit, IsDeterministicForASeed) {
  const std::vector<Puzzle>& puzzles = paper_puzzles();
  const Split a = stratified_split(puzzles, 0.9, 3);
  const Split b = stratified_split(puzzles, 0.9, 3);
  EXPECT_EQ(a.train, b.train);
  EXPECT_EQ(a.test, b.test);
  const Split other = stratified_split(puzzles, 0.9, 4);
  EXPECT_NE(a.test, other.test);
  EXPECT_NE(std::set<std::int64_t>(a.test.begin(), a.test.end()),
            std::set<std::int64_t>(other.test.begin(), other.test.end()));
}

TEST(LatinSquareSplit, PrefixesAreStratified) {
  const std::vector<Puzzle>& puzzles = paper_puzzles();
  const Split split = stratified_split(puzzles, 0.9, 0);
  EXPECT_EQ(per_condition(puzzles, take_prefix(split.train, 30)), (std::array<int, 3>{10, 10, 10}));
  EXPECT_EQ(per_condition(puzzles, take_prefix(split.train, 31)), (std::array<int, 3>{11, 10, 10}));
  EXPECT_EQ(take_prefix(split.train, 0), split.train);
  EXPECT_EQ(take_prefix(split.train, 100000), split.train);
}

TEST(LatinSquareSplit, RefusesAnEmptySide) {
  const std::vector<Puzzle> few(paper_puzzles().begin(), paper_puzzles().begin() + 5);
  EXPECT_THROW(stratified_split(few, 0.9, 0), Error);  // 5 binary puzzles: 0.9 leaves no test
  EXPECT_THROW(stratified_split(paper_puzzles(), 1.0, 0), Error);
  EXPECT_THROW(stratified_split(paper_puzzles(), 0.0, 0), Error);
}

}  // namespace
}  // namespace pelab::latin_square
