// The constant initializer: every entry `value`, whatever the shape and the seed.

#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/plugins/registry.h"
#include "test_support.h"

namespace pelab {
namespace {

class ConstantInit : public ::testing::Test {
 protected:
  ConstantInit() : registry_(test::builtin_registry()) {}

  torch::Tensor filled(double value, std::vector<std::int64_t> shape,
                       torch::Dtype dtype = torch::kFloat32) {
    PluginSpec spec = registry_.default_spec(PluginKind::kInitializer, "constant");
    spec.params.set("value", value);
    torch::Tensor tensor = torch::randn(shape, dtype);  // something to overwrite
    registry_.create_initializer(spec)->fill(tensor, InitContext::for_tensor(tensor, "test"));
    return tensor;
  }

  Registry registry_;
};

TEST_F(ConstantInit, DeclaresValueDefaultZero) {
  const ParamSchema& schema = registry_.schema(PluginKind::kInitializer, "constant");
  EXPECT_EQ(schema.names(), (std::vector<std::string>{"value"}));
  EXPECT_DOUBLE_EQ(std::get<double>(schema.find("value")->default_value), 0.0);
}

TEST_F(ConstantInit, EveryEntryIsTheValueInAnyShape) {
  for (const auto& shape : std::vector<std::vector<std::int64_t>>{{5}, {16, 64}, {2, 3, 4}}) {
    EXPECT_TRUE(torch::equal(filled(-0.75, shape), torch::full(shape, -0.75)));
  }
  // float64 keeps the value exactly.
  EXPECT_EQ(filled(0.1, {2, 2}, torch::kFloat64)[1][1].item<double>(), 0.1);
}

TEST_F(ConstantInit, DoesNotDependOnTheSeed) {
  torch::manual_seed(1);
  const torch::Tensor a = filled(2.5, {4, 4});
  torch::manual_seed(2);
  EXPECT_TRUE(torch::equal(a, filled(2.5, {4, 4})));
}

TEST_F(ConstantInit, FillsAParameterWithoutRecordingAGraph) {
  PluginSpec spec = registry_.default_spec(PluginKind::kInitializer, "constant");
  spec.params.set("value", 3.0);
  torch::Tensor parameter = torch::zeros({3, 4}, torch::requires_grad());
  registry_.create_initializer(spec)->fill(parameter, InitContext::for_tensor(parameter, "w"));
  EXPECT_EQ(parameter.grad_fn(), nullptr);
  EXPECT_TRUE(parameter.requires_grad());
  EXPECT_EQ(parameter.sum().item<double>(), 36.0);
}

}  // namespace
}  // namespace pelab
