// The Latin Square Task (arXiv 2406.08272): a 4x4 grid where each row and column holds each of 4
// shapes once; predict the shape of the query cell. See docs/tasks/latin_square.md.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include <pelab/sdk.h>

#include "encoding.h"
#include "generator.h"
#include "puzzle.h"
#include "puzzle_csv.h"
#include "split.h"

namespace pelab::latin_square {
namespace {

constexpr const char* kHumanFile = "puzzle_data_original.csv";

std::string generated_file(Condition condition) {
  return fmt::format("generated_puzzle_data_{}_dist80.csv", to_string(condition));
}

class LatinSquareTask final : public Task {
 public:
  explicit LatinSquareTask(const PluginContext& context) {
    const Params& params = context.params;
    train_limit_ = params.integer("train_limit");
    eval_noise_std_ = params.real("eval_noise_std");
    data_dir_ = params.string("data_dir").empty() ? context.data_dir : params.string("data_dir");

    // Everything is read (or generated) here, so that a missing file fails before training.
    human_ = read(kHumanFile);
    if (params.string("source") == "paper") {
      for (Condition condition : kAllConditions) {
        std::vector<Puzzle> part = read(generated_file(condition));
        pool_.insert(pool_.end(), part.begin(), part.end());
      }
    } else {
      PELAB_INTERNAL_ASSERT(params.string("source") == "generated", "source '{}'",
                            params.string("source"));
      GeneratorOptions options;
      options.per_condition = params.integer("generated_per_condition");
      options.seed = static_cast<std::uint64_t>(params.integer("generator_seed"));
      options.min_jaccard_distance = params.real("min_jaccard_distance");
      pool_ = generate_puzzles(options, human_);
    }
    split_ = stratified_split(pool_, params.real("train_fraction"),
                              static_cast<std::uint64_t>(params.integer("split_seed")));
  }

  Layout layout() const override {
    // The model never sees where a cell is; the grid is ground truth for probes.
    return Layout::grid({kSide, kSide}, {"row", "column"}, /*coordinates_visible=*/false);
  }
  std::int64_t input_size() const override { return kInputChannels; }
  Objective objective() const override { return Objective::classification(kShapes); }
  std::vector<std::string> splits() const override { return {"train", "test", "human"}; }

  Dataset load(const std::string& split) override {
    if (split == "train") return make_dataset(pool_, take_prefix(split_.train, train_limit_));
    if (split == "test") return make_dataset(pool_, split_.test);
    if (split == "human") {
      std::vector<std::int64_t> all(human_.size());
      for (std::size_t i = 0; i < all.size(); ++i)
        all[i] = static_cast<std::int64_t>(i);
      return make_dataset(human_, all);
    }
    throw Error(fmt::format("the latin_square task has no split '{}'; its splits are {}", split,
                            fmt::join(splits(), ", ")));
  }

  torch::Tensor perturb_embedding(const torch::Tensor& embedded, bool training) const override {
    // The paper's robustness check: Gaussian noise on the embedded tokens, at evaluation only.
    if (training || eval_noise_std_ <= 0.0) return embedded;
    return embedded + eval_noise_std_ * torch::randn_like(embedded);
  }

 private:
  std::vector<Puzzle> read(const std::string& file) const {
    const std::filesystem::path path = std::filesystem::path(data_dir_) / file;
    std::error_code ignored;
    PELAB_CHECK(std::filesystem::exists(path, ignored),
                "the latin_square task cannot find its puzzle file '{}'. It reads {} and "
                "generated_puzzle_data_{{binary,ternary,quaternary}}_dist80.csv from data_dir "
                "('{}', by default <prefix>/share/pelab/latin_square): reinstall pelab, or set "
                "data_dir to a folder holding these files",
                path.string(), kHumanFile, data_dir_);
    return read_puzzle_csv(path.string());
  }

  std::int64_t train_limit_ = 0;
  double eval_noise_std_ = 0.0;
  std::string data_dir_;
  std::vector<Puzzle> human_;  // the 108 puzzles of the human fMRI experiment
  std::vector<Puzzle> pool_;   // the train/test pool
  Split split_;
};

// The generator's keys are read only when it makes the puzzles (ParamSpec::used_only_when).
bool generated(const Params& params) {
  return params.string("source") == "generated";
}

void declare(ParamSchema& schema) {
  schema.choice("source", "paper", {"paper", "generated"},
                "Where the train/test puzzles come from: \"paper\", the 3 x 3000 generated "
                "puzzles the paper trained on (vendored from LSTNN), or \"generated\", pelab's "
                "own generator (see generated_per_condition, generator_seed, "
                "min_jaccard_distance). The \"human\" split is always the 108 human puzzles.");
  schema
      .real("train_fraction", 0.9,
            "Fraction of each condition's puzzles that goes to \"train\"; the rest is \"test\" "
            "(the paper: 0.9, 8100/900).")
      .in_range(0.01, 0.99);
  schema
      .integer("split_seed", 0,
               "Seed of the stratified train/test shuffle (std::mt19937_64). Independent of the "
               "run's seed, so every run of a sweep sees the same split.")
      .at_least(0);
  schema
      .integer("generated_per_condition", 3000,
               "source = \"generated\": puzzles per condition (binary, ternary, quaternary).")
      .in_range(1, 100000)
      .used_only_when("source = \"generated\"", generated);
  schema
      .integer("generator_seed", 0,
               "source = \"generated\": seed of the generator (std::mt19937_64), independent of "
               "the run's seed.")
      .at_least(0)
      .used_only_when("source = \"generated\"", generated);
  schema
      .real("min_jaccard_distance", 0.8,
            "source = \"generated\": keep only puzzles whose Jaccard distance (over the "
            "(cell, digit) pairs of non-blank cells) to every human puzzle is at least this.")
      .in_range(0.0, 1.0)
      .used_only_when("source = \"generated\"", generated);
  schema
      .integer("train_limit", 0,
               "Train on only the first k training puzzles, stratified by condition (for quick "
               "tests); 0 = all.")
      .at_least(0);
  schema
      .real("eval_noise_std", 0.0,
            "Std of Gaussian noise added to the embedded tokens in evaluation only (the paper's "
            "noise evaluation: 0.2); 0 = none.")
      .at_least(0.0);
  schema.string("data_dir", "",
                "Folder holding the puzzle CSV files; \"\" = the installed data "
                "<prefix>/share/pelab/latin_square.");
}

std::shared_ptr<Task> create(const PluginContext& context) {
  return std::make_shared<LatinSquareTask>(context);
}

}  // namespace
}  // namespace pelab::latin_square

PELAB_REGISTER_PLUGIN("latin_square", "1.0.0",
                      "Latin Square Task: the shape of the query cell of a 4x4 Latin square "
                      "puzzle (binary/ternary/quaternary)",
                      pelab::latin_square::declare, pelab::latin_square::create)
