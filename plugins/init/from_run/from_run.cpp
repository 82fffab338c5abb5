// Transfer: a PE table read from a finished run, e.g. a PE learned on one regime of the network
// simulation put into a model trained on another. Block b's table comes from block b of the run
// (or every block's from one block of it), at the run's final snapshot or a given epoch; the
// run's layout (tokens) and width must be this model's. With the learned PE's trainable = false
// the transferred table stays frozen.

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include <pelab/sdk.h>

#include "../common/init_common.h"

namespace pelab {
namespace {

class FromRunInitializer : public Initializer {
 public:
  FromRunInitializer(std::string run, std::int64_t epoch, std::int64_t block)
      : run_(std::move(run)), epoch_(epoch), block_(block) {}

  void fill(torch::Tensor& tensor, const InitContext& context) const override {
    const Layout& layout = init_common::token_layout(tensor, context, "from_run");
    init_common::check_token_rows(tensor, layout, context, "from_run");
    const PESnapshot snapshot = chosen_snapshot(context);
    const torch::Tensor& tables = snapshot.tables;  // [pes, tokens, d_model]
    std::int64_t source = block_;
    if (source < 0) source = context.block >= 0 ? context.block : 0;
    PELAB_CHECK(context.block >= 0 || block_ >= 0 || tables.size(0) == 1,
                "{}: the run '{}' has {} PE tables (one per block) but this PE is shared by every "
                "block: give from_run's block (0 to {})",
                context.what, run_, tables.size(0), tables.size(0) - 1);
    PELAB_CHECK(
        source < tables.size(0),
        "{}: from_run reads block {} of the run '{}', which has {} PE table(s) (blocks 0 to "
        "{}): give block, or a run with as many blocks",
        context.what, source, run_, tables.size(0), tables.size(0) - 1);
    PELAB_CHECK(tables.size(1) == tensor.size(0) && tables.size(2) == tensor.size(1),
                "{}: the run '{}' has PE tables of {} tokens x {} (d_model), this model's are {} x "
                "{}: a transfer needs the same layout and width",
                context.what, run_, tables.size(1), tables.size(2), tensor.size(0), tensor.size(1));
    PELAB_CHECK(torch::isfinite(tables[source]).all().item<bool>(),
                "{}: the PE table of block {} in the run '{}' holds a value that is not finite "
                "(NaN or infinite): that run diverged; start from another run or epoch",
                context.what, source, run_);
    torch::NoGradGuard no_grad;
    tensor.copy_(tables[source]);
  }

 private:
  PESnapshot chosen_snapshot(const InitContext& context) const {
    PELAB_CHECK(!run_.empty(),
                "{}: from_run needs the run folder to read the PE from: init = {{ plugin = "
                "\"from_run\", run = \"{}\" }}",
                context.what, FinishedRun::folder_layout());
    const FinishedRun run(run_);
    const std::vector<PESnapshot> snapshots = run.snapshots();
    std::vector<std::int64_t> epochs;
    for (const PESnapshot& snapshot : snapshots) {
      if (snapshot.tables.defined()) epochs.push_back(snapshot.epoch);
    }
    PELAB_CHECK(!epochs.empty(),
                "{}: from_run found no PE tables in '{}': give the folder of a finished run whose "
                "PE has a table",
                context.what, run.snapshot_folder());
    const std::int64_t epoch = epoch_ < 0 ? epochs.back() : epoch_;
    const auto found = std::find_if(snapshots.begin(), snapshots.end(), [&](const PESnapshot& s) {
      return s.epoch == epoch && s.tables.defined();
    });
    PELAB_CHECK(found != snapshots.end(),
                "{}: the run '{}' has no PE snapshot of epoch {}; its epochs are {}", context.what,
                run_, epoch, fmt::join(epochs, ", "));
    return *found;
  }

  std::string run_;
  std::int64_t epoch_;
  std::int64_t block_;
};

void declare(ParamSchema& schema) {
  schema.string("run", "",
                fmt::format("The finished run folder to read the PE from, {} (relative to the "
                            "working folder).",
                            FinishedRun::folder_layout()));
  schema.integer("epoch", -1, "The snapshot's epoch; -1 = the run's last.").at_least(-1);
  schema
      .integer("block", -1,
               "The run's block to read; -1 = the same block as the table filled (block b from "
               "block b).")
      .at_least(-1);
}

std::shared_ptr<Initializer> create(const PluginContext& context) {
  return std::make_shared<FromRunInitializer>(context.params.string("run"),
                                              context.params.integer("epoch"),
                                              context.params.integer("block"));
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("from_run", "1.0.0",
                      "A PE table read from a finished run's snapshots (transfer), per block",
                      pelab::declare, pelab::create)
