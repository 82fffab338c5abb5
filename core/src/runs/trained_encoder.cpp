#include "pelab/runs/trained_encoder.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include "pelab/base/error.h"
#include "pelab/interfaces/positional_encoding.h"
#include "pelab/model/transformer_encoder.h"
#include "pelab/training/trainer.h"

namespace pelab {

namespace {

// The stored table of a PE whose table is a tensor of its own (learned, random_fixed, the
// sinusoidal tables); nullptr for any other.
TablePositionalEncoding* table_pe(const std::shared_ptr<PositionalEncoding>& pe) {
  return dynamic_cast<TablePositionalEncoding*>(pe.get());
}

}  // namespace

TrainedEncoder::TrainedEncoder(TransformerEncoder& model, Task& task)
    : model_(model), task_(task) {}

TrainedEncoder::~TrainedEncoder() = default;

std::int64_t TrainedEncoder::pe_count() const {
  return static_cast<std::int64_t>(model_.positional_encodings().size());
}

std::map<std::string, torch::Tensor> TrainedEncoder::replaceable_tensors(
    std::int64_t pe, std::string* why_not) const {
  PELAB_CHECK(pe >= 0 && pe < pe_count(), "PE {} of a model with {} distinct PE(s)", pe,
              pe_count());
  const auto& encoding = model_.positional_encodings()[static_cast<std::size_t>(pe)];
  std::map<std::string, torch::Tensor> tensors;
  if (auto* stored = table_pe(encoding)) {
    tensors["table"] = stored->table().detach().clone();
  } else if (why_not != nullptr) {
    *why_not = encoding->table().defined()
                   ? "the PE's table is computed (not a stored table): it cannot be replaced"
                   : "the PE has no table (pe = none, or a PE acting on attention): no "
                     "intervention changes it";
  }
  return tensors;
}

std::vector<MetricRow> TrainedEncoder::evaluate(
    const std::vector<PETensorReplacement>& replacements) {
  torch::NoGradGuard no_grad;
  if (!trainer_) trainer_ = std::make_unique<Trainer>(model_, task_, TrainConfig{});
  // Each replaced tensor, and its value to restore.
  std::vector<std::pair<torch::Tensor, torch::Tensor>> replaced;
  const auto restore = [&] {
    for (auto it = replaced.rbegin(); it != replaced.rend(); ++it)
      it->first.copy_(it->second);
  };
  try {
    for (const PETensorReplacement& replacement : replacements) {
      PELAB_CHECK(replacement.pe >= 0 && replacement.pe < pe_count(),
                  "a replacement for PE {} of a model with {} distinct PE(s)", replacement.pe,
                  pe_count());
      auto* stored =
          table_pe(model_.positional_encodings()[static_cast<std::size_t>(replacement.pe)]);
      PELAB_CHECK(stored != nullptr && replacement.tensor == "table",
                  "PE {} has no replaceable tensor '{}' (replaceable_tensors lists what it has)",
                  replacement.pe, replacement.tensor);
      torch::Tensor target = stored->table();
      PELAB_CHECK(replacement.value.sizes() == target.sizes(),
                  "the replacement of PE {}'s {} has shape [{}] where the model's has [{}]",
                  replacement.pe, replacement.tensor, fmt::join(replacement.value.sizes(), ", "),
                  fmt::join(target.sizes(), ", "));
      replaced.emplace_back(target, target.detach().clone());
      target.copy_(replacement.value);
    }
    std::vector<MetricRow> rows = trainer_->evaluate(0);
    restore();
    return rows;
  } catch (...) {
    restore();
    throw;
  }
}

std::vector<torch::Tensor> TrainedEncoder::attention_maps(const torch::Tensor& inputs) {
  return model_.attention_maps(inputs);
}

}  // namespace pelab
