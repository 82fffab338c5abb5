// A task that pelab does not ship: is a sequence of N binary symbols a palindrome? Half of the
// samples are, half are not (one symbol of a palindrome flipped). The answer depends only on
// which tokens mirror which, so a model must know where its tokens are: a PE's job.

#include <torch/torch.h>

#include <pelab/sdk.h>

namespace {

class PalindromeTask : public pelab::Task {
 public:
  PalindromeTask(std::int64_t tokens, std::int64_t train_samples, std::int64_t test_samples,
                 std::int64_t seed)
      : tokens_(tokens), sizes_{train_samples, test_samples}, seed_(seed) {}

  // Token i sits at coordinate i, visible to the model (coordinate PEs may use it).
  pelab::Layout layout() const override { return pelab::Layout::sequence(tokens_); }
  std::int64_t input_size() const override { return 2; }  // one-hot symbol
  pelab::Objective objective() const override { return pelab::Objective::classification(2); }
  std::vector<std::string> splits() const override { return {"train", "test"}; }

  pelab::Dataset load(const std::string& split) override {
    const bool train = split == "train";
    const std::int64_t samples = train ? sizes_[0] : sizes_[1];
    // The data depend on the task's seed and the split (its stream), never on the run's seed:
    // every run of a sweep sees the same samples, with any standard library.
    auto random =
        pelab::Random::from_seed_sequence(static_cast<std::uint64_t>(seed_), train ? 0 : 1);
    torch::Tensor symbols = torch::empty({samples, tokens_}, torch::kInt64);
    torch::Tensor labels = torch::empty({samples}, torch::kInt64);
    auto s = symbols.accessor<std::int64_t, 2>();
    auto label = labels.accessor<std::int64_t, 1>();
    for (std::int64_t n = 0; n < samples; ++n) {
      for (std::int64_t i = 0; i < (tokens_ + 1) / 2; ++i)
        s[n][i] = s[n][tokens_ - 1 - i] = static_cast<std::int64_t>(random.below(2));
      const bool palindrome = n % 2 == 0;
      if (!palindrome) {
        const auto i = static_cast<std::int64_t>(random.below(tokens_ / 2));
        s[n][i] = 1 - s[n][i];
      }
      label[n] = palindrome ? 1 : 0;
    }
    pelab::Dataset dataset;
    dataset.inputs = torch::one_hot(symbols, 2).to(torch::kFloat32);
    dataset.targets = labels;
    return dataset;
  }

 private:
  std::int64_t tokens_;
  std::int64_t sizes_[2];
  std::int64_t seed_;
};

void declare(pelab::ParamSchema& schema) {
  schema.integer("tokens", 8, "Symbols per sequence.").at_least(2);
  schema.integer("train_samples", 512, "Training sequences (half palindromes).").at_least(2);
  schema.integer("test_samples", 256, "Test sequences (half palindromes).").at_least(2);
  schema.integer("seed", 1, "Seed of the data (not of the run).");
}

std::shared_ptr<pelab::Task> create(const pelab::PluginContext& context) {
  const pelab::Params& params = context.params;
  return std::make_shared<PalindromeTask>(params.integer("tokens"), params.integer("train_samples"),
                                          params.integer("test_samples"), params.integer("seed"));
}

}  // namespace

PELAB_REGISTER_PLUGIN("palindrome", "0.1.0",
                      "Is a sequence of binary symbols a palindrome? (an example task)", declare,
                      create)
