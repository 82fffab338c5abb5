// The masked-token regression objective: masks, the model's mask embedding and per-token head,
// the masked MSE it trains on, and the MSE and Pearson r that evaluation reports.

#include <cmath>
#include <memory>

#include <ATen/CPUGeneratorImpl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/base/error.h"
#include "pelab/config/manifest.h"
#include "pelab/interfaces/task.h"
#include "pelab/model/transformer_encoder.h"
#include "pelab/plugins/registry.h"
#include "pelab/training/trainer.h"
#include "test_support.h"
#include "two_ranks.h"

namespace pelab {
namespace {

using ::testing::HasSubstr;

constexpr std::int64_t kTokens = 6;
constexpr std::int64_t kValues = 2;

// Token i's target is a fixed vector of its index, whatever the sample: a masked token can only be
// predicted by knowing which token it is, i.e. from its PE. Inputs are noise around the target.
class IndexTask : public Task {
 public:
  Layout layout() const override { return Layout::sequence(kTokens, /*visible=*/false); }
  std::int64_t input_size() const override { return kValues; }
  Objective objective() const override { return Objective::masked_token_regression(kValues); }
  std::vector<std::string> splits() const override { return {"train", "test", "test_high"}; }

  Dataset load(const std::string& split) override {
    const std::int64_t samples = split == "train" ? 64 : 20;
    const torch::Tensor index = torch::arange(kTokens, torch::kFloat32) / kTokens;
    const torch::Tensor target = torch::stack({index, 1.0 - 2.0 * index}, 1);  // [tokens, 2]
    Dataset data;
    data.targets = target.unsqueeze(0).expand({samples, kTokens, kValues}).contiguous();
    auto generator = at::make_generator<at::CPUGeneratorImpl>(split.size());
    data.inputs = data.targets + 0.1 * torch::randn({samples, kTokens, kValues}, generator);
    data.groups = torch::arange(samples, torch::kInt64).remainder(2);
    data.group_names = {"even", "odd"};
    data.mask_ratio = split == "test_high" ? 0.9 : 0.5;
    return data;
  }
};

ModelConfig small_model() {
  ModelConfig config;
  config.layers = 1;
  config.d_model = 8;
  config.heads = 1;
  config.mlp_ratio = 2;
  return config;
}

TrainConfig fast_training() {
  TrainConfig config;
  config.lr = 0.01;
  config.batch_size = 16;
  config.epochs = 1;
  return config;
}

class MaskedObjectiveTest : public ::testing::Test {
 protected:
  std::shared_ptr<TransformerEncoder> make_model(const std::string& pe) {
    torch::manual_seed(3);
    const Layout layout = task_.layout();
    const RunConfig config =
        Manifest::from_string(
            "[experiment]\nname = \"m\"\n[task]\nplugin = \"marker_position\"\n"
            "[pe]\nplugin = \"" +
                pe + "\"\n",
            "m.toml", registry_, {})
            .runs()
            .front();
    return std::make_shared<TransformerEncoder>(
        small_model(), task_.input_size(), task_.objective(), [&](const ModelShape& shape) {
          return registry_.create_positional_encoding(config.pe, layout, shape);
        });
  }

  // A fresh model in evaluation mode on the test split, half of each sample's tokens masked.
  struct MaskedForward {
    std::shared_ptr<TransformerEncoder> model;
    Dataset data;
    torch::Tensor mask;
    torch::Tensor out;  // the model's predictions [samples, tokens, values]
  };
  MaskedForward masked_forward(const std::string& pe) {
    MaskedForward result{make_model(pe), task_.load("test"), {}, {}};
    result.model->eval();
    result.mask = draw_token_masks(result.data.size(), kTokens, 0.5,
                                   at::make_generator<at::CPUGeneratorImpl>(1));
    torch::NoGradGuard no_grad;
    result.out = result.model->forward(result.data.inputs, {}, result.mask);
    return result;
  }

  Registry registry_ = test::builtin_registry();
  IndexTask task_;
};

TEST(DrawTokenMasks, MasksExactlyTheRoundedCountPerSample) {
  auto generator = at::make_generator<at::CPUGeneratorImpl>(7);
  const torch::Tensor masks = draw_token_masks(50, 10, 0.34, generator);
  EXPECT_EQ(masks.scalar_type(), torch::kBool);
  EXPECT_EQ(masks.sizes(), (std::vector<std::int64_t>{50, 10}));
  EXPECT_TRUE(masks.sum(1).eq(3).all().item<bool>());
  // Every token is masked in some sample: the choice is random, not the first tokens.
  EXPECT_TRUE(masks.any(0).all().item<bool>());
  // At least one token, and at most all of them.
  EXPECT_TRUE(draw_token_masks(5, 10, 0.01, generator).sum(1).eq(1).all().item<bool>());
  EXPECT_TRUE(draw_token_masks(5, 10, 1.0, generator).all().item<bool>());
}

TEST(DrawTokenMasks, TheSameSeedGivesTheSameMasks) {
  const auto draw = [](std::uint64_t seed) {
    return draw_token_masks(20, 16, 0.5, at::make_generator<at::CPUGeneratorImpl>(seed));
  };
  EXPECT_TRUE(torch::equal(draw(11), draw(11)));
  EXPECT_FALSE(torch::equal(draw(11), draw(12)));
}

TEST(Objective, NamesAndMetrics) {
  EXPECT_EQ(Objective::classification(4).name(), "classification");
  EXPECT_EQ(Objective::classification(4).metrics(), (std::vector<std::string>{"loss", "accuracy"}));
  const Objective masked = Objective::masked_token_regression(3);
  EXPECT_TRUE(masked.masked());
  EXPECT_EQ(masked.outputs, 3);
  EXPECT_EQ(masked.name(), "masked_token_regression");
  EXPECT_EQ(masked.metrics(), (std::vector<std::string>{"mse", "r"}));
}

// Loaded splits are checked for meaning: an empty one would make its metrics vanish from the
// report, and a NaN in the data would surface epochs later as a NaN loss. Each is named where it
// enters, with the sample.
TEST(DatasetValidation, ALoadedSplitMustHoldFiniteSamples) {
  class Faulty : public IndexTask {
   public:
    Dataset load(const std::string& split) override {
      Dataset data = IndexTask::load(split);
      if (split == "test") return data.subset(torch::zeros({0}, torch::kInt64));
      if (split == "test_high") data.inputs[7][2][1] = std::nan("");
      if (split == "train") data.targets[3][0][0] = INFINITY;
      return data;
    }
  } faulty;
  const auto error_of = [&](const std::string& split) -> std::string {
    try {
      load_checked_split(faulty, split, "my_task");
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_THAT(error_of("test"), HasSubstr("the task plugin 'my_task', split 'test' holds no "
                                          "samples"));
  EXPECT_THAT(error_of("test_high"),
              HasSubstr("the task plugin 'my_task', split 'test_high': its inputs hold a value "
                        "that is not finite (NaN or infinite) in 1 of its 20 samples, the first "
                        "at sample 7"));
  EXPECT_THAT(error_of("train"), HasSubstr("its targets hold a value that is not finite"));
  IndexTask fine;
  EXPECT_NO_THROW(load_checked_split(fine, "train", "my_task"));
}

TEST(DatasetValidation, MaskedTargetsMustBePerTokenFloats) {
  IndexTask task;
  Dataset data = task.load("train");
  const Objective objective = task.objective();
  EXPECT_NO_THROW(data.validate("train", kTokens, kValues, objective));

  Dataset class_targets = data;
  class_targets.targets = torch::zeros({64}, torch::kInt64);
  try {
    class_targets.validate("split 'train'", kTokens, kValues, objective);
    FAIL() << "class targets passed as masked-token targets";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("split 'train': targets must be float32 [samples=64, "
                                    "tokens=6, outputs=2]"));
    EXPECT_THAT(e.what(), HasSubstr("got int64 [64]"));  // what it received
  }
  // Loaded through the check that the Trainer and `pelab validate` share, the plugin is named.
  class WrongTargets : public IndexTask {
   public:
    Dataset load(const std::string& split) override {
      Dataset data = IndexTask::load(split);
      data.targets =
          data.targets.select(2, 0);  // [samples, tokens]: a value per token, not outputs
      return data;
    }
  } wrong;
  try {
    load_checked_split(wrong, "train", "my_task");
    FAIL() << "per-token targets without their outputs passed";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("the task plugin 'my_task', split 'train': targets must be "
                                    "float32 [samples=64, tokens=6, outputs=2] for a masked-token "
                                    "regression (each token's values to predict), got float32 "
                                    "[64, 6]"));
  }
  Dataset no_ratio = data;
  no_ratio.mask_ratio = 0.0;
  EXPECT_THROW(no_ratio.validate("train", kTokens, kValues, objective), Error);
  Dataset empty_mask = data;
  empty_mask.masks = torch::zeros({64, kTokens}, torch::kBool);
  try {
    empty_mask.validate("train", kTokens, kValues, objective);
    FAIL() << "a sample without a masked token passed";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("every sample must mask a token"));
  }
}

TEST_F(MaskedObjectiveTest, PredictsEveryTokenAndHidesTheMaskedInputs) {
  const auto [model, data, mask, out] = masked_forward("learned");
  torch::NoGradGuard no_grad;
  EXPECT_EQ(out.sizes(), (std::vector<std::int64_t>{data.size(), kTokens, kValues}));
  // What a masked token held makes no difference to any prediction.
  const torch::Tensor scrambled =
      torch::where(mask.unsqueeze(-1), torch::randn_like(data.inputs) * 100, data.inputs);
  EXPECT_TRUE(torch::allclose(model->forward(scrambled, {}, mask), out));
  // Without the mask it would.
  EXPECT_FALSE(torch::allclose(model->forward(scrambled, {}, torch::zeros_like(mask)),
                               model->forward(data.inputs, {}, torch::zeros_like(mask))));
  try {
    model->forward(data.inputs);
    FAIL() << "a masked-token model ran without a mask";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("needs the token mask"));
  }
}

TEST_F(MaskedObjectiveTest, WithoutAPETheMaskedTokensAreIndistinguishable) {
  const auto [model, data, mask, out] = masked_forward("none");
  for (std::int64_t s = 0; s < data.size(); ++s) {
    const torch::Tensor masked = out[s].index({mask[s]});
    EXPECT_TRUE(torch::allclose(masked, masked[0].expand_as(masked), 1e-5, 1e-6)) << s;
  }
}

TEST_F(MaskedObjectiveTest, ClassificationModelsHaveNoMaskEmbedding) {
  TransformerEncoder model(small_model(), 2, Objective::classification(3), {});
  for (const auto& item : model.named_parameters())
    EXPECT_EQ(item.key().find("mask_embedding"), std::string::npos);
  auto masked = make_model("none");
  EXPECT_TRUE(masked->named_parameters().contains("mask_embedding"));
}

// Evaluation's MSE and r are those of the masked values, pooled over the split (and a group's
// samples), under the split's fixed masks.
TEST_F(MaskedObjectiveTest, EvaluationScoresTheMaskedValues) {
  auto model = make_model("learned");
  Trainer trainer(*model, task_, fast_training());
  trainer.train_epoch();
  const std::vector<MetricRow> rows = trainer.evaluate(1);
  const auto value = [&](const std::string& split, const std::string& group,
                         const std::string& metric) {
    for (const auto& row : rows) {
      if (row.split == split && row.group == group && row.metric == metric) return row.value;
    }
    ADD_FAILURE() << "no row " << split << "/" << group << "/" << metric;
    return std::nan("");
  };
  model->eval();
  torch::NoGradGuard no_grad;
  for (const std::string split : {"train", "test", "test_high"}) {
    const Dataset& data = trainer.dataset(split);
    ASSERT_TRUE(data.masks.defined());
    const torch::Tensor out = model->forward(data.inputs, {}, data.masks);
    for (const std::string group : {"all", "odd"}) {
      torch::Tensor mask = data.masks;
      if (group == "odd") mask = mask & data.groups.eq(1).unsqueeze(1);
      const torch::Tensor p = out.index({mask}).to(torch::kFloat64).flatten();
      const torch::Tensor t = data.targets.index({mask}).to(torch::kFloat64).flatten();
      const double mse = (p - t).pow(2).mean().item<double>();
      const torch::Tensor pc = p - p.mean(), tc = t - t.mean();
      const double r =
          ((pc * tc).sum() / (pc.pow(2).sum() * tc.pow(2).sum()).sqrt()).item<double>();
      EXPECT_NEAR(value(split, group, "mse"), mse, 1e-6 * mse) << split << " " << group;
      EXPECT_NEAR(value(split, group, "r"), r, 1e-6) << split << " " << group;
    }
  }
  // The high-mask split masks 90% of the tokens: round(0.9 * 6) = 5 of 6.
  EXPECT_TRUE(trainer.dataset("test_high").masks.sum(1).eq(5).all().item<bool>());
  EXPECT_TRUE(trainer.dataset("test").masks.sum(1).eq(3).all().item<bool>());
}

// Evaluation masks depend on the split alone: every run and every epoch scores the same tokens.
TEST_F(MaskedObjectiveTest, EvaluationMasksAreFixedAcrossRunsAndEpochs) {
  auto first = make_model("learned");
  Trainer a(*first, task_, fast_training());
  const std::vector<MetricRow> before = a.evaluate(0);
  EXPECT_EQ(before.size(), 3u * 2u * 3u);  // 3 splits x (all, even, odd) x (mse, r)
  torch::manual_seed(99);                  // another run's seed
  auto second = make_model("learned");
  Trainer b(*second, task_, fast_training());
  for (const std::string split : {"train", "test", "test_high"})
    EXPECT_TRUE(torch::equal(a.dataset(split).masks, b.dataset(split).masks)) << split;
  const std::vector<MetricRow> again = a.evaluate(0);
  for (std::size_t i = 0; i < before.size(); ++i)
    EXPECT_EQ(before[i].value, again[i].value) << i;
}

// Training draws fresh masks every step from the run's generator: the same seed trains the same
// model, and a learned PE learns to predict the masked tokens that NoPE cannot tell apart.
TEST_F(MaskedObjectiveTest, TrainingLearnsTheMaskedTokensThroughThePE) {
  const auto train = [&](const std::string& pe, std::int64_t epochs) {
    auto model = make_model(pe);
    TrainConfig config = fast_training();
    config.epochs = epochs;
    Trainer trainer(*model, task_, config);
    for (std::int64_t e = 0; e < epochs; ++e)
      trainer.train_epoch();
    std::map<std::string, double> final;
    for (const auto& row : trainer.evaluate(epochs)) {
      if (row.group == "all") final[row.split + "/" + row.metric] = row.value;
    }
    return final;
  };
  const auto learned = train("learned", 40);
  EXPECT_EQ(learned, train("learned", 40));  // deterministic by seed
  const auto none = train("none", 40);
  EXPECT_LT(learned.at("test/mse"), 0.01);
  EXPECT_GT(learned.at("test/r"), 0.95);
  EXPECT_GT(none.at("test/mse"), 10 * learned.at("test/mse"));
}

// Data-parallel over two ranks, a step's loss is the mean over all the batch's masked values,
// not the mean of each share's: the steps match one process's, shares of unequal size included.
TEST_F(MaskedObjectiveTest, DataParallelStepsMatchOneProcess) {
  // SGD, as in data_parallel_test.cpp: its update does not magnify rounding.
  TrainConfig sgd = fast_training();
  sgd.optimizer = "sgd";
  sgd.momentum = 0.9;
  auto single_model = make_model("learned");
  Trainer single(*single_model, task_, sgd);
  auto ranks = test::connect_two_ranks(std::chrono::seconds(60));
  std::array<std::shared_ptr<TransformerEncoder>, 2> models{make_model("learned"),
                                                            make_model("learned")};
  std::array<std::unique_ptr<Trainer>, 2> trainers;
  for (int rank = 0; rank < 2; ++rank)
    trainers[rank] = std::make_unique<Trainer>(*models[rank], task_, sgd, ranks[rank].get());
  const Dataset& train = single.dataset("train");
  // Uneven masks too: the first share of the odd batch masks more tokens than the second.
  auto generator = at::make_generator<at::CPUGeneratorImpl>(5);
  std::vector<std::pair<std::int64_t, std::int64_t>> batches = {{0, 16}, {16, 27}, {27, 43}};
  std::vector<torch::Tensor> masks;
  for (const auto& [begin, end] : batches)
    masks.push_back(draw_token_masks(end - begin, kTokens, begin == 16 ? 0.3 : 0.5, generator));
  masks[1].slice(0, 0, 3).fill_(true);
  std::vector<double> expected;
  for (std::size_t b = 0; b < batches.size(); ++b) {
    const auto [begin, end] = batches[b];
    expected.push_back(single.train_step(train.inputs.slice(0, begin, end),
                                         train.targets.slice(0, begin, end), masks[b]));
  }
  std::array<std::vector<double>, 2> losses;
  test::on_both_ranks([&](int rank) {
    for (std::size_t b = 0; b < batches.size(); ++b) {
      const auto [begin, end] = batches[b];
      losses[rank].push_back(trainers[rank]->train_step(
          train.inputs.slice(0, begin, end), train.targets.slice(0, begin, end), masks[b]));
    }
  });
  EXPECT_EQ(losses[0], losses[1]);
  for (std::size_t b = 0; b < batches.size(); ++b)
    EXPECT_NEAR(losses[0][b], expected[b], 1e-5 * expected[b]) << b;
  const auto reference = single_model->parameters(), parallel = models[0]->parameters();
  for (std::size_t i = 0; i < reference.size(); ++i) {
    EXPECT_TRUE(torch::allclose(parallel[i], reference[i], 1e-5, 1e-6)) << "parameter " << i;
    EXPECT_TRUE(parallel[i].equal(models[1]->parameters()[i])) << "parameter " << i;
  }
}

}  // namespace
}  // namespace pelab
