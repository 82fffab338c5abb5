// A small synthetic 1D task: one token of the sequence carries a marker, the others random
// distractor values; the model must say which position holds the marker. The readout token sees
// the marker's content only through attention, so without positional information the task cannot
// be solved: a quick check that a PE carries position.

#include <torch/torch.h>

#include <pelab/sdk.h>

namespace pelab {
namespace {

class MarkerPositionTask : public Task {
 public:
  explicit MarkerPositionTask(const Params& params)
      : tokens_(params.integer("tokens")),
        train_samples_(params.integer("train_samples")),
        test_samples_(params.integer("test_samples")),
        data_seed_(params.integer("data_seed")) {}

  Layout layout() const override { return Layout::sequence(tokens_, /*visible=*/true); }
  std::int64_t input_size() const override { return 2; }
  Objective objective() const override { return Objective::classification(tokens_); }
  // Without test samples (a benchmark's workload) there is no test split to evaluate: every split
  // a task declares must hold samples.
  std::vector<std::string> splits() const override {
    if (test_samples_ == 0) return {"train"};
    return {"train", "test"};
  }

  Dataset load(const std::string& split) override {
    // Each split has its own stream, independent of the run's seed, so every run of a sweep
    // trains and tests on the same samples; pelab::Random's draws are the same with every
    // standard library (std's distributions are not).
    Random random =
        Random::from_engine_seed(static_cast<std::uint64_t>(data_seed_) * 2 + (split == "test"));
    const std::int64_t samples = split == "train" ? train_samples_ : test_samples_;

    Dataset data;
    data.inputs = torch::zeros({samples, tokens_, 2});
    data.targets = torch::empty({samples}, torch::kInt64);
    data.groups = torch::empty({samples}, torch::kInt64);
    data.group_names = {"first_half", "second_half"};
    auto inputs = data.inputs.accessor<float, 3>();
    for (std::int64_t s = 0; s < samples; ++s) {
      const auto marker =
          static_cast<std::int64_t>(random.below(static_cast<std::uint64_t>(tokens_)));
      for (std::int64_t t = 0; t < tokens_; ++t)  // uniform on [-1, 1]
        inputs[s][t][1] = static_cast<float>(2.0 * random.uniform() - 1.0);
      inputs[s][marker][0] = 1.0f;
      data.targets[s] = marker;
      data.groups[s] = marker < tokens_ / 2 ? 0 : 1;
    }
    return data;
  }

 private:
  std::int64_t tokens_, train_samples_, test_samples_, data_seed_;
};

void declare(ParamSchema& schema) {
  schema.integer("tokens", 8, "Sequence length (and number of classes).").in_range(2, 4096);
  schema.integer("train_samples", 512, "Training samples.").at_least(1);
  schema.integer("test_samples", 256, "Test samples; 0: no test split.").at_least(0);
  schema.integer("data_seed", 0, "Seed of the data (independent of the run's seed).");
}

std::shared_ptr<Task> create(const PluginContext& context) {
  return std::make_shared<MarkerPositionTask>(context.params);
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("marker_position", "1.0.0",
                      "1D synthetic: which position of the sequence holds the marker",
                      pelab::declare, pelab::create)
