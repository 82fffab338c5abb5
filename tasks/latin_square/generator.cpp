#include "generator.h"

#include <algorithm>
#include <unordered_set>

#include <fmt/format.h>

#include <pelab/sdk.h>

#include "solver.h"

namespace pelab::latin_square {
namespace {

// One attempt at a puzzle of `condition`; nullopt when the removal walk never produced one.
std::optional<Puzzle> try_generate(Condition condition, const GeneratorOptions& options,
                                   Random& random) {
  const std::vector<Cells>& squares = all_latin_squares();
  const Cells& square = squares[random.below(squares.size())];
  const int query = static_cast<int>(random.below(kCells));
  Cells cells = square;
  cells[query] = kQueryDigit;

  std::vector<int> order;
  for (int k = 0; k < kCells; ++k) {
    if (k != query) order.push_back(k);
  }
  random.shuffle(order);

  const auto shown = [](const Cells& grid) {
    return static_cast<int>(std::count_if(grid.begin(), grid.end(), [](std::int8_t digit) {
      return digit >= 1 && digit <= kShapes;
    }));
  };
  std::vector<Cells> candidates;
  const auto consider = [&](const Cells& grid, Condition found) {
    const int count = shown(grid);
    if (found == condition && count >= options.min_shapes && count <= options.max_shapes) {
      candidates.push_back(grid);
    }
  };
  consider(cells, Condition::kBinary);  // the full grid: the query's row shows three shapes
  for (int cell : order) {
    const std::int8_t kept = cells[cell];
    cells[cell] = kBlank;
    const std::optional<Deduction> deduction = deduce(cells);
    if (!deduction || deduction->condition > condition) {
      cells[cell] = kept;
      continue;
    }
    PELAB_INTERNAL_ASSERT(deduction->answer == square[query],
                          "the solver answers {} for {} but the square has {}", deduction->answer,
                          Puzzle{cells, query, 0, condition}.digits(), square[query]);
    consider(cells, deduction->condition);
  }
  if (candidates.empty()) return std::nullopt;
  return Puzzle{candidates[random.below(candidates.size())], query, square[query], condition};
}

}  // namespace

double jaccard_distance(const Puzzle& a, const Puzzle& b) {
  int both = 0, either = 0;
  for (int k = 0; k < kCells; ++k) {
    const bool in_a = a.cells[k] != kBlank, in_b = b.cells[k] != kBlank;
    if (in_a && in_b && a.cells[k] == b.cells[k]) {
      ++both;
      ++either;
    } else {
      // Different digits in one cell are two different pairs.
      either += static_cast<int>(in_a) + static_cast<int>(in_b);
    }
  }
  return either == 0 ? 0.0 : 1.0 - static_cast<double>(both) / either;
}

double min_jaccard_distance(const Puzzle& puzzle, const std::vector<Puzzle>& references) {
  double closest = 1.0;
  for (const Puzzle& reference : references) {
    closest = std::min(closest, jaccard_distance(puzzle, reference));
  }
  return closest;
}

std::vector<Puzzle> generate_puzzles(const GeneratorOptions& options,
                                     const std::vector<Puzzle>& references) {
  PELAB_CHECK(options.per_condition >= 0, "cannot generate {} puzzles per condition",
              options.per_condition);
  PELAB_CHECK(options.min_shapes >= 0 && options.min_shapes <= options.max_shapes &&
                  options.max_shapes < kCells,
              "the range of shown shapes {}..{} is empty or exceeds the 15 non-query cells",
              options.min_shapes, options.max_shapes);
  std::vector<Puzzle> puzzles;
  puzzles.reserve(static_cast<std::size_t>(options.per_condition) * kConditions);
  for (Condition condition : kAllConditions) {
    Random random = Random::from_seed_sequence(options.seed, static_cast<std::uint64_t>(condition));
    std::unordered_set<std::string> seen;
    const std::int64_t budget =
        options.max_attempts_per_puzzle * std::max<std::int64_t>(options.per_condition, 1);
    std::int64_t attempts = 0, made = 0;
    while (made < options.per_condition) {
      PELAB_CHECK(attempts < budget,
                  "the generator made only {} of {} {} puzzles in {} attempts at "
                  "min_jaccard_distance {}; lower min_jaccard_distance or the number of puzzles",
                  made, options.per_condition, to_string(condition), attempts,
                  options.min_jaccard_distance);
      ++attempts;
      std::optional<Puzzle> puzzle = try_generate(condition, options, random);
      if (!puzzle || !seen.insert(puzzle->digits()).second) continue;
      if (min_jaccard_distance(*puzzle, references) < options.min_jaccard_distance) continue;
      puzzles.push_back(*puzzle);
      ++made;
    }
  }
  return puzzles;
}

}  // namespace pelab::latin_square
