// Causal tests of what a trained model's PE contributes. The model is evaluated again on every
// split of its task with its PE tables replaced, and each split's metrics are compared with the
// same model's own evaluation:
//   permuted    the rows shuffled by k seeded permutations (mean, and the spread over them): does
//               the model use *where* each row is, or only that rows are there?
//   reset       the PE's initial values (the snapshot of epoch 0): how much of what the model does
//               is the PE's learning rather than the rest of the network's?
//   transplant  the final PE of another finished run (reference_run: same layout and width), e.g.
//               a sigma 0.2 run's PE in a sigma 2.0 model and back
// for each block's PE alone and for all blocks at once (one permutation for all: a consistent
// relabelling of the positions). A change is "worse by": the drop of an accuracy or r, the rise of
// a loss or MSE, so that a positive value means the model relied on what was replaced.
//
// Interventions replace the tables of additive table PEs (learned, random_fixed, sinusoidal, ...),
// or, with `tensor`, any parameter a PE registers: a rotary PE's learned "positions" or "angles"
// (rows permuted, reset, transplanted as a table's), or its "frequencies" (reset and transplant
// only: their rows are not tokens). A PE without the tensor is left as it is, with a note that
// says why and what it has.

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <torch/torch.h>

#include <pelab/sdk.h>

#include "../common/probe_math.h"

namespace pelab {
namespace {

namespace pm = probe_math;

// "loss" and "mse" improve downwards; accuracy, r and anything else upwards.
bool lower_is_better(const std::string& metric) {
  return metric == "loss" || metric == "mse";
}

// "<split>_<metric>" -> value, for group "all".
using Scores = std::map<std::string, double>;

class InterventionProbe : public Probe {
 public:
  InterventionProbe(std::int64_t permutations, std::int64_t seed, std::string reference_run,
                    std::string tensor)
      : permutations_(permutations),
        seed_(seed),
        reference_run_(std::move(reference_run)),
        tensor_(std::move(tensor)) {}

  ProbeResult run(const ProbeContext& context) override {
    ProbeResult result;
    PELAB_CHECK(context.model != nullptr && context.task != nullptr,
                "it re-evaluates the trained model on its task: run it on a run with a checkpoint");
    TrainedModel& model = *context.model;
    name_.clear();
    std::vector<torch::Tensor> saved;  // the trained tensors, one per distinct PE
    for (std::int64_t pe = 0; pe < model.pe_count(); ++pe) {
      std::string why_not;
      const auto tensors = model.replaceable_tensors(pe, &why_not);
      if (name_.empty()) name_ = resolved_name(tensors);
      const auto found = tensors.find(name_);
      if (found == tensors.end()) {
        std::vector<std::string> names;
        for (const auto& entry : tensors)
          names.push_back(entry.first);
        result.note = tensors.empty() ? why_not
                                      : fmt::format(
                                            "the PE has no tensor '{}' to replace; it has "
                                            "{}: set tensor to one of them",
                                            name_, fmt::join(names, ", "));
        return result;
      }
      saved.push_back(found->second);
    }
    if (saved.empty()) {
      result.note = "the model has no PE (pe = none): no intervention changes it";
      return result;
    }
    torch::NoGradGuard no_grad;
    const auto evaluate = [&](const std::vector<PETensorReplacement>& replacements) {
      Scores scores;
      for (const MetricRow& row : model.evaluate(replacements)) {
        if (row.group == "all") scores[row.split + "_" + row.metric] = row.value;
      }
      return scores;
    };
    const Scores baseline = evaluate({});
    for (const auto& [key, value] : baseline)
      result.scalars["baseline_" + key] = value;

    // Evaluates with `replacement(b)` in block b for each b in `blocks`.
    const auto with = [&](const std::vector<std::size_t>& blocks, const auto& replacement) {
      std::vector<PETensorReplacement> replacements;
      for (std::size_t b : blocks)
        replacements.push_back({static_cast<std::int64_t>(b), name_, replacement(b)});
      return worse_by(baseline, evaluate(replacements));
    };
    std::vector<std::size_t> all(saved.size());
    for (std::size_t b = 0; b < all.size(); ++b)
      all[b] = b;

    // Permuted rows, where the rows are the tokens.
    auto generator = at::detail::createCPUGenerator(static_cast<std::uint64_t>(seed_));
    const bool rows_are_tokens = saved.front().size(0) == context.layout.tokens;
    std::vector<torch::Tensor> permutations;
    for (std::int64_t k = 0; k < permutations_; ++k)
      permutations.push_back(torch::randperm(saved.front().size(0), generator, torch::kLong));
    const auto permuted = [&](const std::vector<std::size_t>& blocks) {
      std::vector<Scores> each;
      for (const torch::Tensor& order : permutations)
        each.push_back(
            with(blocks, [&](std::size_t b) { return saved[b].index_select(0, order); }));
      return each;
    };
    if (rows_are_tokens) {
      record(result, "permuted", permuted(all), permuted_blocks(permuted, saved.size()));
    } else {
      result.note = fmt::format(
          "the rows of '{}' are not the tokens: the permuted intervention "
          "was left out",
          name_);
    }

    // Reset to the initial PE.
    const torch::Tensor initial = context.snapshots.empty() || context.snapshots.front().epoch != 0
                                      ? torch::Tensor()
                                      : snapshot_tensor(context.snapshots.front());
    if (initial.defined()) {
      check_shape(initial, saved, "the run's initial snapshot");
      const auto initial_of = [&](std::size_t b) { return initial[b].to(saved[b].dtype()); };
      record(result, "reset", {with(all, initial_of)}, per_block(with, initial_of, saved.size()));
    } else {
      result.note = "no snapshot of epoch 0: the reset intervention was left out";
    }

    // Transplanted from another run.
    if (!reference_run_.empty()) {
      const torch::Tensor reference = reference_tensors(saved);
      const auto reference_of = [&](std::size_t b) { return reference[b].to(saved[b].dtype()); };
      record(result, "transplant", {with(all, reference_of)},
             per_block(with, reference_of, saved.size()));
    }
    declare_headlines(result, *context.task);
    return result;
  }

 private:
  static Scores worse_by(const Scores& baseline, const Scores& intervened) {
    Scores change;
    for (const auto& [key, value] : baseline) {
      const auto it = intervened.find(key);
      if (it == intervened.end()) continue;
      const std::string metric = key.substr(key.rfind('_') + 1);
      change[key] = lower_is_better(metric) ? it->second - value : value - it->second;
    }
    return change;
  }

  template <typename Permuted>
  static std::vector<std::vector<Scores>> permuted_blocks(const Permuted& permuted,
                                                          std::size_t blocks) {
    std::vector<std::vector<Scores>> out;
    for (std::size_t b = 0; b < blocks; ++b)
      out.push_back(permuted({b}));
    return out;
  }

  template <typename With, typename Replacement>
  static std::vector<std::vector<Scores>> per_block(const With& with,
                                                    const Replacement& replacement,
                                                    std::size_t blocks) {
    std::vector<std::vector<Scores>> out;
    for (std::size_t b = 0; b < blocks; ++b)
      out.push_back({with(std::vector<std::size_t>{b}, replacement)});
    return out;
  }

  // "<kind>_all_<split>_<metric>" (all blocks at once; with several repeats their mean, and
  // "_std" their spread) and "<kind>_<split>_<metric>" per block with their mean over blocks.
  static void record(ProbeResult& result, const std::string& kind, const std::vector<Scores>& all,
                     const std::vector<std::vector<Scores>>& blocks) {
    const auto mean_of = [](const std::vector<Scores>& repeats, const std::string& key) {
      double sum = 0.0;
      for (const Scores& scores : repeats)
        sum += scores.at(key);
      return sum / static_cast<double>(repeats.size());
    };
    for (const auto& [key, value] : all.front()) {
      const double mean = mean_of(all, key);
      result.scalars[fmt::format("{}_all_{}", kind, key)] = mean;
      if (all.size() > 1) {
        double squares = 0.0;
        for (const Scores& scores : all)
          squares += (scores.at(key) - mean) * (scores.at(key) - mean);
        result.scalars[fmt::format("{}_all_{}_std", kind, key)] =
            std::sqrt(squares / static_cast<double>(all.size() - 1));
      }
      std::vector<double> per_block;
      for (const auto& repeats : blocks)
        per_block.push_back(mean_of(repeats, key));
      pm::add_per_block(result, fmt::format("{}_{}", kind, key), per_block);
    }
  }

  // "auto": the first of the PE's learned position tensors by pelab's names, else its table.
  std::string resolved_name(const std::map<std::string, torch::Tensor>& tensors) const {
    if (tensor_ != "auto") return tensor_;
    for (const char* name : {"positions", "angles", "table"})
      if (tensors.count(name)) return name;
    return "table";
  }

  // The replaced tensor in a snapshot, [PEs, ...]: the tables, or the parameter of that name.
  torch::Tensor snapshot_tensor(const PESnapshot& snapshot) const {
    if (name_ == "table" && snapshot.tables.defined()) return snapshot.tables;
    const auto found = snapshot.tensors.find(name_);
    return found == snapshot.tensors.end() ? torch::Tensor() : found->second;
  }

  void check_shape(const torch::Tensor& tensors, const std::vector<torch::Tensor>& saved,
                   const std::string& what) const {
    std::vector<std::int64_t> expected = {static_cast<std::int64_t>(saved.size())};
    for (const std::int64_t size : saved.front().sizes())
      expected.push_back(size);
    PELAB_CHECK(tensors.sizes().vec() == expected,
                "{} holds the PE's '{}' of shape [{}], but this model's is [{}] (PEs first): a "
                "transplant needs the same layout, width and PE placement",
                what, name_, fmt::join(tensors.sizes().vec(), ", "), fmt::join(expected, ", "));
  }

  torch::Tensor reference_tensors(const std::vector<torch::Tensor>& saved) const {
    const FinishedRun reference(reference_run_);
    const std::vector<PESnapshot> snapshots = reference.snapshots();
    const torch::Tensor last =
        snapshots.empty() ? torch::Tensor() : snapshot_tensor(snapshots.back());
    PELAB_CHECK(last.defined(),
                "reference_run '{}' has no PE '{}' in {}: give a finished run folder ({}) of a "
                "PE that has it",
                reference_run_, name_, reference.snapshot_folder(), FinishedRun::folder_layout());
    check_shape(
        last, saved,
        fmt::format("reference_run '{}' (epoch {})", reference_run_, snapshots.back().epoch));
    return last;
  }

  // The permutation's change on the task's first evaluation split, in its headline metric.
  static void declare_headlines(ProbeResult& result, const Task& task) {
    const std::vector<std::string> splits = task.splits();
    const std::string split = splits.size() > 1 ? splits[1] : splits.front();
    const std::string metric = task.objective().masked() ? "mse" : "accuracy";
    for (const char* kind : {"permuted", "reset", "transplant"}) {
      const std::string key = fmt::format("{}_all_{}_{}", kind, split, metric);
      if (!result.scalars.count(key)) continue;
      const std::string meaning =
          std::string(kind) == "permuted"
              ? "worse by, with the PE's rows shuffled: > 0, the model relies on where each row is"
          : std::string(kind) == "reset"
              ? "worse by, with the PE back at its initial values: > 0, the PE's learning matters"
              : "worse by, with the reference run's PE in its place";
      result.headlines.push_back({key, Better::kNeither, meaning});
    }
  }

  std::int64_t permutations_;
  std::int64_t seed_;
  std::string reference_run_;
  std::string tensor_;
  std::string name_;  // tensor_ resolved for the model at hand ("auto" -> a name)
};

void declare(ParamSchema& schema) {
  schema.integer("permutations", 5, "Seeded random permutations of the PE rows, averaged.")
      .in_range(1, 1000);
  schema.integer("seed", 0, "Seed of the permutations.").at_least(0);
  schema.string(
      "reference_run", "",
      "A finished run folder whose final PE tables are transplanted into this model (same "
      "layout, width and placement); \"\" = no transplant.");
  schema.string("tensor", "table",
                "What the interventions replace: \"table\" (an additive PE's stored table), any "
                "parameter the PE registers (e.g. \"positions\", \"angles\", \"frequencies\"), "
                "or \"auto\" (the first of positions, angles, table the PE has).");
}

std::shared_ptr<Probe> create(const PluginContext& context) {
  return std::make_shared<InterventionProbe>(
      context.params.integer("permutations"), context.params.integer("seed"),
      context.params.string("reference_run"), context.params.string("tensor"));
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("pe_intervention", "1.0.0",
                      "Causal test: the model re-evaluated with its PE permuted, reset or "
                      "transplanted",
                      pelab::declare, pelab::create)
