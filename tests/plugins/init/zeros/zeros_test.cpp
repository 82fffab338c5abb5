// The zeros initializer: every entry 0, whatever the shape and the seed.

#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/plugins/registry.h"
#include "test_support.h"

namespace pelab {
namespace {

class ZerosInit : public ::testing::Test {
 protected:
  ZerosInit() : registry_(test::builtin_registry()) {}

  torch::Tensor filled(std::vector<std::int64_t> shape) {
    torch::Tensor tensor = torch::randn(shape);  // something to overwrite
    registry_.create_initializer(registry_.default_spec(PluginKind::kInitializer, "zeros"))
        ->fill(tensor, InitContext::for_tensor(tensor, "test"));
    return tensor;
  }

  Registry registry_;
};

TEST_F(ZerosInit, HasNoParameters) {
  EXPECT_TRUE(registry_.schema(PluginKind::kInitializer, "zeros").empty());
}

TEST_F(ZerosInit, EveryEntryIsZeroInAnyShape) {
  for (const auto& shape : std::vector<std::vector<std::int64_t>>{{5}, {16, 64}, {2, 3, 4}}) {
    const torch::Tensor t = filled(shape);
    EXPECT_EQ(t.sizes(), torch::IntArrayRef(shape));
    EXPECT_TRUE(torch::equal(t, torch::zeros(shape)));
  }
}

TEST_F(ZerosInit, FillsAParameterWithoutRecordingAGraph) {
  torch::Tensor parameter = torch::ones({3, 4}, torch::requires_grad());
  registry_.create_initializer(registry_.default_spec(PluginKind::kInitializer, "zeros"))
      ->fill(parameter, InitContext::for_tensor(parameter, "weight"));
  EXPECT_EQ(parameter.grad_fn(), nullptr);
  EXPECT_TRUE(parameter.requires_grad());
  EXPECT_EQ(parameter.abs().sum().item<double>(), 0.0);
}

TEST_F(ZerosInit, DoesNotDrawFromTheGenerator) {
  torch::manual_seed(4);
  const torch::Tensor expected = torch::rand({4});
  torch::manual_seed(4);
  torch::Tensor t = torch::empty({3, 3});
  registry_.create_initializer(registry_.default_spec(PluginKind::kInitializer, "zeros"))
      ->fill(t, InitContext::for_tensor(t, "test"));
  EXPECT_TRUE(torch::equal(torch::rand({4}), expected));
}

}  // namespace
}  // namespace pelab
