#include "pelab/runs/trained_encoder.h"

#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include "pelab/base/error.h"
#include "pelab/interfaces/positional_encoding.h"
#include "pelab/model/transformer_encoder.h"
#include "pelab/training/trainer.h"

namespace pelab {

namespace {

// The tensors of a PE that an evaluation can replace, by name, as the model holds them: the
// stored table of a PE whose table is a tensor of its own (learned, random_fixed, the sinusoidal
// tables) as "table", and every parameter it registers (a rotary PE's learned positions,
// frequencies, generators).
std::map<std::string, torch::Tensor> stored_tensors(PositionalEncoding& pe) {
  std::map<std::string, torch::Tensor> tensors;
  if (auto* stored = dynamic_cast<TablePositionalEncoding*>(&pe))
    tensors["table"] = stored->table();
  for (const auto& parameter : pe.named_parameters())
    tensors.emplace(parameter.key(), parameter.value());
  return tensors;
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
  for (const auto& [name, tensor] : stored_tensors(*encoding))
    tensors[name] = tensor.detach().clone();
  if (tensors.empty() && why_not != nullptr) {
    *why_not = encoding->table().defined()
                   ? "the PE's table is computed from no stored tensor: it cannot be replaced"
                   : "the PE has no table and no parameter (pe = none, or a fixed PE acting on "
                     "attention): no intervention changes it";
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
      const auto stored =
          stored_tensors(*model_.positional_encodings()[static_cast<std::size_t>(replacement.pe)]);
      const auto found = stored.find(replacement.tensor);
      PELAB_CHECK(found != stored.end(),
                  "PE {} has no replaceable tensor '{}' (replaceable_tensors lists what it has)",
                  replacement.pe, replacement.tensor);
      torch::Tensor target = found->second;
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
