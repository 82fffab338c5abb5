// The trained model's attention maps, averaged over the samples of a split: [blocks, heads, N, N]
// (saved as the array `maps`), their mean entropy per block, and optionally their cosine
// similarity, block by block, to the maps another run saved (the paper compares the learned-PE
// models' maps with those of the 2D sinusoidal model).

#include <cmath>

#include <torch/torch.h>

#include <pelab/sdk.h>

#include "../common/probe_math.h"

namespace pelab {
namespace {

namespace pm = probe_math;

class AttentionProbe : public Probe {
 public:
  AttentionProbe(std::string split, std::int64_t max_samples, std::int64_t batch_size,
                 std::string reference_run)
      : split_(std::move(split)),
        max_samples_(max_samples),
        batch_size_(batch_size),
        reference_run_(std::move(reference_run)) {}

  ProbeResult run(const ProbeContext& context) override {
    ProbeResult result;
    if (context.model == nullptr || context.task == nullptr) {
      result.note = "no trained model (or task) at hand: attention maps need the checkpoint";
      return result;
    }
    const std::vector<std::string> splits = context.task->splits();
    PELAB_CHECK(!splits.empty(), "the task has no splits");
    std::string split = split_;
    if (split.empty()) split = splits.size() > 1 ? splits[1] : splits[0];
    PELAB_CHECK(std::find(splits.begin(), splits.end(), split) != splits.end(),
                "the task has no split '{}'; its splits are {}", split, fmt::join(splits, ", "));
    const Dataset data = context.task->load(split);
    const std::int64_t samples =
        max_samples_ > 0 ? std::min(max_samples_, data.size()) : data.size();
    PELAB_CHECK(samples > 0, "split '{}' has no samples", split);

    std::vector<torch::Tensor> sums;  // per block: [heads, N, N]
    for (std::int64_t start = 0; start < samples; start += batch_size_) {
      const std::int64_t end = std::min(samples, start + batch_size_);
      const auto maps = context.model->attention_maps(data.inputs.slice(0, start, end));
      if (sums.empty()) sums.resize(maps.size());
      for (std::size_t b = 0; b < maps.size(); ++b) {
        const torch::Tensor batch_sum = pm::f64(maps[b]).sum(0);
        sums[b] = sums[b].defined() ? sums[b] + batch_sum : batch_sum;
      }
    }
    const torch::Tensor mean = torch::stack(sums) / static_cast<double>(samples);

    std::vector<double> entropy;
    for (std::int64_t b = 0; b < mean.size(0); ++b) {
      const torch::Tensor p = mean[b];
      entropy.push_back(-(p * p.clamp_min(1e-300).log()).sum(-1).mean().item<double>());
    }
    pm::add_per_block(result, "entropy", entropy);
    result.headlines.push_back(
        {"entropy", Better::kNeither, "mean entropy of the attention rows (nats)"});
    result.arrays["maps"] = mean;

    if (!reference_run_.empty()) {
      // The maps its own attention probe wrote (the output of a probe listed once).
      const torch::Tensor reference = pm::f64(reference_maps());
      PELAB_CHECK(reference.sizes() == mean.sizes(),
                  "the reference maps of '{}' have shape [{}] but this run's maps have shape [{}]: "
                  "compare runs with the same blocks, heads and tokens",
                  reference_run_, shape(reference), shape(mean));
      std::vector<double> similarity;
      for (std::int64_t b = 0; b < mean.size(0); ++b) {
        const torch::Tensor x = mean[b].flatten();
        const torch::Tensor y = reference[b].flatten();
        const double denominator = x.norm().item<double>() * y.norm().item<double>();
        similarity.push_back(denominator > 0 ? (x * y).sum().item<double>() / denominator
                                             : pm::kNaN);
      }
      pm::add_per_block(result, "similarity", similarity);
      // Compared with a reference run, the likeness is what the reader came for: it leads.
      result.headlines.insert(result.headlines.begin(),
                              {"similarity", Better::kHigher,
                               "cosine similarity of the attention maps with the reference run's"});
    }
    result.note = fmt::format("mean over {} samples of split '{}'", samples, split);
    return result;
  }

 private:
  torch::Tensor reference_maps() const {
    try {
      return FinishedRun(reference_run_).probe_array("attention", "maps");
    } catch (const Error& e) {
      throw Error(fmt::format("reference_run: {}", e.what()));
    }
  }

  static std::string shape(const torch::Tensor& t) {
    std::string out;
    for (std::int64_t i = 0; i < t.dim(); ++i)
      out += (i ? ", " : "") + std::to_string(t.size(i));
    return out;
  }

  std::string split_;
  std::int64_t max_samples_;
  std::int64_t batch_size_;
  std::string reference_run_;
};

void declare(ParamSchema& schema) {
  schema.string("split", "",
                "The split whose samples are averaged (default: the task's first evaluation "
                "split, e.g. `test`).");
  schema.integer("max_samples", 1024, "At most this many samples of the split (0: all).")
      .at_least(0);
  schema.integer("batch_size", 256, "Samples per forward pass.").in_range(1, 1000000);
  schema.string("reference_run", "",
                fmt::format("A run folder whose {} to compare with (cosine similarity per "
                            "block); empty: no comparison.",
                            FinishedRun::probe_array_file("attention", "maps")));
}

std::shared_ptr<Probe> create(const PluginContext& context) {
  const Params& params = context.params;
  return std::make_shared<AttentionProbe>(params.string("split"), params.integer("max_samples"),
                                          params.integer("batch_size"),
                                          params.string("reference_run"));
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("attention", "1.0.0",
                      "Attention maps per block averaged over a split; similarity to another run's",
                      pelab::declare, pelab::create)
