#include "puzzle_csv.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "pelab/base/error.h"
#include "test_data.h"

namespace pelab::latin_square {
namespace {

namespace fs = std::filesystem;
using testing::generated_file;
using testing::human_puzzles;

constexpr const char* kGoodRow = "0,1,Binary,0040405210200030,1";

std::map<Condition, int> count_conditions(const std::vector<Puzzle>& puzzles) {
  std::map<Condition, int> counts;
  for (const Puzzle& puzzle : puzzles)
    ++counts[puzzle.condition];
  return counts;
}

TEST(LatinSquareCsv, ReadsTheHumanPuzzles) {
  const std::vector<Puzzle>& puzzles = human_puzzles();
  ASSERT_EQ(puzzles.size(), 108u);
  const std::map<Condition, int> counts = count_conditions(puzzles);
  EXPECT_EQ(counts.at(Condition::kBinary), 36);
  EXPECT_EQ(counts.at(Condition::kTernary), 36);
  EXPECT_EQ(counts.at(Condition::kQuaternary), 36);
  // The first row: 0,1,Binary,0040405210200030,1
  EXPECT_EQ(puzzles[0].digits(), "0040405210200030");
  EXPECT_EQ(puzzles[0].query, 6);
  EXPECT_EQ(puzzles[0].solution, 1);
  EXPECT_EQ(puzzles[0].condition, Condition::kBinary);
  EXPECT_EQ(puzzles[0].shape_count(), 6);
}

TEST(LatinSquareCsv, ReadsTheGeneratedPuzzles) {
  for (Condition condition : kAllConditions) {
    const std::vector<Puzzle> puzzles = read_puzzle_csv(generated_file(condition));
    ASSERT_EQ(puzzles.size(), 3000u) << to_string(condition);
    EXPECT_EQ(count_conditions(puzzles).at(condition), 3000) << to_string(condition);
  }
}

class LatinSquareBadCsv : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() /
              ("pelab_latin_square_test_" + std::to_string(::getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(folder_);
  }
  void TearDown() override { fs::remove_all(folder_); }

  // Writes the header, `good` valid rows, then `bad`: the bad row is on line good + 2.
  std::string write(const std::string& bad, int good = 2, const std::string& header = kCsvHeader) {
    const std::string path = (folder_ / "bad.csv").string();
    std::ofstream out(path);
    out << header << "\n";
    for (int i = 0; i < good; ++i)
      out << kGoodRow << "\n";
    out << bad << "\n";
    return path;
  }

  // The message of the pelab::Error that reading `path` throws, or "" when none is thrown.
  static std::string error_of(const std::string& path) {
    try {
      read_puzzle_csv(path);
    } catch (const Error& error) {
      return error.what();
    }
    return "";
  }

  fs::path folder_;
};

// `message` has `part`, with a readable failure otherwise.
::testing::AssertionResult Contains(const std::string& message, const std::string& part) {
  if (message.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << message << "' does not contain '" << part << "'";
}

TEST_F(LatinSquareBadCsv, WrongNumberOfFields) {
  const std::string path = write("3,1,Binary,0040405210200030");
  const std::string message = error_of(path);
  EXPECT_TRUE(Contains(message, path + ":4: the row has 4 fields, expected 5"));
  EXPECT_TRUE(Contains(message, "ID,LST_num,condition,puzzles,solutions"));
}

TEST_F(LatinSquareBadCsv, PuzzleTooShort) {
  const std::string path = write("3,1,Binary,004040521020003,1", 1);
  EXPECT_TRUE(Contains(error_of(path), path + ":3: puzzle has 15 digits, expected 16 "
                                              "(row-major 4x4, 0 blank, 1-4 shapes, 5 query)"));
}

TEST_F(LatinSquareBadCsv, PuzzleTooLong) {
  const std::string path = write("3,1,Binary,00404052102000300,1", 0);
  EXPECT_TRUE(Contains(error_of(path), path + ":2: puzzle has 17 digits, expected 16"));
}

TEST_F(LatinSquareBadCsv, DigitOutOfRange) {
  const std::string path = write("3,1,Binary,0040405210270030,1");
  EXPECT_TRUE(Contains(error_of(path), path + ":4: puzzle '0040405210270030' has '7' at position "
                                              "12, expected a digit 0-5"));
}

TEST_F(LatinSquareBadCsv, NotADigit) {
  const std::string path = write("3,1,Binary,00404052102x0030,1");
  EXPECT_TRUE(Contains(error_of(path), path + ":4: puzzle '00404052102x0030' has 'x'"));
}

TEST_F(LatinSquareBadCsv, NoQueryCell) {
  const std::string path = write("3,1,Binary,0040401210200030,1");
  EXPECT_TRUE(Contains(error_of(path), path + ":4: puzzle '0040401210200030' has no query cell"));
}

TEST_F(LatinSquareBadCsv, TwoQueryCells) {
  const std::string path = write("3,1,Binary,0040405210200530,1");
  EXPECT_TRUE(Contains(error_of(path),
                       path + ":4: puzzle '0040405210200530' has 2 query cells (digit 5, at "
                              "positions 7, 14), expected exactly one"));
}

TEST_F(LatinSquareBadCsv, RepeatedShape) {
  const std::string path = write("3,1,Binary,4040405210200030,1");
  EXPECT_TRUE(Contains(error_of(path), path + ":4: puzzle '4040405210200030' repeats shape 4 in "
                                              "row 1"));
  const std::string column = write("3,1,Binary,0040405210200040,1");
  EXPECT_TRUE(Contains(error_of(column), "repeats shape 4 in column 3"));
}

TEST_F(LatinSquareBadCsv, SolutionOutOfRange) {
  for (const std::string solution : {"0", "5", "x", "", "12"}) {
    const std::string path = write("3,1,Binary,0040405210200030," + solution);
    EXPECT_TRUE(
        Contains(error_of(path), path + ":4: solution '" + solution + "' is not a shape 1-4"));
  }
}

// Valid in form, wrong in meaning: a label that the puzzle's cells contradict, or a puzzle that
// does not determine its answer, was read and trained on.
TEST_F(LatinSquareBadCsv, ASolutionTheCellsContradictOrDoNotDetermine) {
  const std::string wrong = write("3,1,Binary,0040405210200030,2");
  EXPECT_TRUE(Contains(error_of(wrong), wrong + ":4: the puzzle 0040405210200030 is labelled with "
                                                "solution 2, but its shown cells allow only "
                                                "shape 1 at the query cell"));
  const std::string open = write("3,1,Binary,0000050000000000,1");
  EXPECT_TRUE(Contains(error_of(open), "allow shapes 1 and 2 and 3 and 4 at the query cell"));
}

// A header and no rows: the split it feeds (the human puzzles) once vanished from the report.
TEST_F(LatinSquareBadCsv, AHeaderWithoutRowsIsNoPuzzleFile) {
  const std::string path = write("", 0);
  EXPECT_TRUE(Contains(error_of(path), path + ": the file has a header but no puzzles"));
}

TEST_F(LatinSquareBadCsv, UnknownCondition) {
  const std::string path = write("3,1,Quinary,0040405210200030,1");
  EXPECT_TRUE(Contains(error_of(path), path + ":4: unknown condition 'Quinary', expected Binary, "
                                              "Ternary or Quaternary"));
}

TEST_F(LatinSquareBadCsv, HeaderWithoutPuzzles) {
  const std::string path = write(kGoodRow, 0, "ID,LST_num,condition,puzzle,solutions");
  EXPECT_TRUE(Contains(error_of(path), path + ":1: the header has no 'puzzles' column"));
}

TEST_F(LatinSquareBadCsv, EmptyFile) {
  const std::string path = (folder_ / "empty.csv").string();
  std::ofstream(path).close();
  EXPECT_TRUE(Contains(error_of(path), path + ": the file is empty, expected the header line"));
}

TEST_F(LatinSquareBadCsv, MissingFile) {
  const std::string path = (folder_ / "missing.csv").string();
  const std::string message = error_of(path);
  EXPECT_TRUE(Contains(message, "cannot open the puzzle file '" + path + "'"));
  EXPECT_TRUE(Contains(message, "No such file or directory"));
  EXPECT_TRUE(Contains(error_of(folder_.string()), "is a folder, expected a puzzle CSV file"));
}

TEST_F(LatinSquareBadCsv, AcceptsBlankLinesAndCrLf) {
  const std::string path = write("\r\n3,1,ternary,0021020014020045,3\r\n");
  const std::vector<Puzzle> puzzles = read_puzzle_csv(path);
  ASSERT_EQ(puzzles.size(), 3u);
  EXPECT_EQ(puzzles[2].condition, Condition::kTernary);
  EXPECT_EQ(puzzles[2].solution, 3);
}

}  // namespace
}  // namespace pelab::latin_square
