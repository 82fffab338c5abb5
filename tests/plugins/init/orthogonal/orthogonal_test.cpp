// The orthogonal initializer: Q^T Q = gain^2 I for tall and square tensors, Q Q^T = gain^2 I for
// wide ones, Haar-random (not a fixed or sparse orthogonal matrix), and no 1D tensors.

#include <cmath>
#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "init_test_support.h"
#include "pelab/plugins/registry.h"
#include "test_support.h"

namespace pelab {
namespace {

class OrthogonalInit : public ::testing::Test {
 protected:
  OrthogonalInit() : registry_(test::builtin_registry()) {}

  std::shared_ptr<Initializer> make(double gain) {
    return test::make_with_gain(registry_, "orthogonal", gain);
  }

  torch::Tensor filled(double gain, const test::Shape& shape,
                       torch::Dtype dtype = torch::kFloat32) {
    return test::filled_by(*make(gain), shape, dtype);
  }

  Registry registry_;
};

// Largest deviation of m from gain^2 times the identity.
double off_identity(const torch::Tensor& m, double gain) {
  const torch::Tensor identity = torch::eye(m.size(0), torch::kFloat64) * (gain * gain);
  return (m - identity).abs().max().item<double>();
}

TEST_F(OrthogonalInit, DeclaresGain) {
  test::expect_declares_gain(registry_, "orthogonal");
}

TEST_F(OrthogonalInit, SquareIsOrthogonalBothWays) {
  torch::manual_seed(1);
  const torch::Tensor q = filled(1.0, {1000, 1000}).to(torch::kFloat64);
  // float32 entries: the products are exact to a few 1e-7.
  EXPECT_LT(off_identity(q.t().mm(q), 1.0), 1e-5);
  EXPECT_LT(off_identity(q.mm(q.t()), 1.0), 1e-5);
  // Haar-random, not the identity or a signed permutation: no entry is large (a random unit
  // vector of 1000 entries has max |entry| about 4 / sqrt(1000) = 0.13), the mean is 0.
  EXPECT_LT(q.abs().max().item<double>(), 0.25);
  EXPECT_NEAR(q.mean().item<double>(), 0.0, 5.0 / std::sqrt(1000.0) / 1000.0);
}

TEST_F(OrthogonalInit, TallHasOrthonormalColumns) {
  torch::manual_seed(2);
  const torch::Tensor q = filled(1.0, {300, 100}).to(torch::kFloat64);
  EXPECT_LT(off_identity(q.t().mm(q), 1.0), 1e-5);
  // Rows cannot be orthonormal (rank 100 < 300): Q Q^T is a projection of trace 100.
  EXPECT_NEAR(q.mm(q.t()).trace().item<double>(), 100.0, 1e-3);
}

TEST_F(OrthogonalInit, WideHasOrthonormalRows) {
  torch::manual_seed(3);
  const torch::Tensor q = filled(1.0, {100, 300}).to(torch::kFloat64);
  EXPECT_LT(off_identity(q.mm(q.t()), 1.0), 1e-5);
  EXPECT_NEAR(q.t().mm(q).trace().item<double>(), 100.0, 1e-3);
}

TEST_F(OrthogonalInit, GainScalesAndHigherDimensionsFlatten) {
  torch::manual_seed(4);
  const torch::Tensor q = filled(2.0, {200, 50}, torch::kFloat64);
  EXPECT_LT(off_identity(q.t().mm(q), 2.0), 1e-10);  // float64 throughout
  // [10, 4, 5] is viewed as 10 x 20: orthonormal rows.
  const torch::Tensor w = filled(1.0, {10, 4, 5}).reshape({10, 20}).to(torch::kFloat64);
  EXPECT_LT(off_identity(w.mm(w.t()), 1.0), 1e-5);
}

TEST_F(OrthogonalInit, ATensorWithoutRowsAndColumnsIsRefusedByName) {
  test::expect_refuses_1d(
      *make(1.0), "pe.bias (block 0)",
      {"pe.bias (block 0): orthogonal needs a matrix", "shape [5]", "e.g. normal or uniform"});
}

TEST_F(OrthogonalInit, SameSeedSameTensorOtherSeedOther) {
  test::expect_seed_decides([&] { return filled(1.0, {16, 24}); });
}

TEST_F(OrthogonalInit, FillsAParameterWithoutRecordingAGraph) {
  const torch::Tensor q = test::expect_fills_parameter_without_graph(*make(1.0), {4, 4});
  EXPECT_LT(off_identity(q.t().mm(q), 1.0), 1e-6);
}

}  // namespace
}  // namespace pelab
