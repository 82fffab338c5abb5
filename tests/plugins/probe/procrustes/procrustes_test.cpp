// The Procrustes probe against the sinusoidal reference, on PEs whose distance is known.

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/plugins/registry.h"
#include "probe_test_support.h"
#include "test_support.h"

namespace pelab {
namespace {

using test::rotation;
using test::snapshot;

class Procrustes : public ::testing::Test {
 protected:
  Procrustes()
      : registry_(test::builtin_registry()),
        grid_(Layout::grid({4, 4}, {"row", "column"}, /*coordinates_visible=*/false)) {
    torch::manual_seed(11);
  }

  // The 2D sinusoidal table of the grid at width d (base 10, so that every channel varies).
  torch::Tensor sinusoidal(const Layout& layout, std::int64_t d) {
    PluginSpec spec = sinusoidal_spec();
    spec.params.set("use_hidden_coordinates", true);
    return registry_.create_positional_encoding(spec, layout, ModelShape{d, 1, 1, 0})
        ->table()
        .to(torch::kFloat64);
  }

  PluginSpec sinusoidal_spec() {
    PluginSpec spec = registry_.default_spec(PluginKind::kPositionalEncoding, "sinusoidal_nd");
    spec.params.set("base", 10.0);
    return spec;
  }

  ProbeResult run(const Layout& layout, const std::vector<PESnapshot>& snapshots,
                  std::int64_t reference_width = 0, const std::string& tensor = "") {
    PluginSpec spec = registry_.default_spec(PluginKind::kProbe, "procrustes");
    spec.params.set("tensor", tensor);
    spec.params.set("reference", std::make_shared<const PluginSpec>(sinusoidal_spec()));
    spec.params.set("reference_width", reference_width);
    return registry_.create_probe(spec)->run(
        ProbeContext{layout, snapshots, nullptr, nullptr, &registry_});
  }

  Registry registry_;
  Layout grid_;
};

TEST_F(Procrustes, TheReferenceItselfIsAtZero) {
  // The default reference reads the grid's hidden coordinates: the probe may, the model may not.
  const ProbeResult result = run(grid_, {snapshot(0, {sinusoidal(grid_, 16)})});
  EXPECT_NEAR(result.scalars.at("distance"), 0.0, 1e-6);
  EXPECT_NEAR(result.scalars.at("distance_block0"), 0.0, 1e-6);
}

TEST_F(Procrustes, RotatedScaledShiftedCopyIsAtZero) {
  const torch::Tensor copy = sinusoidal(grid_, 16).matmul(rotation(16)) * 5.0 + 2.0;
  EXPECT_NEAR(run(grid_, {snapshot(0, {copy})}).scalars.at("distance"), 0.0, 1e-5);
}

// The reviewers' criticism 2: any rotation of the 2D sinusoidal code is as valid a "ground truth".
// Procrustes aligns orthogonally first, so a PE and any rotation of it are equally far from the
// sinusoidal reference: rotating the PE (equivalently, the reference) changes nothing.
TEST_F(Procrustes, ARotationOfThePeOrOfTheReferenceChangesNothing) {
  torch::manual_seed(21);
  const torch::Tensor table = torch::randn({16, 16}, torch::kFloat64);
  const double distance = run(grid_, {snapshot(0, {table})}).scalars.at("distance");
  const double rotated =
      run(grid_, {snapshot(0, {table.matmul(rotation(16))})}).scalars.at("distance");
  EXPECT_GT(distance, 0.1);
  EXPECT_NEAR(rotated, distance, 1e-6);
}

TEST_F(Procrustes, RandomTableIsFar) {
  const ProbeResult result = run(grid_, {snapshot(0, {torch::randn({16, 16}, torch::kFloat64)})});
  EXPECT_GT(result.scalars.at("distance"), 0.4);
  EXPECT_LE(result.scalars.at("distance"), 1.0);
}

TEST_F(Procrustes, NarrowerReferenceIsPadded) {
  // Reference built at width 8, PE of width 16 holding it in 8 of its columns, rotated.
  const torch::Tensor padded =
      torch::cat({sinusoidal(grid_, 8), torch::zeros({16, 8}, torch::kFloat64)}, 1);
  const ProbeResult result = run(grid_, {snapshot(0, {padded.matmul(rotation(16))})}, 8);
  EXPECT_NEAR(result.scalars.at("distance"), 0.0, 1e-5);
  EXPECT_EQ(result.arrays.at("reference").size(1), 8);
}

TEST_F(Procrustes, KnownValueForOneColumn) {
  // 1D tokens at 0..5; reference [sin x, cos x] (width 2, frequency 1); PE = sin x alone (width
  // 1, padded). With s, c the centred columns, the one singular value of A^T B is
  // sqrt(|s|^4 + (s.c)^2) / (|s| sqrt(|s|^2 + |c|^2)), so the distance is
  // 1 - (|s|^4 + (s.c)^2) / (|s|^2 (|s|^2 + |c|^2)).
  const Layout line = Layout::sequence(6, false);
  const torch::Tensor x = torch::arange(6, torch::kFloat64);
  const torch::Tensor s = x.sin() - x.sin().mean();
  const torch::Tensor c = x.cos() - x.cos().mean();
  const double ss = s.dot(s).item<double>(), cc = c.dot(c).item<double>(),
               sc = s.dot(c).item<double>();
  const double expected = 1.0 - (ss * ss + sc * sc) / (ss * (ss + cc));
  const ProbeResult result = run(line, {snapshot(0, {x.sin().unsqueeze(1)})}, 2);
  EXPECT_NEAR(result.scalars.at("distance"), expected, 1e-6);
  EXPECT_GT(expected, 0.2);  // the example is not trivial
}

TEST_F(Procrustes, HistoryAndBlocks) {
  const torch::Tensor reference = sinusoidal(grid_, 16);
  const torch::Tensor noise = torch::randn({16, 16}, torch::kFloat64);
  const ProbeResult result =
      run(grid_, {snapshot(0, {noise, noise}), snapshot(5, {reference, noise})});
  EXPECT_NEAR(result.scalars.at("distance_block0"), 0.0, 1e-6);
  EXPECT_NEAR(result.scalars.at("distance"), result.scalars.at("distance_block1") / 2, 1e-6);
  EXPECT_EQ(result.arrays.at("distance").sizes(), (std::vector<std::int64_t>{2, 2}));
}

TEST_F(Procrustes, NoTableNoScalars) {
  PESnapshot kernels;
  kernels.kernels = torch::eye(16).unsqueeze(0);
  const ProbeResult result = run(grid_, {kernels});
  EXPECT_TRUE(result.scalars.empty());
  EXPECT_FALSE(result.note.empty());
}

// Learned positions (an N x 2 parameter read with `tensor`) are compared with the true
// coordinates themselves, at any width: a rotated, scaled, shifted grid is at 0, noise is not.
TEST_F(Procrustes, LearnedPositionsAreComparedWithTheCoordinates) {
  const torch::Tensor positions = grid_.coordinates.matmul(rotation(2)) * 0.2 - 3.0;
  EXPECT_NEAR(
      run(grid_, {test::rotary_snapshot({positions})}, 0, "positions").scalars.at("distance"), 0.0,
      1e-6);
  EXPECT_GT(run(grid_, {test::rotary_snapshot({torch::randn({16, 2})})}, 0, "positions")
                .scalars.at("distance"),
            0.1);
}

}  // namespace
}  // namespace pelab
