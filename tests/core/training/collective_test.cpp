// Two ranks on loopback, as two threads of this process: each collective, and what a rank sees
// when the other one is gone or does not answer.

#include "pelab/training/collective.h"

#include <chrono>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/base/error.h"
#include "two_ranks.h"

namespace pelab {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;
using Rows = std::pair<std::int64_t, std::int64_t>;

TEST(CollectiveTest, SharesAreContiguousAndDifferByAtMostOne) {
  EXPECT_EQ(Collective::share(10, 0, 3), Rows(0, 4));
  EXPECT_EQ(Collective::share(10, 1, 3), Rows(4, 7));
  EXPECT_EQ(Collective::share(10, 2, 3), Rows(7, 10));
  // Fewer rows than ranks: the last ranks get none.
  EXPECT_EQ(Collective::share(1, 0, 2), Rows(0, 1));
  EXPECT_EQ(Collective::share(1, 1, 2), Rows(1, 1));
}

TEST(CollectiveTest, EachCollectiveOnTwoRanks) {
  auto ranks = test::connect_two_ranks(20s);
  EXPECT_EQ(ranks[0]->rank(), 0);
  EXPECT_EQ(ranks[1]->size(), 2);
  test::on_both_ranks([&](int rank) {
    Collective& collective = *ranks[rank];
    std::vector<torch::Tensor> sums{torch::full({3}, 1.0f + static_cast<float>(rank)),
                                    torch::tensor({10 * (rank + 1)}, torch::kInt64)};
    collective.all_reduce_sum(sums);
    EXPECT_TRUE(sums[0].equal(torch::full({3}, 3.0f)));
    EXPECT_EQ(sums[1].item<std::int64_t>(), 30);

    torch::Tensor broadcast = torch::full({2, 2}, static_cast<double>(rank + 7), torch::kFloat64);
    collective.broadcast(broadcast);
    EXPECT_TRUE(broadcast.equal(torch::full({2, 2}, 7.0, torch::kFloat64)));

    std::string bytes = rank == 0 ? std::string("state\0with a zero", 17) : "ignored";
    collective.broadcast_bytes(bytes);
    EXPECT_EQ(bytes, std::string("state\0with a zero", 17));
    std::string empty = rank == 0 ? "" : "something";
    collective.broadcast_bytes(empty);
    EXPECT_EQ(empty, "");

    // 5 rows: rank 0 holds rows 0-2, rank 1 rows 3-4; every rank gets all of them, in order.
    const auto [begin, end] = Collective::share(5, rank, 2);
    const torch::Tensor mine =
        torch::arange(begin, end, torch::kFloat64).unsqueeze(1).repeat({1, 2});
    const torch::Tensor all = collective.all_gather_rows(mine, 5);
    EXPECT_TRUE(all.equal(torch::arange(5, torch::kFloat64).unsqueeze(1).repeat({1, 2})));
    // From inside an evaluation (InferenceMode), too.
    c10::InferenceMode inference;
    EXPECT_TRUE(collective.all_gather_rows(mine, 5).equal(all));
    collective.barrier();
  });
}

TEST(CollectiveTest, ARankThatIsGoneIsAnErrorNotAHang) {
  auto ranks = test::connect_two_ranks(20s);
  ranks[1].reset();  // its sockets close, as when the process dies
  try {
    ranks[0]->barrier();
    FAIL() << "the barrier passed without rank 1";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("rank 0 of 2: the barrier with the other ranks failed"));
    EXPECT_THAT(e.what(), HasSubstr("resumes from its last checkpoint"));
  }
}

TEST(CollectiveTest, ARankThatDoesNotAnswerTimesOut) {
  // Long enough for the rendezvous on a loaded machine; the all-reduce then waits as long.
  auto ranks = test::connect_two_ranks(5s);
  const auto started = std::chrono::steady_clock::now();
  // Rank 1 is alive but never joins the all-reduce.
  std::vector<torch::Tensor> tensors{torch::ones({4})};
  EXPECT_THROW(ranks[0]->all_reduce_sum(tensors), Error);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 60s) << "bounded by the timeout";
}

TEST(CollectiveTest, RanksThatNeverMeetSayWhere) {
  Rendezvous lonely;
  lonely.rank = 1;
  lonely.world_size = 2;
  lonely.master_port = Rendezvous::free_loopback_port();  // nobody serves it
  lonely.source = "test";
  try {
    Collective::connect(lonely, 500ms);
    FAIL() << "connected to nobody";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(fmt::format("rank 1 of 2 (test): the 2 rank(s) did not all "
                                                "meet at 127.0.0.1:{} within 0.5 s",
                                                lonely.master_port)));
  }
}

}  // namespace
}  // namespace pelab
