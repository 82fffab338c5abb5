// Token layouts: sequences, row-major grids and their consistency checks.

#include "pelab/interfaces/layout.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/base/error.h"

namespace pelab {
namespace {

using ::testing::HasSubstr;

std::string validation_error(const Layout& layout) {
  try {
    layout.validate();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "the layout validated";
  return "";
}

TEST(Layout, SequencePutsTokenIAtCoordinateI) {
  const Layout layout = Layout::sequence(5);
  EXPECT_EQ(layout.tokens, 5);
  ASSERT_TRUE(layout.has_coordinates());
  EXPECT_EQ(layout.dims(), 1);
  EXPECT_EQ(layout.coordinates.scalar_type(), torch::kFloat64);
  EXPECT_TRUE(torch::equal(layout.coordinates,
                           torch::tensor({0.0, 1.0, 2.0, 3.0, 4.0}, torch::kFloat64).unsqueeze(1)));
  EXPECT_EQ(layout.axis_names, (std::vector<std::string>{"index"}));
  EXPECT_EQ(layout.grid_shape, (std::vector<std::int64_t>{5}));
  EXPECT_TRUE(layout.coordinates_visible);
  EXPECT_FALSE(Layout::sequence(5, false).coordinates_visible);
  EXPECT_NO_THROW(layout.validate());
}

TEST(Layout, GridIsRowMajor) {
  const Layout layout = Layout::grid({2, 3}, {"row", "column"}, false);
  EXPECT_EQ(layout.tokens, 6);
  EXPECT_EQ(layout.dims(), 2);
  EXPECT_FALSE(layout.coordinates_visible);
  EXPECT_EQ(layout.grid_shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(layout.axis_names, (std::vector<std::string>{"row", "column"}));
  for (std::int64_t k = 0; k < 6; ++k) {
    EXPECT_EQ(layout.coordinates[k][0].item<double>(), static_cast<double>(k / 3)) << k;
    EXPECT_EQ(layout.coordinates[k][1].item<double>(), static_cast<double>(k % 3)) << k;
  }
}

TEST(Layout, ThreeDimensionalGrid) {
  const Layout layout = Layout::grid({2, 2, 2}, {}, true);
  EXPECT_EQ(layout.tokens, 8);
  EXPECT_EQ(layout.dims(), 3);
  // The last token sits at the far corner, the second one step along the last axis.
  EXPECT_TRUE(torch::equal(layout.coordinates[7], torch::tensor({1.0, 1.0, 1.0}, torch::kFloat64)));
  EXPECT_TRUE(torch::equal(layout.coordinates[1], torch::tensor({0.0, 0.0, 1.0}, torch::kFloat64)));
}

TEST(Layout, GridArgumentsAreChecked) {
  EXPECT_THROW(Layout::grid({}, {}, true), Error);
  EXPECT_THROW(Layout::grid({3, 0}, {}, true), Error);
  EXPECT_THROW(Layout::grid({2, 2}, {"only one name"}, true), Error);
}

TEST(Layout, WithoutCoordinates) {
  Layout layout;
  layout.tokens = 4;
  EXPECT_FALSE(layout.has_coordinates());
  EXPECT_EQ(layout.dims(), 0);
  EXPECT_NO_THROW(layout.validate());
}

TEST(Layout, ValidateNamesWhatIsInconsistent) {
  Layout empty;
  EXPECT_THAT(validation_error(empty), HasSubstr("at least one token"));

  Layout rows = Layout::sequence(4);
  rows.tokens = 5;
  rows.grid_shape = {5};
  EXPECT_THAT(validation_error(rows), HasSubstr("coordinates must be [tokens=5, D], got 4x1"));

  Layout names = Layout::grid({2, 2}, {"row", "column"}, true);
  names.axis_names = {"row"};
  EXPECT_THAT(validation_error(names), HasSubstr("2 coordinate axes but 1 axis names"));

  Layout grid = Layout::sequence(6);
  grid.grid_shape = {2, 2};
  EXPECT_THAT(validation_error(grid), HasSubstr("grid shape 2x2 holds 4 cells, not 6 tokens"));
}

}  // namespace
}  // namespace pelab
