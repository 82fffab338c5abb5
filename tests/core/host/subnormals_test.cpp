// Flushing subnormal floats: on the calling thread and on every thread of ATen's pool, and off
// again (LibTorch's default, IEEE gradual underflow).

#include "pelab/host/subnormals.h"

#include <cstdint>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/config/sections.h"

namespace pelab {
namespace {

constexpr float kSubnormal = 1e-39f;  // below std::numeric_limits<float>::min(), above 0

// A tensor of subnormals made from their bits: a float written from a scalar is converted on the
// calling thread, which would flush it before any kernel ran.
torch::Tensor subnormals(at::IntArrayRef sizes) {
  std::int32_t bits = 0;
  std::memcpy(&bits, &kSubnormal, sizeof bits);
  return torch::full(sizes, bits, torch::kInt32).view(torch::kFloat32);
}

// The entries of a result that are not zero, read as bits: a float comparison on a thread that
// treats subnormal inputs as zero (DAZ) would count them as zero whatever they are.
std::int64_t nonzero_bits(const torch::Tensor& floats) {
  return floats.contiguous().view(torch::kInt32).count_nonzero().item<std::int64_t>();
}

// Products large enough for ATen to split across its pool's threads, each of which computes with
// its own control register: a thread left in the other mode shows as a part of the result.
std::int64_t nonzero_products(std::int64_t size) {
  return nonzero_bits(subnormals({size}) * 1.0f);
}

constexpr std::int64_t kSize = 1 << 18;

class Subnormals : public ::testing::Test {
 protected:
  void SetUp() override {
    static_assert(kSubnormal < std::numeric_limits<float>::min() && kSubnormal > 0.0f);
    threads_ = torch::get_num_threads();
    torch::set_num_threads(2);
    if (!set_flush_subnormals(false)) GTEST_SKIP() << "this CPU has no flush-to-zero mode";
  }
  void TearDown() override {
    set_flush_subnormals(false);
    torch::set_num_threads(threads_);
  }
  int threads_ = 1;
};

TEST_F(Subnormals, FlushedToZeroOnEveryThread) {
  // The pool exists, in the other mode, before the switch: it must be reached, not inherited.
  ASSERT_EQ(nonzero_products(kSize), kSize);
  ASSERT_TRUE(set_flush_subnormals(true));
  EXPECT_TRUE(flushes_subnormals());
  EXPECT_EQ(nonzero_products(kSize), 0);
  const torch::Tensor matrix = subnormals({64, 64});
  EXPECT_EQ(nonzero_bits(torch::mm(matrix, torch::eye(64))), 0);
}

TEST_F(Subnormals, KeptWithGradualUnderflowOnEveryThread) {
  ASSERT_TRUE(set_flush_subnormals(true));
  ASSERT_EQ(nonzero_products(kSize), 0);
  ASSERT_TRUE(set_flush_subnormals(false));
  EXPECT_FALSE(flushes_subnormals());
  EXPECT_EQ(nonzero_products(kSize), kSize);
  const torch::Tensor matrix = subnormals({64, 64});
  EXPECT_EQ(nonzero_bits(torch::mm(matrix, torch::eye(64))), 64 * 64);
}

TEST(SubnormalsSetting, TrainFlushesByDefault) {
  // What a run does unless its manifest says otherwise, and what a config.toml written before
  // train.flush_subnormals existed resolves to.
  EXPECT_TRUE(train_schema().defaults().boolean("flush_subnormals"));
}

}  // namespace
}  // namespace pelab
