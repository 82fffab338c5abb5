#pragma once

// Portable random numbers for plugins: the data a task generates, the permutations a probe draws.
// The C++ standard fixes std::mt19937_64's and std::seed_seq's output but not that of its
// distributions or of std::shuffle (std::uniform_int_distribution, std::normal_distribution, ...
// differ between standard libraries), so every draw here is written out: the same seed gives the
// same values with every standard library. Only std::log and std::sqrt (normal(),
// exponential()) touch the bits beyond the engine's output. Independent of torch's generator,
// hence of the run's seed. Header-only, so a plugin depends on no symbol of libpelab_core for it.

#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "pelab/base/error.h"

namespace pelab {

/// SplitMix64's finaliser: spreads a seed's bits, so that nearby seeds (0, 1, 2, ...) and seeds
/// xored with a stream constant give unrelated engine states.
inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// A std::mt19937_64 with hand-written draws. The three ways to seed it are named (no plain
/// constructor), because each keeps the streams of the code that used it before this class:
/// changing one would change every dataset drawn from it.
class Random {
 public:
  /// std::seed_seq over all 128 bits of seed and stream: independent streams from one user seed.
  /// The choice for new code (the Latin Square generator and splits use it).
  static Random from_seed_sequence(std::uint64_t seed, std::uint64_t stream = 0) {
    std::seed_seq sequence{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
                           static_cast<std::uint32_t>(stream),
                           static_cast<std::uint32_t>(stream >> 32)};
    return Random(std::mt19937_64(sequence));
  }

  /// The engine seeded with splitmix64(seed ^ stream) (the network simulation and the brain
  /// task's synthetic cohort).
  static Random from_splitmix(std::uint64_t seed, std::uint64_t stream = 0) {
    return Random(std::mt19937_64(splitmix64(seed ^ stream)));
  }

  /// std::mt19937_64(seed), the engine's own seeding (the brain task's held-out subjects, the
  /// probes' permutations, the marker_position task).
  static Random from_engine_seed(std::uint64_t seed) { return Random(std::mt19937_64(seed)); }

  /// The engine's next output.
  std::uint64_t next() { return engine_(); }

  /// Uniform in [0, n), n > 0, without modulo bias: an engine output x below 2^64 mod n is drawn
  /// again, so that the values kept, [2^64 mod n, 2^64), are a whole number of runs of n
  /// residues; x % n of the first one kept. For any n far below 2^64 a redraw is astronomically
  /// rare (probability < n / 2^64), so this is engine() % n, as the modulo draws it replaced.
  std::uint64_t below(std::uint64_t n) {
    PELAB_INTERNAL_ASSERT(n > 0, "Random::below(0)");
    const std::uint64_t threshold = (0 - n) % n;  // 2^64 mod n, in 64-bit arithmetic
    std::uint64_t x = engine_();
    while (x < threshold)
      x = engine_();
    return x % n;
  }

  /// Fisher-Yates from the back, drawing with below(): each of the n! orders equally likely.
  template <typename T>
  void shuffle(std::vector<T>& values) {
    for (std::size_t i = values.size(); i > 1; --i) {
      const auto j = static_cast<std::size_t>(below(i));
      std::swap(values[i - 1], values[j]);
    }
  }

  /// Uniform in [0, 1) from the engine output's 53 high bits.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

  /// N(0, 1) by Marsaglia's polar method, which needs only log and sqrt (no sin or cos); the
  /// second value of each pair is kept for the next call.
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u = 0.0, v = 0.0, s = 0.0;
    do {
      u = 2.0 * uniform() - 1.0;
      v = 2.0 * uniform() - 1.0;
      s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    const double scale = std::sqrt(-2.0 * std::log(s) / s);
    spare_ = v * scale;
    has_spare_ = true;
    return u * scale;
  }

  /// Exponential with the given rate (> 0); 1 - uniform() is in (0, 1], so the log is finite.
  double exponential(double rate) { return -std::log(1.0 - uniform()) / rate; }

 private:
  explicit Random(std::mt19937_64 engine) : engine_(std::move(engine)) {}

  std::mt19937_64 engine_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace pelab
