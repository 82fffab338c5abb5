#include "masked_splits.h"

#include <utility>

#include <fmt/format.h>

#include <pelab/sdk.h>

namespace pelab::tasks {

void MaskedSplits::declare(ParamSchema& schema, const std::string& tokens) {
  schema
      .real("mask_ratio", 0.5,
            fmt::format("Fraction of {} masked in training and in \"test\".", tokens))
      .in_range(0.01, 1.0);
  schema
      .real("high_mask_ratio", 0.9,
            fmt::format("Fraction of {} masked in \"test_high_mask\".", tokens))
      .in_range(0.01, 1.0);
}

std::vector<std::string> MaskedSplits::names() {
  return {"train", "test", "test_high_mask"};
}

MaskedSplits::MaskedSplits(const Params& params, std::string task)
    : task_(std::move(task)),
      mask_ratio_(params.real("mask_ratio")),
      high_mask_ratio_(params.real("high_mask_ratio")) {}

Dataset MaskedSplits::load(const std::string& split, const std::function<Dataset()>& train,
                           const std::function<Dataset()>& test) const {
  Dataset data;
  if (split == "train") {
    data = train();
    data.mask_ratio = mask_ratio_;
  } else if (split == "test" || split == "test_high_mask") {
    data = test();
    data.mask_ratio = split == "test" ? mask_ratio_ : high_mask_ratio_;
  } else {
    throw Error(fmt::format("the {} task has no split '{}'; its splits are {}", task_, split,
                            fmt::join(names(), ", ")));
  }
  return data;
}

}  // namespace pelab::tasks
