#include "random.h"

#include "pelab/error.h"

namespace pelab::latin_square {

Random::Random(std::uint64_t seed, std::uint64_t stream) {
  // All 128 bits of seed and stream reach the engine's state.
  std::seed_seq sequence{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
                         static_cast<std::uint32_t>(stream),
                         static_cast<std::uint32_t>(stream >> 32)};
  engine_.seed(sequence);
}

std::uint64_t Random::below(std::uint64_t n) {
  PELAB_INTERNAL_ASSERT(n > 0, "below(0)");
  // Values under 2^64 mod n would make the low residues more likely; draw again.
  const std::uint64_t threshold = (0 - n) % n;
  std::uint64_t x = engine_();
  while (x < threshold)
    x = engine_();
  return x % n;
}

}  // namespace pelab::latin_square
