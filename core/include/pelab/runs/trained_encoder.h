#pragma once

// The core's TrainedModel: a TransformerEncoder and its task, evaluated by a Trainer made on first
// use (evaluation only: its default configuration, dropout off). What run_probes and `pelab probe`
// hand the probes; the tests of model-running probes build one too.

#include <memory>

#include "pelab/base/export.h"
#include "pelab/interfaces/trained_model.h"

namespace pelab {

class Task;
class Trainer;
class TransformerEncoder;

class PELAB_API TrainedEncoder : public TrainedModel {
 public:
  /// Both must outlive this object.
  TrainedEncoder(TransformerEncoder& model, Task& task);
  ~TrainedEncoder() override;

  std::int64_t pe_count() const override;
  std::map<std::string, torch::Tensor> replaceable_tensors(
      std::int64_t pe, std::string* why_not = nullptr) const override;
  std::vector<MetricRow> evaluate(const std::vector<PETensorReplacement>& replacements) override;
  std::vector<torch::Tensor> attention_maps(const torch::Tensor& inputs) override;

 private:
  TransformerEncoder& model_;
  Task& task_;
  std::unique_ptr<Trainer> trainer_;
};

}  // namespace pelab
