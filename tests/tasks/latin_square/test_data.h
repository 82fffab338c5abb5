#pragma once

#include <string>
#include <vector>

#include "puzzle.h"
#include "puzzle_csv.h"

namespace pelab::latin_square::testing {

/// The vendored puzzle files in the source tree.
inline std::string data_file(const std::string& name) {
  return std::string(PELAB_SOURCE_DIR) + "/tasks/latin_square/data/" + name;
}

inline std::string generated_file(Condition condition) {
  return data_file("generated_puzzle_data_" + to_string(condition) + "_dist80.csv");
}

inline const std::vector<Puzzle>& human_puzzles() {
  static const std::vector<Puzzle> puzzles = read_puzzle_csv(data_file("puzzle_data_original.csv"));
  return puzzles;
}

/// The 9000 generated puzzles of the paper, binary then ternary then quaternary.
inline const std::vector<Puzzle>& paper_puzzles() {
  static const std::vector<Puzzle> puzzles = [] {
    std::vector<Puzzle> all;
    for (Condition condition : kAllConditions) {
      const std::vector<Puzzle> part = read_puzzle_csv(generated_file(condition));
      all.insert(all.end(), part.begin(), part.end());
    }
    return all;
  }();
  return puzzles;
}

}  // namespace pelab::latin_square::testing
