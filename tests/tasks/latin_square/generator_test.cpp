#include "generator.h"

#include <algorithm>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "pelab/base/error.h"
#include "solver.h"
#include "test_data.h"

namespace pelab::latin_square {
namespace {

using testing::human_puzzles;
using testing::paper_puzzles;

constexpr std::int64_t kPerCondition = 100;

Puzzle puzzle(const std::string& digits) {
  return Puzzle::from_digits(digits, 1, Condition::kBinary);
}

std::vector<std::string> digits_of(const std::vector<Puzzle>& puzzles) {
  std::vector<std::string> out;
  for (const Puzzle& p : puzzles)
    out.push_back(p.digits());
  return out;
}

const std::vector<Puzzle>& generated() {
  static const std::vector<Puzzle> puzzles = [] {
    GeneratorOptions options;
    options.per_condition = kPerCondition;
    options.seed = 7;
    return generate_puzzles(options, human_puzzles());
  }();
  return puzzles;
}

TEST(LatinSquareJaccard, CountsCellDigitPairs) {
  const Puzzle a = puzzle("1500000000000000");
  EXPECT_DOUBLE_EQ(jaccard_distance(a, a), 0.0);
  // {(0,1),(1,5)} vs {(0,1),(2,5)}: 1 shared pair of 3.
  EXPECT_DOUBLE_EQ(jaccard_distance(a, puzzle("1050000000000000")), 2.0 / 3.0);
  // A cell with different digits is two different pairs: {(0,1),(1,5)} vs {(0,2),(1,5)}.
  EXPECT_DOUBLE_EQ(jaccard_distance(a, puzzle("2500000000000000")), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(jaccard_distance(a, puzzle("0002000000000500")), 1.0);
  EXPECT_DOUBLE_EQ(min_jaccard_distance(a, {}), 1.0);
}

TEST(LatinSquareJaccard, PaperPuzzlesAreFarFromTheHumanOnes) {
  double closest = 1.0;
  for (const Puzzle& p : paper_puzzles()) {
    closest = std::min(closest, min_jaccard_distance(p, human_puzzles()));
  }
  // LSTNN's threshold was 0.8; the closest generated puzzle shares 3 of 16 pairs.
  EXPECT_GE(closest, 0.8);
  EXPECT_DOUBLE_EQ(closest, 0.8125);
}

TEST(LatinSquareGenerator, MakesBalancedValidPuzzles) {
  const std::vector<Puzzle>& puzzles = generated();
  ASSERT_EQ(puzzles.size(), static_cast<std::size_t>(3 * kPerCondition));
  for (std::size_t i = 0; i < puzzles.size(); ++i) {
    const Puzzle& p = puzzles[i];
    SCOPED_TRACE(p.digits());
    // Blocks of binary, ternary, quaternary.
    EXPECT_EQ(p.condition, kAllConditions[i / kPerCondition]);
    EXPECT_EQ(check_digits(p.digits()), "");
    EXPECT_EQ(p.cells[p.query], kQueryDigit);
    EXPECT_GE(p.shape_count(), 3);
    EXPECT_LE(p.shape_count(), 11);
    // Uniquely deducible: every Latin square that completes it has the solution at the query.
    EXPECT_EQ(unique_answer(p.cells), p.solution);
    // And by the rules of the requested condition.
    const std::optional<Deduction> deduction = deduce(p.cells);
    ASSERT_TRUE(deduction.has_value());
    EXPECT_EQ(deduction->answer, p.solution);
    EXPECT_EQ(deduction->condition, p.condition);
    EXPECT_GE(min_jaccard_distance(p, human_puzzles()), 0.8);
  }
  const std::vector<std::string> digits = digits_of(puzzles);
  EXPECT_EQ(std::set<std::string>(digits.begin(), digits.end()).size(), digits.size());
}

TEST(LatinSquareGenerator, IsDeterministicForASeed) {
  GeneratorOptions options;
  options.per_condition = kPerCondition;
  options.seed = 7;
  EXPECT_EQ(digits_of(generate_puzzles(options, human_puzzles())), digits_of(generated()));

  // Each condition has its own stream: fewer puzzles give a prefix of each block.
  options.per_condition = 10;
  const std::vector<Puzzle> few = generate_puzzles(options, human_puzzles());
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 10; ++i) {
      EXPECT_EQ(few[c * 10 + i].digits(), generated()[c * kPerCondition + i].digits());
    }
  }

  options.per_condition = kPerCondition;
  options.seed = 8;
  const std::vector<std::string> other = digits_of(generate_puzzles(options, human_puzzles()));
  const std::vector<std::string> mine = digits_of(generated());
  std::set<std::string> shared(mine.begin(), mine.end());
  std::size_t same = 0;
  for (const std::string& d : other)
    same += shared.count(d);
  EXPECT_LT(same, other.size() / 10) << "seeds 7 and 8 share " << same << " puzzles";
}

TEST(LatinSquareGenerator, PinsTheFirstPuzzles) {
  // Guards the reproducibility of `source = "generated"` pools across versions and platforms.
  GeneratorOptions options;
  options.per_condition = 1;
  options.seed = 0;
  const std::vector<Puzzle> puzzles = generate_puzzles(options, human_puzzles());
  ASSERT_EQ(puzzles.size(), 3u);
  EXPECT_EQ(puzzles[0].digits(), "4000300050001000");
  EXPECT_EQ(puzzles[1].digits(), "1000500200003000");
  EXPECT_EQ(puzzles[2].digits(), "4052000003000000");
}

TEST(LatinSquareGenerator, RespectsTheJaccardThreshold) {
  GeneratorOptions options;
  options.per_condition = 20;
  // Only about 1 in 80 binary puzzles is this far from every human one.
  options.min_jaccard_distance = 0.82;
  for (const Puzzle& p : generate_puzzles(options, human_puzzles())) {
    EXPECT_GE(min_jaccard_distance(p, human_puzzles()), 0.82) << p.digits();
  }
  // Without references any distance is allowed (min_jaccard_distance is 1).
  options.min_jaccard_distance = 1.0;
  EXPECT_EQ(generate_puzzles(options, {}).size(), 60u);
}

TEST(LatinSquareGenerator, GivesUpOnAnImpossibleThreshold) {
  // The human query cells cover all 16 positions, so no puzzle is at distance 1 from all of them.
  GeneratorOptions options;
  options.per_condition = 5;
  options.min_jaccard_distance = 1.0;
  options.max_attempts_per_puzzle = 20;
  try {
    generate_puzzles(options, human_puzzles());
    FAIL() << "expected pelab::Error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("made only 0 of 5 binary puzzles in 100 attempts"), std::string::npos)
        << message;
    EXPECT_NE(message.find("lower min_jaccard_distance"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace pelab::latin_square
