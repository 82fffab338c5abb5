// The configuration a sweep point serves (runs/point_record.h).

#include "pelab/runs/point_record.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <boost/filesystem.hpp>

#include "pelab/base/error.h"
#include "pelab/io/file_io.h"
#include "pelab/plugins/registry.h"
#include "pelab/runs/experiment_folder.h"
#include "test_support.h"

namespace pelab {
namespace {

using ::testing::HasSubstr;

const std::string kPoint = R"([experiment]
name = "points"
seeds = [1, 2]

[task]
plugin = "marker_position"
tokens = 4

[pe]
plugin = "learned"

[train]
epochs = 2
)";

class PointRecordTest : public ::testing::Test {
 protected:
  RunConfig run(const std::vector<std::string>& overrides = {}, std::size_t index = 0) {
    return Manifest::from_string(kPoint, "points.toml", registry_, overrides).runs().at(index);
  }
  std::string claim_error(const RunConfig& config) {
    try {
      claim_point(config, root_.path(), registry_, /*replace=*/false);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  Registry registry_ = test::builtin_registry();
  test::ScratchDir root_;
};

TEST_F(PointRecordTest, TheFirstRunRecordsThePointAndTheOthersMustMatchIt) {
  claim_point(run(), root_.path(), registry_, false);
  const std::string record = ExperimentFolder::of(root_.path(), "points").point_record_file("");
  EXPECT_EQ(record, root_.path() + "/points/default/point.toml");
  EXPECT_THAT(read_file(record), HasSubstr("plugin = \"learned\""));
  // Another seed, another description, other threads and a longer run: the same point.
  EXPECT_EQ(claim_error(run({}, 1)), "");
  EXPECT_EQ(claim_error(run({"experiment.description=another", "train.threads=2"})), "");
  EXPECT_EQ(claim_error(run({"train.epochs=4"})), "");
  EXPECT_THAT(read_file(record), HasSubstr("epochs = 4"));  // the latest length asked for
  // Another learning rate is another configuration: refused, naming the record and the key.
  const std::string error = claim_error(run({"train.lr=0.01"}));
  EXPECT_THAT(error, HasSubstr(record + ": the point 'default' serves another configuration"));
  EXPECT_THAT(error, HasSubstr("train.lr: 0.0001 -> 0.01"));
  EXPECT_THAT(error, HasSubstr("--force"));
  // --force records the new one in its place; the old one is then refused.
  claim_point(run({"train.lr=0.01"}), root_.path(), registry_, /*replace=*/true);
  EXPECT_EQ(claim_error(run({"train.lr=0.01"})), "");
  EXPECT_THAT(claim_error(run()), HasSubstr("train.lr: 0.01 -> 0.0001"));
}

// Probes run on the trained model: a probe added to the manifest mid-sweep is no other
// configuration of the point (as identity() has it).
TEST_F(PointRecordTest, AProbeAddedMidSweepIsTheSamePoint) {
  claim_point(run(), root_.path(), registry_, false);
  const RunConfig probed =
      Manifest::from_string(kPoint + "\n[[probe]]\nplugin = \"rsa\"\n", "points.toml", registry_)
          .runs()
          .at(1);
  EXPECT_EQ(claim_error(probed), "");
  EXPECT_EQ(claim_error(run()), "");  // and back
}

}  // namespace
}  // namespace pelab
