// The probe interface's naming rules: per-block scalars and the directions of headlines.

#include "pelab/interfaces/probe.h"

#include <gtest/gtest.h>

namespace pelab {
namespace {

TEST(ProbeTest, PerBlockScalarsAreNamedAfterTheirMean) {
  EXPECT_EQ(per_block_scalar("spearman", 0), "spearman_block0");
  EXPECT_EQ(per_block_scalar("q", 11), "q_block11");
  EXPECT_TRUE(is_per_block_scalar(per_block_scalar("entropy", 3)));
  EXPECT_FALSE(is_per_block_scalar("entropy"));
}

TEST(ProbeTest, ADirectionReadsBackAsWritten) {
  for (Better better : {Better::kHigher, Better::kLower, Better::kNeither})
    EXPECT_EQ(better_from_string(to_string(better)), better);
  EXPECT_EQ(to_string(Better::kHigher), std::string("higher"));
  // A record of a pelab without directions, or a hand-edited one, reads as no direction.
  EXPECT_EQ(better_from_string(""), Better::kNeither);
  EXPECT_EQ(better_from_string("HIGHER"), Better::kNeither);
}

}  // namespace
}  // namespace pelab
