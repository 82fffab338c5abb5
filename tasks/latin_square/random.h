#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace pelab::latin_square {

/// A seeded std::mt19937_64 with its own bounded draws and shuffle. The standard fixes the
/// engine's and std::seed_seq's output but not std::uniform_int_distribution's or std::shuffle's,
/// so these are written out: the same seed gives the same puzzles and splits with any standard
/// library. Independent of torch's generator, hence of the run's seed.
class Random {
 public:
  /// `stream` separates independent sequences drawn from one user seed.
  explicit Random(std::uint64_t seed, std::uint64_t stream = 0);

  std::uint64_t next() { return engine_(); }
  /// Uniform in [0, n), n > 0, by rejection (no modulo bias).
  std::uint64_t below(std::uint64_t n);

  /// Fisher-Yates, drawing with below().
  template <typename T>
  void shuffle(std::vector<T>& values) {
    for (std::size_t i = values.size(); i > 1; --i) {
      const auto j = static_cast<std::size_t>(below(i));
      std::swap(values[i - 1], values[j]);
    }
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace pelab::latin_square
