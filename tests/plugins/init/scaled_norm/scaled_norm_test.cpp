// The scaled_norm initializer: any initializer, rescaled to a Frobenius norm or to a per-row
// L2 norm; the direction is the inner initializer's.

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/base/error.h"
#include "pelab/plugins/registry.h"
#include "test_support.h"

namespace pelab {
namespace {

using ::testing::HasSubstr;

class ScaledNormInit : public ::testing::Test {
 protected:
  ScaledNormInit() : registry_(test::builtin_registry()) {}

  PluginSpec spec(double norm, const std::string& mode, const std::string& inner = "normal") {
    PluginSpec spec = registry_.default_spec(PluginKind::kInitializer, "scaled_norm");
    spec.params.set("norm", norm);
    spec.params.set("mode", mode);
    spec.params.set("init", std::make_shared<const PluginSpec>(
                                registry_.default_spec(PluginKind::kInitializer, inner)));
    return spec;
  }

  torch::Tensor filled(const PluginSpec& spec, std::vector<std::int64_t> shape,
                       torch::Dtype dtype = torch::kFloat32, const Layout* layout = nullptr) {
    torch::Tensor tensor = torch::empty(shape, dtype);
    registry_.create_initializer(spec)->fill(tensor,
                                             InitContext::for_tensor(tensor, "test", layout));
    return tensor;
  }

  std::string refusal(const PluginSpec& spec, std::vector<std::int64_t> shape) {
    torch::Tensor tensor = torch::empty(shape);
    try {
      registry_.create_initializer(spec)->fill(
          tensor, InitContext::for_tensor(tensor, "pe.table (shared)"));
    } catch (const Error& e) {
      return e.what();
    }
    ADD_FAILURE() << "accepted";
    return "";
  }

  Registry registry_;
};

TEST_F(ScaledNormInit, Declares) {
  const ParamSchema& schema = registry_.schema(PluginKind::kInitializer, "scaled_norm");
  EXPECT_EQ(schema.names(), (std::vector<std::string>{"init", "norm", "mode"}));
  EXPECT_EQ(schema.find("init")->type, ParamType::kPlugin);
  EXPECT_EQ(
      registry_.default_spec(PluginKind::kInitializer, "scaled_norm").params.plugin("init").name,
      "normal");
  EXPECT_DOUBLE_EQ(std::get<double>(schema.find("norm")->default_value), 1.0);
  EXPECT_EQ(schema.find("norm")->min, 0.0);
  EXPECT_EQ(std::get<std::string>(schema.find("mode")->default_value), "frobenius");
  EXPECT_EQ(schema.find("mode")->choices, (std::vector<std::string>{"frobenius", "row"}));
}

TEST_F(ScaledNormInit, FrobeniusNormIsHitExactly) {
  torch::manual_seed(1);
  // float32: to the last bits; float64: to 1e-12.
  const torch::Tensor t = filled(spec(3.5, "frobenius"), {1000, 1000});
  EXPECT_NEAR(t.to(torch::kFloat64).norm().item<double>(), 3.5, 3.5 * 1e-6);
  const torch::Tensor d = filled(spec(0.2, "frobenius"), {16, 64}, torch::kFloat64);
  EXPECT_NEAR(d.norm().item<double>(), 0.2, 1e-12);
}

TEST_F(ScaledNormInit, RowNormIsHitExactlyForEveryRow) {
  torch::manual_seed(2);
  const torch::Tensor t = filled(spec(0.7, "row"), {1000, 1000}).to(torch::kFloat64);
  const torch::Tensor rows = t.norm(2, {1});
  EXPECT_LT((rows - 0.7).abs().max().item<double>(), 0.7 * 1e-6);
  // A row of a 3D tensor is everything under one index of dimension 0.
  const torch::Tensor cube = filled(spec(2.0, "row"), {5, 3, 4}, torch::kFloat64);
  EXPECT_LT((cube.reshape({5, 12}).norm(2, {1}) - 2.0).abs().max().item<double>(), 1e-12);
}

TEST_F(ScaledNormInit, KeepsTheInnerDirection) {
  PluginSpec inner = registry_.default_spec(PluginKind::kInitializer, "orthogonal");
  torch::manual_seed(3);
  torch::Tensor reference = torch::empty({40, 30}, torch::kFloat64);
  registry_.create_initializer(inner)->fill(reference, InitContext::for_tensor(reference, "r"));
  torch::manual_seed(3);
  const torch::Tensor scaled =
      filled(spec(5.0, "frobenius", "orthogonal"), {40, 30}, torch::kFloat64);
  EXPECT_TRUE(torch::allclose(scaled, reference * (5.0 / std::sqrt(30.0)), 1e-12, 1e-12));
  // Per row, every row keeps its own direction.
  torch::manual_seed(3);
  const torch::Tensor rows = filled(spec(1.0, "row", "orthogonal"), {40, 30}, torch::kFloat64);
  EXPECT_TRUE(
      torch::allclose(rows, reference / reference.norm(2, {1}, /*keepdim=*/true), 1e-12, 1e-12));
}

TEST_F(ScaledNormInit, PassesTheContextToTheInnerInitializer) {
  // from_layout needs the layout; it gets it through scaled_norm.
  const Layout grid = Layout::grid({4, 4}, {"row", "column"}, /*coordinates_visible=*/false);
  torch::manual_seed(4);
  const torch::Tensor t = filled(spec(1.0, "row", "from_layout"), {16, 8}, torch::kFloat64, &grid);
  EXPECT_LT((t.norm(2, {1}) - 1.0).abs().max().item<double>(), 1e-12);
  // And the inner initializer's refusals come through, naming the tensor.
  const std::string message = refusal(spec(1.0, "frobenius", "xavier_normal"), {5});
  EXPECT_THAT(message, HasSubstr("pe.table (shared): xavier_normal needs a tensor with fans"));
}

TEST_F(ScaledNormInit, RefusesWhatHasNoDirection) {
  std::string message = refusal(spec(1.0, "frobenius", "zeros"), {4, 4});
  EXPECT_THAT(message, HasSubstr("pe.table (shared): scaled_norm cannot rescale to norm 1"));
  EXPECT_THAT(message, HasSubstr("after the inner initializer 'zeros', it is all zeros"));
  message = refusal(spec(1.0, "row", "normal"), {7});
  EXPECT_THAT(message, HasSubstr("pe.table (shared): mode = \"row\" rescales every row"));
  EXPECT_THAT(message, HasSubstr("use mode = \"frobenius\""));
  // A zero row among non-zero ones: normal with std 0 gives all-zero rows.
  PluginSpec zero_std = spec(1.0, "row");
  PluginSpec inner = registry_.default_spec(PluginKind::kInitializer, "normal");
  inner.params.set("std", 0.0);
  zero_std.params.set("init", std::make_shared<const PluginSpec>(inner));
  EXPECT_THAT(refusal(zero_std, {3, 2}), HasSubstr("row 0 is all zeros"));
  // A target norm of 0 is zeros, whatever the inner initializer gives.
  EXPECT_TRUE(torch::equal(filled(spec(0.0, "frobenius", "zeros"), {3, 3}), torch::zeros({3, 3})));
  EXPECT_TRUE(torch::equal(filled(spec(0.0, "row"), {3, 3}), torch::zeros({3, 3})));
}

TEST_F(ScaledNormInit, SameSeedSameTensorOtherSeedOther) {
  torch::manual_seed(9);
  const torch::Tensor a = filled(spec(1.0, "row"), {16, 16});
  torch::manual_seed(9);
  EXPECT_TRUE(torch::equal(a, filled(spec(1.0, "row"), {16, 16})));
  torch::manual_seed(10);
  EXPECT_FALSE(torch::equal(a, filled(spec(1.0, "row"), {16, 16})));
}

TEST_F(ScaledNormInit, FillsAParameterWithoutRecordingAGraph) {
  torch::Tensor parameter = torch::zeros({3, 4}, torch::requires_grad());
  registry_.create_initializer(spec(2.0, "frobenius"))
      ->fill(parameter, InitContext::for_tensor(parameter, "weight"));
  EXPECT_EQ(parameter.grad_fn(), nullptr);
  EXPECT_TRUE(parameter.requires_grad());
  EXPECT_NEAR(parameter.detach().norm().item<double>(), 2.0, 1e-5);
}

}  // namespace
}  // namespace pelab
