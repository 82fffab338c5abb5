#include "encoding.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "test_data.h"

namespace pelab::latin_square {
namespace {

TEST(LatinSquareEncoding, OneHotOfAKnownPuzzle) {
  // 0 0 4 0 / 4 0 ? 2 / 1 0 2 0 / 0 0 3 0, answer 1.
  const Puzzle puzzle = Puzzle::from_digits("0040405210200030", 1, Condition::kBinary);
  const torch::Tensor inputs = encode_inputs({puzzle});
  ASSERT_EQ(inputs.sizes().vec(), (std::vector<std::int64_t>{1, 16, 5}));
  EXPECT_EQ(inputs.scalar_type(), torch::kFloat32);

  torch::Tensor expected = torch::zeros({1, 16, 5});
  expected[0][2][3] = 1;   // shape 4
  expected[0][4][3] = 1;   // shape 4
  expected[0][6][4] = 1;   // the query
  expected[0][7][1] = 1;   // shape 2
  expected[0][8][0] = 1;   // shape 1
  expected[0][10][1] = 1;  // shape 2
  expected[0][14][2] = 1;  // shape 3
  EXPECT_TRUE(torch::equal(inputs, expected));
  // Blanks are all zeros; every other token exactly one channel.
  EXPECT_EQ(inputs.sum().item<float>(), 7.0F);
}

TEST(LatinSquareEncoding, DatasetOfSelectedPuzzles) {
  const std::vector<Puzzle>& human = testing::human_puzzles();
  const Dataset dataset = make_dataset(human, {0, 36, 72, 1});
  ASSERT_EQ(dataset.size(), 4);
  EXPECT_EQ(dataset.inputs.sizes().vec(), (std::vector<std::int64_t>{4, 16, 5}));
  EXPECT_EQ(dataset.targets.scalar_type(), torch::kInt64);
  EXPECT_EQ(dataset.groups.scalar_type(), torch::kInt64);
  const std::vector<std::int64_t> targets(dataset.targets.data_ptr<std::int64_t>(),
                                          dataset.targets.data_ptr<std::int64_t>() + 4);
  EXPECT_EQ(targets, (std::vector<std::int64_t>{human[0].solution - 1, human[36].solution - 1,
                                                human[72].solution - 1, human[1].solution - 1}));
  const std::vector<std::int64_t> groups(dataset.groups.data_ptr<std::int64_t>(),
                                         dataset.groups.data_ptr<std::int64_t>() + 4);
  EXPECT_EQ(groups, (std::vector<std::int64_t>{0, 1, 2, 0}));
  EXPECT_EQ(dataset.group_names, (std::vector<std::string>{"binary", "ternary", "quaternary"}));
  EXPECT_TRUE(torch::equal(dataset.inputs[1], encode_inputs({human[36]})[0]));
}

}  // namespace
}  // namespace pelab::latin_square
