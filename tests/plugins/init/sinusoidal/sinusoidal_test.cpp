// The sinusoidal initializer: the transformer's table of the token index, or the sinusoidal_nd
// table of the layout's coordinates, as a learnable PE's starting point; and every combination
// it refuses, including a real manifest (hidden_coordinates.toml) through the learned PE.

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/base/error.h"
#include "pelab/config/manifest.h"
#include "pelab/io/file_io.h"
#include "pelab/plugins/registry.h"
#include "pelab/runs/run.h"
#include "test_support.h"

namespace pelab {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

struct Sinusoidal {
  std::string source = "index";
  double base = 10000.0;
  double scale = 1.0;
  bool use_hidden_coordinates = false;
};

class SinusoidalInit : public ::testing::Test {
 protected:
  SinusoidalInit() : registry_(test::builtin_registry()) {}

  PluginSpec spec(const Sinusoidal& p) {
    PluginSpec spec = registry_.default_spec(PluginKind::kInitializer, "sinusoidal");
    spec.params.set("source", p.source);
    spec.params.set("base", p.base);
    spec.params.set("scale", p.scale);
    spec.params.set("use_hidden_coordinates", p.use_hidden_coordinates);
    return spec;
  }

  torch::Tensor filled(const Sinusoidal& p, const Layout& layout, std::int64_t d) {
    torch::Tensor tensor = torch::empty({layout.tokens, d});
    registry_.create_initializer(spec(p))->fill(
        tensor, InitContext::for_tensor(tensor, "pe.table (block 0)", &layout));
    return tensor;
  }

  std::string refusal(const Sinusoidal& p, const Layout* layout, std::vector<std::int64_t> shape) {
    torch::Tensor tensor = torch::zeros(shape);
    try {
      registry_.create_initializer(spec(p))->fill(
          tensor, InitContext::for_tensor(tensor, "pe.table (block 3)", layout));
    } catch (const Error& e) {
      EXPECT_EQ(tensor.abs().sum().item<double>(), 0.0) << "filled before refusing";
      return e.what();
    }
    ADD_FAILURE() << "accepted";
    return "";
  }

  // The sinusoidal_nd PE's fixed table for the same layout.
  torch::Tensor sinusoidal_nd(const Layout& layout, std::int64_t d, double base = 10000.0) {
    PluginSpec spec = registry_.default_spec(PluginKind::kPositionalEncoding, "sinusoidal_nd");
    spec.params.set("use_hidden_coordinates", true);
    spec.params.set("base", base);
    return registry_.create_positional_encoding(spec, layout, ModelShape{d, 1, 1, 0})->table();
  }

  Registry registry_;
};

TEST_F(SinusoidalInit, Declares) {
  const ParamSchema& schema = registry_.schema(PluginKind::kInitializer, "sinusoidal");
  EXPECT_EQ(schema.names(),
            (std::vector<std::string>{"source", "base", "scale", "use_hidden_coordinates"}));
  EXPECT_EQ(std::get<std::string>(schema.find("source")->default_value), "index");
  EXPECT_EQ(schema.find("source")->choices, (std::vector<std::string>{"index", "coordinates"}));
  EXPECT_DOUBLE_EQ(std::get<double>(schema.find("base")->default_value), 10000.0);
  EXPECT_DOUBLE_EQ(std::get<double>(schema.find("scale")->default_value), 1.0);
  EXPECT_FALSE(std::get<bool>(schema.find("use_hidden_coordinates")->default_value));
}

// Vaswani et al.: pe[t, 2i] = sin(t / base^(2i/d)), pe[t, 2i+1] = cos(t / base^(2i/d)), times
// scale.
TEST_F(SinusoidalInit, IndexSourceIsTheTransformersFormula) {
  // The grid's coordinates are not used: row t encodes t.
  const Layout grid = Layout::grid({3, 4}, {"row", "column"}, /*coordinates_visible=*/false);
  const torch::Tensor table = filled({"index", 100.0, 0.5}, grid, 6);
  for (std::int64_t t = 0; t < 12; ++t) {
    for (std::int64_t i = 0; i < 3; ++i) {
      const double angle = t / std::pow(100.0, 2.0 * i / 6.0);
      EXPECT_NEAR(table[t][2 * i].item<double>(), 0.5 * std::sin(angle), 1e-6);
      EXPECT_NEAR(table[t][2 * i + 1].item<double>(), 0.5 * std::cos(angle), 1e-6);
    }
  }
  // And it is sinusoidal_nd's table of a sequence.
  EXPECT_TRUE(torch::allclose(filled({}, grid, 64), sinusoidal_nd(Layout::sequence(12), 64)));
}

TEST_F(SinusoidalInit, CoordinatesSourceIsTheSinusoidalNDTable) {
  const Layout grid = Layout::grid({4, 4}, {"row", "column"}, /*coordinates_visible=*/false);
  const torch::Tensor table = filled({"coordinates", 10000.0, 1.0, true}, grid, 160);
  EXPECT_TRUE(torch::allclose(table, sinusoidal_nd(grid, 160), 1e-6, 1e-6));
  // Any D: a visible 3D grid needs no opt-in.
  const Layout cube = Layout::grid({2, 3, 4}, {"x", "y", "z"}, /*coordinates_visible=*/true);
  EXPECT_TRUE(torch::allclose(filled({"coordinates", 50.0, 2.0}, cube, 24),
                              2.0 * sinusoidal_nd(cube, 24, 50.0), 1e-6, 1e-6));
}

TEST_F(SinusoidalInit, DoesNotDependOnTheSeed) {
  const Layout line = Layout::sequence(20);
  torch::manual_seed(1);
  const torch::Tensor a = filled({}, line, 16);
  torch::manual_seed(2);
  EXPECT_TRUE(torch::equal(a, filled({}, line, 16)));
}

TEST_F(SinusoidalInit, RefusesWhatItCannotEncodeNamingTheTensor) {
  const Layout line = Layout::sequence(5);
  const Layout hidden = Layout::grid({2, 2}, {"row", "column"}, /*coordinates_visible=*/false);
  Layout bare;  // tokens but no coordinates
  bare.tokens = 4;

  std::string message = refusal({}, nullptr, {5, 8});
  EXPECT_THAT(message, HasSubstr("pe.table (block 3): sinusoidal needs a tensor indexed by token"));
  EXPECT_THAT(message, HasSubstr("has no layout"));
  EXPECT_THAT(message, HasSubstr("init = \"sinusoidal\""));

  EXPECT_THAT(refusal({}, &line, {5}), HasSubstr("needs an N x d tensor with one row per token"));
  EXPECT_THAT(refusal({}, &line, {6, 8}), HasSubstr("(N = 5), but it has shape [6, 8]"));
  EXPECT_THAT(refusal({}, &line, {5, 7}), HasSubstr("d (7) must be even"));
  EXPECT_THAT(refusal({"coordinates"}, &line, {5, 7}),
              HasSubstr("d (7) must be a multiple of 2 x the 1 coordinate axes"));
  EXPECT_THAT(refusal({"coordinates", 10000.0, 1.0, true}, &hidden, {4, 6}),
              HasSubstr("d (6) must be a multiple of 2 x the 2 coordinate axes"));
  message = refusal({"coordinates"}, &hidden, {4, 8});
  EXPECT_THAT(message, HasSubstr("pe.table (block 3): the task's coordinates are ground truth"));
  EXPECT_THAT(message, HasSubstr("set use_hidden_coordinates = true"));
  EXPECT_THAT(refusal({"coordinates"}, &bare, {4, 8}),
              HasSubstr("the task's layout has none; use source = \"index\""));
  // The index source needs no coordinates.
  EXPECT_EQ(filled({}, bare, 8).size(0), 4);
}

TEST_F(SinusoidalInit, HiddenCoordinatesFlagWithTheIndexIsRefused) {
  try {
    registry_.create_initializer(spec({"index", 10000.0, 1.0, true}));
    FAIL() << "use_hidden_coordinates with source = index was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("use_hidden_coordinates = true only applies to source = "
                                    "\"coordinates\""));
  }
}

// The real case: hidden_coordinates.toml validates, but its run is refused when the learned PE
// fills its table, with the manifest position of [pe] and the table's name.
TEST_F(SinusoidalInit, ManifestWithHiddenCoordinatesIsRefusedWhenTheModelIsBuilt) {
  const std::string path =
      std::string(PELAB_SOURCE_DIR) + "/tests/plugins/init/sinusoidal/hidden_coordinates.toml";
  const Manifest manifest = Manifest::from_file(path, registry_);
  ASSERT_EQ(manifest.runs().size(), 1u);
  test::ScratchDir root;
  try {
    execute_run(manifest.runs().front(), registry_, root.path());
    FAIL() << "the run started";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), MatchesRegex(".*hidden_coordinates.toml:[0-9]+:[0-9]+: positional "
                                       "encoding 'learned': pe.table \\(block 0\\): the task's "
                                       "coordinates are ground truth.*"));
    EXPECT_THAT(e.what(), HasSubstr("set use_hidden_coordinates = true"));
  }
}

// With the opt-in, the run's epoch-0 snapshot of every block's learned table is the paper's 2D
// sinusoidal table.
TEST_F(SinusoidalInit, ManifestWithTheOptInStartsFromThe2DTable) {
  const std::string path =
      std::string(PELAB_SOURCE_DIR) + "/tests/plugins/init/sinusoidal/hidden_coordinates.toml";
  const Manifest manifest =
      Manifest::from_file(path, registry_, {"pe.init.use_hidden_coordinates=true"});
  test::ScratchDir root;
  const RunOutcome outcome = execute_run(manifest.runs().front(), registry_, root.path());
  const torch::Tensor tables = read_npy(outcome.dir + "/pe/tables-epoch-000000.npy");
  ASSERT_EQ(tables.sizes(), (std::vector<std::int64_t>{2, 16, 8}));
  const Layout grid = Layout::grid({4, 4}, {"row", "column"}, /*coordinates_visible=*/false);
  const torch::Tensor expected = sinusoidal_nd(grid, 8);
  EXPECT_TRUE(torch::allclose(tables[0], expected, 1e-6, 1e-6));
  EXPECT_TRUE(torch::allclose(tables[1], expected, 1e-6, 1e-6));
}

}  // namespace
}  // namespace pelab
