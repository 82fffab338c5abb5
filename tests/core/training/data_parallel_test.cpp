// Data-parallel training over two ranks (threads of this process, Gloo on loopback) against one
// process: each step is the same step, up to floating-point order. The steps use SGD with
// momentum, whose update is linear in the gradient: Adam's divides by the gradient's own size,
// which turns the rounding of a near-zero gradient into a whole step of either sign.

#include <memory>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/config/manifest.h"
#include "pelab/plugins/registry.h"
#include "pelab/training/trainer.h"
#include "test_support.h"
#include "two_ranks.h"

namespace pelab {
namespace {

using namespace std::chrono_literals;

// The largest difference between two sets of tensors, relative to the largest magnitude.
double relative_difference(const std::vector<torch::Tensor>& a,
                           const std::vector<torch::Tensor>& b) {
  double difference = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    difference = std::max(difference, (a[i] - b[i]).abs().max().item<double>());
    scale = std::max(scale, a[i].abs().max().item<double>());
  }
  return difference / scale;
}

class DataParallelTest : public ::testing::Test {
 protected:
  // A model and its trainer, built from the same seed whichever rank it is for.
  struct Replica {
    std::shared_ptr<Task> task;
    std::shared_ptr<TransformerEncoder> model;
    std::unique_ptr<Trainer> trainer;
  };
  Replica make(Collective* ranks) {
    const RunConfig config = Manifest::from_string(R"([experiment]
name = "dp"
seeds = [1]
[task]
plugin = "marker_position"
tokens = 6
train_samples = 64
[model]
layers = 2
d_model = 16
heads = 2
[pe]
plugin = "learned"
[train]
optimizer = "sgd"
momentum = 0.9
lr = 0.05
batch_size = 16
)",
                                                   "dp.toml", registry_, {})
                                 .runs()
                                 .front();
    torch::manual_seed(1);
    Replica replica;
    replica.task = registry_.create_task(config.task);
    const Layout layout = replica.task->layout();
    replica.model = std::make_shared<TransformerEncoder>(
        ModelConfig::from_params(config.model), replica.task->input_size(),
        replica.task->objective(), [&](const ModelShape& shape) {
          return registry_.create_positional_encoding(config.pe, layout, shape);
        });
    replica.trainer = std::make_unique<Trainer>(*replica.model, *replica.task,
                                                TrainConfig::from_params(config.train), ranks);
    return replica;
  }

  Registry registry_ = test::builtin_registry();
};

// Five steps on batches of 16, 7 (shares of 4 and 3) and 1 (rank 1's share is empty): the two
// ranks end with bit-identical parameters, within 1e-5 of the single process's, and report the
// same losses.
TEST_F(DataParallelTest, StepsMatchOneProcess) {
  Replica single = make(nullptr);
  auto ranks = test::connect_two_ranks(60s);
  std::array<Replica, 2> replicas{make(ranks[0].get()), make(ranks[1].get())};
  const Dataset& train = single.trainer->dataset("train");
  const std::vector<std::pair<std::int64_t, std::int64_t>> batches = {
      {0, 16}, {16, 32}, {32, 39}, {39, 40}, {40, 56}};
  std::vector<double> single_losses;
  for (const auto& [begin, end] : batches) {
    single_losses.push_back(single.trainer->train_step(train.inputs.slice(0, begin, end),
                                                       train.targets.slice(0, begin, end)));
  }
  std::array<std::vector<double>, 2> losses;
  test::on_both_ranks([&](int rank) {
    for (const auto& [begin, end] : batches) {
      losses[rank].push_back(replicas[rank].trainer->train_step(
          train.inputs.slice(0, begin, end), train.targets.slice(0, begin, end)));
    }
  });
  EXPECT_EQ(losses[0], losses[1]);
  for (std::size_t step = 0; step < batches.size(); ++step)
    EXPECT_NEAR(losses[0][step], single_losses[step], 1e-5 * single_losses[step]) << step;
  const auto parameters = single.model->parameters();
  EXPECT_LT(relative_difference(parameters, replicas[0].model->parameters()), 1e-5);
  const auto rank0 = replicas[0].model->parameters(), rank1 = replicas[1].model->parameters();
  for (std::size_t i = 0; i < rank0.size(); ++i)
    EXPECT_TRUE(rank0[i].equal(rank1[i])) << "parameter " << i;
  // The steps really moved the model: the comparison is not between two initial states.
  EXPECT_GT(relative_difference(parameters, make(nullptr).model->parameters()), 1e-3);
}

// After synchronize_ranks every rank holds rank 0's parameters, optimizer moments and step, so
// that the next steps stay identical, as after rank 0 alone resumed from a checkpoint.
TEST_F(DataParallelTest, SynchronizeGivesEveryRankRankZerosState) {
  auto ranks = test::connect_two_ranks(60s);
  std::array<Replica, 2> replicas{make(ranks[0].get()), make(ranks[1].get())};
  const Dataset& train = replicas[0].trainer->dataset("train");
  // Rank 0 "resumes": other weights and an optimizer that has taken steps.
  {
    Replica warm = make(nullptr);
    for (int step = 0; step < 3; ++step)
      warm.trainer->train_step(train.inputs.slice(0, 0, 16), train.targets.slice(0, 0, 16));
    torch::NoGradGuard no_grad;
    const auto from = warm.model->parameters();
    auto to = replicas[0].model->parameters();
    for (std::size_t i = 0; i < to.size(); ++i)
      to[i].copy_(from[i]);
    torch::serialize::OutputArchive saved;
    warm.trainer->optimizer().save(saved);
    std::stringstream bytes;
    saved.save_to(bytes);
    torch::serialize::InputArchive loaded;
    loaded.load_from(bytes);
    replicas[0].trainer->optimizer().load(loaded);
    replicas[0].trainer->resume_after_epoch(1);
  }
  test::on_both_ranks([&](int rank) {
    replicas[rank].trainer->synchronize_ranks();
    for (int step = 0; step < 2; ++step) {
      replicas[rank].trainer->train_step(train.inputs.slice(0, 16, 32),
                                         train.targets.slice(0, 16, 32));
    }
  });
  const auto rank0 = replicas[0].model->parameters(), rank1 = replicas[1].model->parameters();
  for (std::size_t i = 0; i < rank0.size(); ++i)
    EXPECT_TRUE(rank0[i].equal(rank1[i])) << "parameter " << i;
  EXPECT_EQ(replicas[1].trainer->current_learning_rate(),
            replicas[0].trainer->current_learning_rate());
}

}  // namespace
}  // namespace pelab
