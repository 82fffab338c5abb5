#include "subjects.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "test_support.h"

namespace pelab::brain {
namespace {

using testing::error_of;
using testing::ScratchDir;
using testing::write_text;

TEST(BrainSubjects, GlobMatchesStarAndQuestionMark) {
  EXPECT_TRUE(glob_match("sub-*_bold.nii.gz", "sub-01_bold.nii.gz"));
  EXPECT_TRUE(glob_match("sub-*_bold.nii.gz", "sub-_bold.nii.gz"));
  EXPECT_FALSE(glob_match("sub-*_bold.nii.gz", "sub-01_bold.nii"));
  EXPECT_FALSE(glob_match("sub-*_bold.nii.gz", "xsub-01_bold.nii.gz"));
  EXPECT_TRUE(glob_match("sub-0?.csv", "sub-07.csv"));
  EXPECT_FALSE(glob_match("sub-0?.csv", "sub-0.csv"));
  EXPECT_FALSE(glob_match("sub-0?.csv", "sub-017.csv"));
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("*a*b*", "xxaybzb"));
  EXPECT_FALSE(glob_match("*a*b", "xxaybzbc"));
  EXPECT_TRUE(glob_match("a**?", "ab"));
  EXPECT_FALSE(glob_match("", "a"));
  EXPECT_FALSE(glob_match("Sub-*", "sub-01"));  // case-sensitive
}

TEST(BrainSubjects, PatternsExpandToSortedFilesAndListsKeepTheirOrder) {
  ScratchDir dir;
  std::filesystem::create_directories(dir / "data/sub-99_bold.nii.gz");  // a folder: not a subject
  for (const char* name : {"sub-10_bold.nii.gz", "sub-02_bold.nii.gz", "sub-01_bold.nii.gz",
                           "sub-01_T1w.nii.gz", "notes.txt"})
    write_text(dir / "data/" + name, "x");

  EXPECT_EQ(
      expand_subjects({"data/sub-*_bold.nii.gz"}, dir.path()),
      (std::vector<std::string>{dir / "data/sub-01_bold.nii.gz", dir / "data/sub-02_bold.nii.gz",
                                dir / "data/sub-10_bold.nii.gz"}));
  // An explicit list, in its own order, with absolute and relative paths.
  EXPECT_EQ(
      expand_subjects({dir / "data/sub-10_bold.nii.gz", "data/sub-01_T1w.nii.gz"}, dir.path()),
      (std::vector<std::string>{dir / "data/sub-10_bold.nii.gz", dir / "data/sub-01_T1w.nii.gz"}));
}

TEST(BrainSubjects, ProblemsAreErrorsNamingTheEntry) {
  ScratchDir dir;
  write_text(dir / "sub-01.csv", "1\n");
  std::string message = error_of([&] { expand_subjects({"sub-02.csv"}, dir.path()); });
  EXPECT_NE(message.find("subject file " + (dir / "sub-02.csv") + " does not exist"),
            std::string::npos)
      << message;
  message = error_of([&] { expand_subjects({"*.nii.gz"}, dir.path()); });
  EXPECT_NE(message.find("subject pattern '*.nii.gz' matches no file in " + dir.path()),
            std::string::npos)
      << message;
  message = error_of([&] { expand_subjects({"missing/*.csv"}, dir.path()); });
  EXPECT_NE(message.find("folder " + (dir / "missing") + " does not exist"), std::string::npos)
      << message;
  message = error_of([&] { expand_subjects({"*/sub-01.csv"}, dir.path()); });
  EXPECT_NE(message.find("wildcards are allowed in the file name only"), std::string::npos)
      << message;
  message = error_of([&] { expand_subjects({"sub-*.csv", "sub-01.csv"}, dir.path()); });
  EXPECT_NE(message.find("sub-01.csv (from 'sub-01.csv') is listed twice"), std::string::npos)
      << message;
}

}  // namespace
}  // namespace pelab::brain
