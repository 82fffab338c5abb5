// pelab::Random: its three seedings are the engines they name, its integers and shuffles are
// exactly the modulo draws they replaced for ordinary n (so that no dataset changed), and they are
// unbiased and in range where the modulo draw is not (n near 2^64, where a redraw is common).

#include "pelab/base/random.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "pelab/base/error.h"

namespace pelab {
namespace {

constexpr std::uint64_t kTwo62 = std::uint64_t{1} << 62;
constexpr std::uint64_t kTwo63 = std::uint64_t{1} << 63;

// The Fisher-Yates with a plain modulo that the brain task and the probes' Permuter drew with.
template <typename T>
void modulo_shuffle(std::vector<T>& values, std::mt19937_64& engine) {
  for (std::int64_t i = static_cast<std::int64_t>(values.size()) - 1; i > 0; --i) {
    const auto j = static_cast<std::size_t>(engine() % static_cast<std::uint64_t>(i + 1));
    std::swap(values[static_cast<std::size_t>(i)], values[j]);
  }
}

TEST(Random, SplitMix64IsTheReferenceFinaliser) {
  // SplitMix64's first output from state 0 (Steele, Lea and Flood 2014; Vigna's reference code).
  EXPECT_EQ(splitmix64(0), 0xe220a8397b1dcdafULL);
}

TEST(Random, EngineSeedIsTheStandardEngine) {
  // The standard fixes this: the 10000th output of a default-constructed std::mt19937_64.
  Random random = Random::from_engine_seed(std::mt19937_64::default_seed);
  std::uint64_t x = 0;
  for (int i = 0; i < 10000; ++i)
    x = random.next();
  EXPECT_EQ(x, 9981545732273789042ULL);

  Random seeded = Random::from_engine_seed(2235);
  std::mt19937_64 engine(2235);
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(seeded.next(), engine());
}

TEST(Random, SplitMixSeedsTheEngineWithTheMixedSeedXorStream) {
  const std::uint64_t stream = 0x6a09e667f3bcc908ULL;
  Random random = Random::from_splitmix(7, stream);
  Random same = Random::from_splitmix(7 ^ stream);  // the stream is xored into the seed
  std::mt19937_64 engine(splitmix64(7 ^ stream));
  for (int i = 0; i < 100; ++i) {
    const std::uint64_t expected = engine();
    EXPECT_EQ(random.next(), expected);
    EXPECT_EQ(same.next(), expected);
  }
}

TEST(Random, SeedSequenceTakesAll128BitsOfSeedAndStream) {
  const std::uint64_t seed = 0x0123456789abcdefULL, stream = 0xfedcba9876543210ULL;
  std::seed_seq sequence{0x89abcdefU, 0x01234567U, 0x76543210U, 0xfedcba98U};
  std::mt19937_64 engine(sequence);
  Random random = Random::from_seed_sequence(seed, stream);
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(random.next(), engine());
  // Seeds or streams that differ only in their high half give other streams.
  EXPECT_NE(Random::from_seed_sequence(1).next(),
            Random::from_seed_sequence(1 + (std::uint64_t{1} << 32)).next());
  EXPECT_NE(Random::from_seed_sequence(1, 0).next(),
            Random::from_seed_sequence(1, std::uint64_t{1} << 32).next());
  EXPECT_EQ(Random::from_seed_sequence(1).next(), Random::from_seed_sequence(1, 0).next());
}

TEST(Random, BelowIsThePlainModuloForOrdinaryN) {
  // For n far below 2^64 a redraw has probability < n / 2^64: these draws are exactly x % n.
  const std::vector<std::uint64_t> sizes = {1,
                                            2,
                                            3,
                                            7,
                                            10,
                                            16,
                                            100,
                                            1000,
                                            1 << 20,
                                            1000000007,
                                            1ULL << 32,
                                            (1ULL << 32) + 1,
                                            999'999'999'989ULL};
  for (const std::uint64_t n : sizes) {
    Random random = Random::from_engine_seed(n);
    std::mt19937_64 engine(n);
    for (int i = 0; i < 2000; ++i) {
      const std::uint64_t expected = engine() % n;
      ASSERT_EQ(random.below(n), expected) << "n = " << n << ", draw " << i;
    }
  }
}

TEST(Random, ShuffleIsThePlainModuloFisherYatesForOrdinarySizes) {
  for (const std::size_t size : {0u, 1u, 2u, 5u, 16u, 100u, 1000u}) {
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
      std::vector<std::int64_t> expected(size), shuffled(size);
      std::iota(expected.begin(), expected.end(), 0);
      std::iota(shuffled.begin(), shuffled.end(), 0);
      std::mt19937_64 engine(seed);
      modulo_shuffle(expected, engine);
      Random random = Random::from_engine_seed(seed);
      random.shuffle(shuffled);
      ASSERT_EQ(shuffled, expected) << "size " << size << ", seed " << seed;
      // The engine advanced by one draw per swap, as before.
      ASSERT_EQ(random.next(), engine());
    }
  }
}

TEST(Random, BelowRedrawsTheLowResiduesNearTwoTo64) {
  // n = 2^63 + 1: 2^64 mod n = 2^63 - 1, so about half of the draws are redrawn; the value is the
  // first kept draw modulo n.
  const std::uint64_t n = kTwo63 + 1;
  const std::uint64_t threshold = kTwo63 - 1;
  Random random = Random::from_engine_seed(11);
  std::mt19937_64 engine(11);
  int differs_from_modulo = 0;
  for (int i = 0; i < 1000; ++i) {
    const std::uint64_t first = engine();
    std::uint64_t x = first;
    while (x < threshold)
      x = engine();
    const std::uint64_t value = random.below(n);
    ASSERT_EQ(value, x % n) << "draw " << i;
    ASSERT_LT(value, n);
    if (value != first % n) ++differs_from_modulo;
  }
  EXPECT_GT(differs_from_modulo, 400);  // the rejection case was exercised, often

  // The largest n redraws only 0; a power of two never redraws.
  Random largest = Random::from_engine_seed(3);
  std::mt19937_64 largest_engine(3);
  for (int i = 0; i < 100; ++i)
    ASSERT_EQ(largest.below(~std::uint64_t{0}), largest_engine() % ~std::uint64_t{0});
  Random power = Random::from_engine_seed(4);
  std::mt19937_64 power_engine(4);
  for (int i = 0; i < 100; ++i)
    ASSERT_EQ(power.below(kTwo63), power_engine() % kTwo63);
}

TEST(Random, BelowIsUnbiasedWhereTheModuloIsNot) {
  // n = 3 x 2^62: the plain modulo hits [0, 2^62) from two quarters of the engine's range (1/2 of
  // the draws); uniform on [0, n) it is 1/3.
  const std::uint64_t n = 3 * kTwo62;
  const int draws = 30000;
  Random random = Random::from_engine_seed(5);
  std::mt19937_64 engine(5);
  int low = 0, modulo_low = 0;
  for (int i = 0; i < draws; ++i) {
    const std::uint64_t value = random.below(n);
    ASSERT_LT(value, n);
    if (value < kTwo62) ++low;
    if (engine() % n < kTwo62) ++modulo_low;
  }
  EXPECT_NEAR(static_cast<double>(low) / draws, 1.0 / 3.0, 0.015);   // std 0.0027
  EXPECT_NEAR(static_cast<double>(modulo_low) / draws, 0.5, 0.015);  // the bias it removes
}

TEST(Random, ShuffleDrawsEveryOrderEquallyOften) {
  Random random = Random::from_seed_sequence(1);
  std::map<std::vector<int>, int> counts;
  const int shuffles = 60000;
  for (int i = 0; i < shuffles; ++i) {
    std::vector<int> v = {0, 1, 2};
    random.shuffle(v);
    ++counts[v];
  }
  ASSERT_EQ(counts.size(), 6u);
  for (const auto& [order, count] : counts)
    EXPECT_NEAR(count, shuffles / 6, 500) << "std 91";
}

TEST(Random, BelowZeroIsABug) {
  Random random = Random::from_engine_seed(0);
  EXPECT_THROW(random.below(0), InternalError);
}

TEST(Random, UniformIsTheEnginesHigh53Bits) {
  Random random = Random::from_splitmix(0);
  std::mt19937_64 engine(splitmix64(0));
  for (int i = 0; i < 1000; ++i) {
    const double u = random.uniform();
    ASSERT_EQ(u, static_cast<double>(engine() >> 11) / 9007199254740992.0);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
}

TEST(Random, NormalAndExponentialHaveTheirMoments) {
  Random random = Random::from_splitmix(1);
  const int draws = 200000;
  double sum = 0.0, squares = 0.0, exponential = 0.0;
  for (int i = 0; i < draws; ++i) {
    const double z = random.normal();
    sum += z;
    squares += z * z;
    const double e = random.exponential(4.0);
    ASSERT_GE(e, 0.0);
    exponential += e;
  }
  EXPECT_NEAR(sum / draws, 0.0, 0.01);
  EXPECT_NEAR(squares / draws, 1.0, 0.01);
  EXPECT_NEAR(exponential / draws, 0.25, 0.003);

  // The same seed, the same values: a normal pair's second value comes from the first's draws.
  Random a = Random::from_splitmix(9), b = Random::from_splitmix(9);
  for (int i = 0; i < 101; ++i)
    ASSERT_EQ(a.normal(), b.normal());
}

}  // namespace
}  // namespace pelab
