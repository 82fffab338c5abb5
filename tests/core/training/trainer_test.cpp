// The Trainer's learning-rate schedules and its steps, on a tiny marker_position model.

#include "pelab/training/trainer.h"

#include <cmath>
#include <memory>

#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/config/manifest.h"
#include "pelab/plugins/registry.h"
#include "test_support.h"

namespace pelab {
namespace {

class TrainerTest : public ::testing::Test {
 protected:
  // 64 training samples in batches of 16: 4 steps an epoch.
  std::unique_ptr<Trainer> make(const std::vector<std::string>& train_overrides,
                                const std::vector<std::string>& model_overrides = {},
                                const std::string& pe = "") {
    const std::string manifest = R"([experiment]
name = "trainer"
seeds = [1]
[task]
plugin = "marker_position"
tokens = 6
train_samples = 64
test_samples = 16
[model]
layers = 1
d_model = 8
heads = 1
[pe]
plugin = "learned"
[train]
lr = 0.01
batch_size = 16
epochs = 10
)";
    std::vector<std::string> overrides;
    for (const auto& text : train_overrides)
      overrides.push_back("train." + text);
    for (const auto& text : model_overrides)
      overrides.push_back("model." + text);
    if (!pe.empty()) overrides.push_back("pe=" + pe);
    const RunConfig config =
        Manifest::from_string(manifest, "trainer.toml", registry_, overrides).runs().front();
    torch::manual_seed(1);
    task_ = registry_.create_task(config.task);
    const Layout layout = task_->layout();
    model_ = std::make_shared<TransformerEncoder>(
        ModelConfig::from_params(config.model), task_->input_size(), task_->objective(),
        [&](const ModelShape& shape) {
          return registry_.create_positional_encoding(config.pe, layout, shape);
        });
    return std::make_unique<Trainer>(*model_, *task_, TrainConfig::from_params(config.train));
  }

  Registry registry_ = test::builtin_registry();
  std::shared_ptr<Task> task_;
  std::shared_ptr<TransformerEncoder> model_;
};

// The losses of two epochs and the evaluation after each.
struct Trace {
  std::vector<double> losses;
  std::vector<MetricRow> rows;
};

Trace two_epochs(Trainer& trainer) {
  Trace trace;
  for (int epoch = 1; epoch <= 2; ++epoch) {
    trace.losses.push_back(trainer.train_epoch());
    const auto rows = trainer.evaluate(epoch);
    trace.rows.insert(trace.rows.end(), rows.begin(), rows.end());
  }
  return trace;
}

double value_of(const std::vector<MetricRow>& rows, std::int64_t epoch, const std::string& split,
                const std::string& metric) {
  for (const auto& row : rows) {
    if (row.epoch == epoch && row.split == split && row.group == "all" && row.metric == metric)
      return row.value;
  }
  ADD_FAILURE() << "no row " << split << "/" << metric << " at epoch " << epoch;
  return std::nan("");
}

// Evaluating with dropout on (the paper's published code), off, or both ways leaves training
// the same: evaluation restores the generator it draws from.
TEST_F(TrainerTest, EvalDropoutChangesEvaluationNotTraining) {
  const Trace off = two_epochs(*make({"eval_dropout=\"off\""}, {"pe_dropout=0.5"}));
  const Trace on = two_epochs(*make({"eval_dropout=\"on\""}, {"pe_dropout=0.5"}));
  const Trace both = two_epochs(*make({"eval_dropout=\"both\""}, {"pe_dropout=0.5"}));
  EXPECT_EQ(off.losses, on.losses);
  EXPECT_EQ(off.losses, both.losses);
  for (const char* metric : {"loss", "accuracy"}) {
    EXPECT_EQ(value_of(both.rows, 2, "test", metric), value_of(off.rows, 2, "test", metric));
    EXPECT_EQ(value_of(both.rows, 2, "test_dropout", metric), value_of(on.rows, 2, "test", metric));
  }
  // Half the PE'd tokens dropped: evaluation with dropout is another (worse) model.
  EXPECT_NE(value_of(on.rows, 2, "test", "loss"), value_of(off.rows, 2, "test", "loss"));
  // Without dropout in the model, "on" evaluates the same model as "off".
  const Trace plain_off = two_epochs(*make({"eval_dropout=\"off\""}));
  const Trace plain_both = two_epochs(*make({"eval_dropout=\"both\""}));
  EXPECT_EQ(value_of(plain_both.rows, 2, "test_dropout", "loss"),
            value_of(plain_off.rows, 2, "test", "loss"));
}

// Dropout draws from the run's generator while training: another model than without.
TEST_F(TrainerTest, DropoutChangesTraining) {
  const Trace plain = two_epochs(*make({}));
  for (const char* key : {"pe_dropout=0.2", "attention_dropout=0.2", "residual_dropout=0.2"}) {
    const Trace dropped = two_epochs(*make({}, {key}));
    EXPECT_NE(dropped.losses, plain.losses) << key;
    EXPECT_EQ(dropped.losses, two_epochs(*make({}, {key})).losses) << key << ": deterministic";
  }
}

TEST_F(TrainerTest, ConstantIsTheDefault) {
  auto trainer = make({});
  ASSERT_EQ(trainer->steps_per_epoch(), 4);
  for (std::int64_t step : {0, 1, 20, 39})
    EXPECT_DOUBLE_EQ(trainer->learning_rate(step), 0.01);
}

TEST_F(TrainerTest, CosineWithWarmup) {
  // 10 epochs of 4 steps; 1 epoch (4 steps) of warm-up, then 36 steps of cosine to 0.001.
  auto trainer = make({"lr_schedule=\"cosine\"", "warmup_epochs=1", "min_lr=0.001"});
  EXPECT_DOUBLE_EQ(trainer->learning_rate(0), 0.0025);
  EXPECT_DOUBLE_EQ(trainer->learning_rate(3), 0.01);
  EXPECT_DOUBLE_EQ(trainer->learning_rate(4), 0.01);  // the decay starts at its top
  EXPECT_NEAR(trainer->learning_rate(4 + 18), 0.001 + 0.009 * 0.5, 1e-12);  // half-way
  EXPECT_NEAR(trainer->learning_rate(39), 0.001 + 0.009 * 0.5 * (1 + std::cos(M_PI * 35 / 36)),
              1e-12);
  EXPECT_DOUBLE_EQ(trainer->learning_rate(1000), 0.001);  // past the end: min_lr
}

TEST_F(TrainerTest, LinearDecay) {
  auto trainer = make({"lr_schedule=\"linear\""});
  EXPECT_DOUBLE_EQ(trainer->learning_rate(0), 0.01);
  EXPECT_NEAR(trainer->learning_rate(20), 0.005, 1e-12);
  EXPECT_NEAR(trainer->learning_rate(40), 0.0, 1e-12);
}

TEST_F(TrainerTest, StepsApplyTheScheduleToTheOptimizer) {
  auto trainer = make({"lr_schedule=\"linear\""});
  trainer->train_epoch();
  EXPECT_DOUBLE_EQ(trainer->current_learning_rate(), trainer->learning_rate(3));
  EXPECT_DOUBLE_EQ(trainer->optimizer().param_groups().front().options().get_lr(),
                   trainer->learning_rate(3));
  trainer->resume_after_epoch(5);
  EXPECT_DOUBLE_EQ(trainer->current_learning_rate(), trainer->learning_rate(19));
}

// bf16 autocast: the forward pass computes in bfloat16, the parameters and the optimizer stay
// fp32, the loss and the evaluation are fp32 numbers, and the result differs from fp32's only by
// bf16 rounding.
TEST_F(TrainerTest, Bf16AutocastTrainsFp32Parameters) {
  auto fp32 = make({});
  const auto fp32_model = model_;
  const double fp32_loss = fp32->train_epoch();
  auto bf16 = make({"precision=\"bf16\""});
  const double bf16_loss = bf16->train_epoch();
  EXPECT_TRUE(std::isfinite(bf16_loss));
  EXPECT_NE(bf16_loss, fp32_loss);
  EXPECT_NEAR(bf16_loss, fp32_loss, 0.05 * std::abs(fp32_loss));
  for (const auto& parameter : model_->parameters())
    EXPECT_EQ(parameter.scalar_type(), torch::kFloat32);
  for (const MetricRow& row : bf16->evaluate(1))
    EXPECT_TRUE(std::isfinite(row.value)) << row.split << " " << row.metric;
  EXPECT_FALSE(at::autocast::is_cpu_enabled());  // the scope ended with the step
}

// A PE that adds nothing to the tokens (none, rotary, attention biases) leaves the residual stream
// in the projection's bf16, where an additive PE's fp32 table made it fp32: each block reads it in
// its parameters' precision, or LibTorch 1.13's LayerNorm refuses bf16 input with fp32 weights
// ("expected scalar type BFloat16 but found Float").
TEST_F(TrainerTest, Bf16AutocastTrainsWithAPEThatAddsNothing) {
  for (const std::string pe :
       {R"({ plugin = "none" })", R"({ plugin = "rotary_1d" })", R"({ plugin = "alibi" })"}) {
    for (const char* norm : {"norm=\"post\"", "norm=\"pre\""}) {
      SCOPED_TRACE(pe + " " + norm);
      auto bf16 = make({"precision=\"bf16\""}, {norm}, pe);
      EXPECT_TRUE(std::isfinite(bf16->train_epoch()));
      for (const MetricRow& row : bf16->evaluate(1))
        EXPECT_TRUE(std::isfinite(row.value)) << row.split << " " << row.metric;
    }
  }
}

TEST_F(TrainerTest, ANonFiniteLossIsAnErrorNamingTheStep) {
  auto trainer = make({"lr=1e30"});
  try {
    for (int epoch = 0; epoch < 5; ++epoch)
      trainer->train_epoch();
    FAIL() << "expected the loss to blow up at lr 1e30";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("at step"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("lower the learning rate"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pelab
