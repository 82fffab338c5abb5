#include "split.h"

#include <array>
#include <cmath>

#include <pelab/sdk.h>

namespace pelab::latin_square {
namespace {

// Round-robin over the per-condition lists, until all are used up.
std::vector<std::int64_t> interleave(const std::array<std::vector<std::int64_t>, kConditions>& by) {
  std::vector<std::int64_t> out;
  for (std::size_t i = 0;; ++i) {
    bool any = false;
    for (const auto& list : by) {
      if (i < list.size()) {
        out.push_back(list[i]);
        any = true;
      }
    }
    if (!any) return out;
  }
}

}  // namespace

Split stratified_split(const std::vector<Puzzle>& puzzles, double train_fraction,
                       std::uint64_t seed) {
  PELAB_CHECK(train_fraction > 0.0 && train_fraction < 1.0,
              "train_fraction {} must be strictly between 0 and 1", train_fraction);
  std::array<std::vector<std::int64_t>, kConditions> by_condition;
  for (std::size_t i = 0; i < puzzles.size(); ++i) {
    by_condition[static_cast<int>(puzzles[i].condition)].push_back(static_cast<std::int64_t>(i));
  }
  Random random = Random::from_seed_sequence(seed);
  std::array<std::vector<std::int64_t>, kConditions> train, test;
  for (Condition condition : kAllConditions) {
    const int c = static_cast<int>(condition);
    std::vector<std::int64_t>& indices = by_condition[c];
    if (indices.empty()) continue;
    random.shuffle(indices);
    const auto n = static_cast<std::int64_t>(indices.size());
    const std::int64_t n_train = std::llround(static_cast<double>(n) * train_fraction);
    PELAB_CHECK(n_train > 0 && n_train < n,
                "train_fraction {} splits the {} {} puzzles into {} for train and {} for test; "
                "both must be non-empty: choose a fraction nearer 0.5",
                train_fraction, n, to_string(condition), n_train, n - n_train);
    train[c].assign(indices.begin(), indices.begin() + n_train);
    test[c].assign(indices.begin() + n_train, indices.end());
  }
  return Split{interleave(train), interleave(test)};
}

std::vector<std::int64_t> take_prefix(const std::vector<std::int64_t>& indices,
                                      std::int64_t limit) {
  if (limit <= 0 || limit >= static_cast<std::int64_t>(indices.size())) return indices;
  return {indices.begin(), indices.begin() + limit};
}

}  // namespace pelab::latin_square
