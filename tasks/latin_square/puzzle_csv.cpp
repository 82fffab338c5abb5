#include "puzzle_csv.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include <pelab/sdk.h>

#include "solver.h"

namespace pelab::latin_square {
namespace {

std::string trim(const std::string& text) {
  const char* space = " \t\r\n";
  const auto first = text.find_first_not_of(space);
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(space) - first + 1);
}

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  while (true) {
    const auto comma = line.find(',', start);
    fields.push_back(trim(line.substr(start, comma - start)));
    if (comma == std::string::npos) return fields;
    start = comma + 1;
  }
}

}  // namespace

std::vector<Puzzle> parse_puzzle_csv(std::istream& in, const std::string& name) {
  std::string line;
  int line_number = 0;
  // The header is the first non-blank line.
  std::vector<std::string> header;
  while (header.empty() && std::getline(in, line)) {
    ++line_number;
    if (!trim(line).empty()) header = split_fields(line);
  }
  PELAB_CHECK(!header.empty(), "{}: the file is empty, expected the header line {}", name,
              kCsvHeader);
  const auto column = [&](const char* wanted) {
    for (std::size_t i = 0; i < header.size(); ++i) {
      if (header[i] == wanted) return i;
    }
    throw Error(fmt::format("{}:{}: the header has no '{}' column, expected {}", name, line_number,
                            wanted, kCsvHeader));
  };
  const std::size_t condition_column = column("condition");
  const std::size_t puzzle_column = column("puzzles");
  const std::size_t solution_column = column("solutions");

  std::vector<Puzzle> puzzles;
  while (std::getline(in, line)) {
    ++line_number;
    if (trim(line).empty()) continue;
    const std::vector<std::string> fields = split_fields(line);
    PELAB_CHECK(fields.size() == header.size(), "{}:{}: the row has {} fields, expected {} ({})",
                name, line_number, fields.size(), header.size(), fmt::join(header, ","));

    const std::string& digits = fields[puzzle_column];
    const std::string problem = check_digits(digits);
    PELAB_CHECK(problem.empty(), "{}:{}: {}", name, line_number, problem);

    const std::string& solution = fields[solution_column];
    PELAB_CHECK(solution.size() == 1 && solution[0] >= '1' && solution[0] <= '0' + kShapes,
                "{}:{}: solution '{}' is not a shape 1-4", name, line_number, solution);

    const std::optional<Condition> condition = parse_condition(fields[condition_column]);
    PELAB_CHECK(condition.has_value(),
                "{}:{}: unknown condition '{}', expected Binary, Ternary or Quaternary", name,
                line_number, fields[condition_column]);

    Puzzle puzzle = Puzzle::from_digits(digits, solution[0] - '0', *condition);
    // Valid in form is not enough: a puzzle must have the answer it is labelled with, or the
    // model is trained and scored against a wrong label.
    const unsigned possible = possible_answers(puzzle.cells);
    PELAB_CHECK(possible != 0,
                "{}:{}: the puzzle {} fits no 4x4 Latin square (a shape twice in a "
                "row or a column?)",
                name, line_number, digits);
    std::vector<int> shapes;
    for (int v = 1; v <= kShapes; ++v) {
      if (possible & (1u << v)) shapes.push_back(v);
    }
    PELAB_CHECK(shapes.size() == 1 && shapes.front() == puzzle.solution,
                "{}:{}: the puzzle {} is labelled with solution {}, but its shown cells allow "
                "{} {} at the query cell; fix the row's solution or its cells",
                name, line_number, digits, puzzle.solution,
                shapes.size() == 1 ? "only shape" : "shapes", fmt::join(shapes, " and "));
    puzzles.push_back(puzzle);
  }
  PELAB_CHECK(!puzzles.empty(),
              "{}: the file has a header but no puzzles; every puzzle file "
              "the task reads feeds a split, which would otherwise be empty",
              name);
  return puzzles;
}

std::vector<Puzzle> read_puzzle_csv(const std::string& path) {
  std::error_code ignored;
  PELAB_CHECK(!std::filesystem::is_directory(path, ignored),
              "'{}' is a folder, expected a puzzle CSV file in it", path);
  std::ifstream in(path);
  PELAB_CHECK(in.is_open(),
              "cannot open the puzzle file '{}' ({}); check that it exists and is readable", path,
              std::strerror(errno));
  return parse_puzzle_csv(in, path);
}

}  // namespace pelab::latin_square
