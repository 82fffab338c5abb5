// batched_matmul: the same products and gradients as torch::matmul, for the strided views that
// attention passes it, with results independent of the thread count.

#include "pelab/model/batched_matmul.h"

#include <functional>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace pelab {
namespace {

struct Case {
  std::vector<std::int64_t> a_shape, b_shape;
};

// Products and both gradients against torch::matmul's, in double so that only a real error shows.
void expect_same_as_matmul(const torch::Tensor& a_base, const torch::Tensor& b_base,
                           const std::function<torch::Tensor(const torch::Tensor&)>& view_a,
                           const std::function<torch::Tensor(const torch::Tensor&)>& view_b) {
  const torch::Tensor a1 = a_base.clone().requires_grad_(true);
  const torch::Tensor b1 = b_base.clone().requires_grad_(true);
  const torch::Tensor a2 = a_base.clone().requires_grad_(true);
  const torch::Tensor b2 = b_base.clone().requires_grad_(true);
  const torch::Tensor ours = batched_matmul(view_a(a1), view_b(b1));
  const torch::Tensor theirs = torch::matmul(view_a(a2), view_b(b2));
  ASSERT_EQ(ours.sizes(), theirs.sizes());
  EXPECT_TRUE(torch::allclose(ours, theirs, 1e-12, 1e-12));

  const torch::Tensor weights = torch::randn(ours.sizes(), ours.options());
  (ours * weights).sum().backward();
  (theirs * weights).sum().backward();
  EXPECT_TRUE(torch::allclose(a1.grad(), a2.grad(), 1e-12, 1e-12));
  EXPECT_TRUE(torch::allclose(b1.grad(), b2.grad(), 1e-12, 1e-12));
}

TEST(BatchedMatmul, ContiguousThreeAndFourDimensionalBatches) {
  torch::manual_seed(1);
  const auto same = [](const torch::Tensor& t) { return t; };
  for (const Case& c : std::vector<Case>{{{7, 5, 3}, {7, 3, 4}},
                                         {{2, 3, 16, 8}, {2, 3, 8, 16}},
                                         {{4, 1, 16, 64}, {4, 1, 64, 16}},
                                         {{3, 1, 1}, {3, 1, 1}}}) {
    SCOPED_TRACE(::testing::PrintToString(c.a_shape));
    expect_same_as_matmul(torch::randn(c.a_shape, torch::kDouble),
                          torch::randn(c.b_shape, torch::kDouble), same, same);
  }
}

// Attention's operands: q and k are permuted slices of one fused projection, and k is transposed.
TEST(BatchedMatmul, AttentionsStridedViews) {
  torch::manual_seed(2);
  const std::int64_t batch = 5, tokens = 16, heads = 2, head_dim = 8;
  const torch::Tensor qkv = torch::randn({batch, tokens, 3, heads, head_dim}, torch::kDouble);
  const torch::Tensor k_source = torch::randn({batch, tokens, 3, heads, head_dim}, torch::kDouble);
  expect_same_as_matmul(
      qkv, k_source,
      [](const torch::Tensor& t) {
        return t.permute({2, 0, 3, 1, 4})[0];
      },
      [](const torch::Tensor& t) {
        return t.permute({2, 0, 3, 1, 4})[1].transpose(-2, -1);
      });
}

// The same BLAS calls as ATen's bmm: bit-identical products, so training is unchanged by it.
TEST(BatchedMatmul, FloatProductsEqualTorchMatmulExactly) {
  torch::manual_seed(3);
  const torch::Tensor qkv = torch::randn({64, 16, 3, 1, 160}).permute({2, 0, 3, 1, 4});
  const torch::Tensor q = qkv[0], k_t = qkv[1].transpose(-2, -1), v = qkv[2];
  EXPECT_TRUE(torch::equal(batched_matmul(q, k_t), torch::matmul(q, k_t)));
  const torch::Tensor p = torch::softmax(torch::matmul(q, k_t), -1);
  EXPECT_TRUE(torch::equal(batched_matmul(p, v), torch::matmul(p, v)));
  const torch::Tensor a = torch::randn({64, 16, 64}), b = torch::randn({64, 64, 16});
  EXPECT_TRUE(torch::equal(batched_matmul(a, b), torch::matmul(a, b)));
}

// Above the size limit, with broadcasting or in another dtype it is torch::matmul itself.
TEST(BatchedMatmul, LargeBroadcastOrOtherDtypesAreTorchMatmul) {
  torch::manual_seed(4);
  const torch::Tensor large_a = torch::randn({2, 128, 128});
  const torch::Tensor large_b = torch::randn({2, 128, 128});
  EXPECT_TRUE(torch::equal(batched_matmul(large_a, large_b), torch::matmul(large_a, large_b)));
  const torch::Tensor broadcast_b = torch::randn({4, 3});
  const torch::Tensor a = torch::randn({5, 2, 4});
  EXPECT_TRUE(torch::equal(batched_matmul(a, broadcast_b), torch::matmul(a, broadcast_b)));
  const torch::Tensor ints = torch::randint(0, 5, {3, 2, 2}, torch::kLong);
  EXPECT_TRUE(torch::equal(batched_matmul(ints, ints), torch::matmul(ints, ints)));
}

TEST(BatchedMatmul, MismatchedShapesAreTorchsError) {
  EXPECT_THROW(batched_matmul(torch::randn({2, 3, 4}), torch::randn({2, 5, 4})), c10::Error);
}

TEST(BatchedMatmul, SameResultAtEveryThreadCount) {
  torch::manual_seed(5);
  const torch::Tensor a = torch::randn({128, 1, 16, 64});
  const torch::Tensor b = torch::randn({128, 1, 64, 16});
  const int threads = torch::get_num_threads();
  torch::set_num_threads(1);
  const torch::Tensor one = batched_matmul(a, b);
  torch::set_num_threads(2);
  const torch::Tensor two = batched_matmul(a, b);
  torch::set_num_threads(threads);
  EXPECT_TRUE(torch::equal(one, two));
}

TEST(BatchedMatmul, UnderInferenceMode) {
  torch::manual_seed(6);
  const torch::Tensor a = torch::randn({3, 4, 5}, torch::requires_grad());
  const torch::Tensor b = torch::randn({3, 5, 6});
  torch::InferenceMode guard;
  const torch::Tensor out = batched_matmul(a, b);
  EXPECT_FALSE(out.requires_grad());
  EXPECT_TRUE(torch::allclose(out, torch::matmul(a, b), 1e-5, 1e-5));
}

}  // namespace
}  // namespace pelab
