// The from_run initializer (transfer): block b's table from block b of a run's snapshot, the final
// one or a given epoch; one block into every block; every mismatch refused saying what differs.
// With the learned PE's trainable = false the transferred table is frozen.

#include <cmath>
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/base/error.h"
#include "pelab/plugins/registry.h"
#include "pelab/runs/run_folder.h"
#include "test_support.h"

namespace pelab {
namespace {

using ::testing::HasSubstr;

class FromRun : public ::testing::Test {
 protected:
  FromRun() : registry_(test::builtin_registry()), layout_(Layout::sequence(4, false)) {
    // A run of 3 blocks with snapshots at epochs 0, 5 and 10: entry (b, t, j) = 100 e + 10 b + t.
    for (const std::int64_t epoch : {0, 5, 10}) {
      PESnapshot snapshot;
      snapshot.epoch = epoch;
      snapshot.tables = (100.0 * epoch + torch::arange(3).view({3, 1, 1}) * 10.0 +
                         torch::arange(4).view({1, 4, 1}) + torch::zeros({3, 4, 6}))
                            .to(torch::kFloat32);
      RunFolder(run_.path()).write_snapshot(snapshot);
    }
  }

  torch::Tensor filled(std::int64_t block, std::int64_t epoch = -1, std::int64_t from = -1,
                       std::int64_t width = 6, const std::string& run = "") {
    PluginSpec spec = registry_.default_spec(PluginKind::kInitializer, "from_run");
    spec.params.set("run", run.empty() ? run_.path() : run);
    spec.params.set("epoch", epoch);
    spec.params.set("block", from);
    torch::Tensor tensor = torch::zeros({4, width});
    registry_.create_initializer(spec)->fill(
        tensor, InitContext::for_tensor(tensor, "pe.table (block)", &layout_, block));
    return tensor;
  }

  std::string error_of(std::int64_t block, std::int64_t epoch, std::int64_t from,
                       std::int64_t width = 6, const std::string& run = "") {
    try {
      filled(block, epoch, from, width, run);
    } catch (const Error& e) {
      return e.what();
    }
    return "accepted";
  }

  test::ScratchDir run_;
  Registry registry_;
  Layout layout_;
};

TEST_F(FromRun, EachBlockFromItsOwnBlockAtTheFinalSnapshot) {
  EXPECT_EQ(filled(2)[3][0].item<float>(), 1000.0f + 20.0f + 3.0f);
  EXPECT_EQ(filled(0)[1][5].item<float>(), 1001.0f);
}

TEST_F(FromRun, AGivenEpochAndOneBlockIntoEvery) {
  EXPECT_EQ(filled(2, /*epoch=*/5)[0][0].item<float>(), 500.0f + 20.0f);
  EXPECT_EQ(filled(2, /*epoch=*/0, /*from=*/1)[0][0].item<float>(), 10.0f);
  EXPECT_EQ(filled(-1, /*epoch=*/-1, /*from=*/1)[2][0].item<float>(), 1012.0f);  // shared PE
}

TEST_F(FromRun, MismatchesAreRefusedSayingWhatDiffers) {
  EXPECT_THAT(error_of(0, -1, -1, /*width=*/8),
              HasSubstr("has PE tables of 4 tokens x 6 (d_model), this model's are 4 x 8"));
  EXPECT_THAT(error_of(0, /*epoch=*/7, -1), HasSubstr("no PE snapshot of epoch 7; its epochs are "
                                                      "0, 5, 10"));
  EXPECT_THAT(error_of(3, -1, -1), HasSubstr("reads block 3 of the run"));
  EXPECT_THAT(error_of(-1, -1, -1), HasSubstr("this PE is shared by every block: give from_run's "
                                              "block (0 to 2)"));
  test::ScratchDir empty;
  EXPECT_THAT(error_of(0, -1, -1, 6, empty.path()), HasSubstr("found no PE tables in"));
}

// A snapshot of a run that diverged is named where it enters, not trained from.
TEST_F(FromRun, ATableThatIsNotFiniteIsRefused) {
  PESnapshot diverged;
  diverged.epoch = 15;
  diverged.tables = torch::zeros({3, 4, 6});
  diverged.tables[1][2][3] = std::nan("");
  RunFolder(run_.path()).write_snapshot(diverged);
  EXPECT_THAT(error_of(1, -1, -1), HasSubstr("the PE table of block 1 in the run '" + run_.path() +
                                             "' holds a value that is not finite"));
  EXPECT_EQ(filled(1, /*epoch=*/10)[0][0].item<float>(), 1010.0f);  // an earlier epoch is fine
}

// The learned PE with trainable = false: the transferred table is a buffer, not a parameter, and
// training leaves it as it was.
TEST_F(FromRun, AFrozenLearnedPeKeepsTheTransferredTable) {
  PluginSpec pe = registry_.default_spec(PluginKind::kPositionalEncoding, "learned");
  PluginSpec init = registry_.default_spec(PluginKind::kInitializer, "from_run");
  init.params.set("run", run_.path());
  pe.params.set("init", std::make_shared<const PluginSpec>(init));
  pe.params.set("trainable", false);
  ModelShape shape;
  shape.d_model = 6;
  shape.block = 1;
  const auto frozen = registry_.create_positional_encoding(pe, layout_, shape);
  EXPECT_TRUE(frozen->parameters().empty());
  EXPECT_EQ(frozen->table()[2][0].item<float>(), 1012.0f);
  pe.params.set("trainable", true);
  const auto trained = registry_.create_positional_encoding(pe, layout_, shape);
  ASSERT_EQ(trained->parameters().size(), 1u);
  EXPECT_TRUE(torch::equal(trained->parameters()[0], frozen->table()));
}

}  // namespace
}  // namespace pelab
