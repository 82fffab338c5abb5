#pragma once

// Deterministic random numbers shared by the network simulation and the synthetic brain cohort.
//
// Why hand-written draws: the C++ standard fixes std::mt19937_64's output but not that of its
// distributions (std::normal_distribution etc. differ between standard libraries), so the draws
// are written out here; the same seed then gives the same data with every standard library. Only
// std::log and std::sqrt touch the bits beyond the engine's output.

#include <cmath>
#include <cstdint>
#include <random>

namespace pelab::network_simulation {

/// SplitMix64's finaliser: spreads a seed's bits, so that nearby seeds (0, 1, 2, ...) and seeds
/// xored with a stream constant give unrelated engine states.
inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// std::mt19937_64 seeded through splitmix64, with hand-written uniform, integer, normal and
/// exponential draws.
class Random {
 public:
  /// The engine is seeded with splitmix64(seed).
  explicit Random(std::uint64_t seed) : engine_(splitmix64(seed)) {}
  /// One of several independent streams from one seed: the same as Random(seed ^ stream).
  Random(std::uint64_t seed, std::uint64_t stream) : Random(seed ^ stream) {}

  /// Uniform in [0, 1) from the 53 high bits.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

  /// Uniform in [0, n), n > 0, by rejection (no modulo bias).
  std::uint64_t below(std::uint64_t n) {
    const std::uint64_t threshold = (0 - n) % n;
    std::uint64_t x = engine_();
    while (x < threshold)
      x = engine_();
    return x % n;
  }

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
  std::mt19937_64 engine_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace pelab::network_simulation
