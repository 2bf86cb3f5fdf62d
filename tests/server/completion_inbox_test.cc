// completion_inbox_test.cc — CompletionInbox: what store threads hand a worker thread arrives
// there in order and in one post per batch; a gone connection or a closed inbox gets nothing.
#include "server/transport/completion_inbox.hh"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <memory>
#include <thread>
#include <vector>

namespace server {
namespace {

// Records the slots it is handed, in order.
class RecordingSink final : public SlotSink {
 public:
  void complete_deferred(PendingResponse& response) override { seen.push_back(&response); }
  std::vector<const PendingResponse*> seen;
};

// A response as the inbox sees it (what it renders does not matter here).
class TestResponse final : public PendingResponse {
  HandlerResult render(ResponseWriter&) override { return {}; }
};

std::vector<std::shared_ptr<PendingResponse>> make_slots(int n) {
  std::vector<std::shared_ptr<PendingResponse>> slots;
  for (int i = 0; i < n; ++i) slots.push_back(std::make_shared<TestResponse>());
  return slots;
}

// A worker's context and inbox, two connections, and slots to hand them.
struct CompletionInboxTest : ::testing::Test {
  boost::asio::io_context ioc{1};
  std::shared_ptr<CompletionInbox> inbox = std::make_shared<CompletionInbox>(ioc.get_executor());
  std::shared_ptr<RecordingSink> a = std::make_shared<RecordingSink>();
  std::shared_ptr<RecordingSink> b = std::make_shared<RecordingSink>();
  std::vector<std::shared_ptr<PendingResponse>> slots = make_slots(6);
};

TEST_F(CompletionInboxTest, AGroupPushedFromAnotherThreadArrivesInOrderInOneDrain) {
  std::thread store_thread([&] {  // as a store's completer finishes one group
    for (int i = 0; i < 6; ++i) inbox->push(i % 2 == 0 ? a : b, slots[i]);
  });
  store_thread.join();
  EXPECT_EQ(ioc.run(), 1u) << "one handler (the drain) for the whole group";
  EXPECT_EQ(a->seen,
            (std::vector<const PendingResponse*>{slots[0].get(), slots[2].get(), slots[4].get()}));
  EXPECT_EQ(b->seen,
            (std::vector<const PendingResponse*>{slots[1].get(), slots[3].get(), slots[5].get()}));
  // The next group posts a drain of its own.
  ioc.restart();
  const auto more = make_slots(1);
  inbox->push(a, more[0]);
  EXPECT_EQ(ioc.run(), 1u);
  EXPECT_EQ(a->seen.back(), more[0].get());
}

TEST_F(CompletionInboxTest, AConnectionGoneBeforeTheDrainGetsNothing) {
  inbox->push(b, slots[0]);
  inbox->push(a, slots[1]);
  const std::weak_ptr<RecordingSink> watch = b;
  b.reset();
  EXPECT_TRUE(watch.expired()) << "the inbox must not keep a connection alive";
  ioc.run();
  EXPECT_EQ(a->seen, (std::vector<const PendingResponse*>{slots[1].get()}));
}

TEST_F(CompletionInboxTest, AClosedInboxDropsWhatIsPendingAndPostsNothingMore) {
  inbox->push(a, slots[0]);  // posts a drain
  inbox->close();
  inbox->push(a, slots[1]);
  EXPECT_EQ(slots[0].use_count(), 1) << "close() releases what was pending";
  EXPECT_EQ(ioc.run(), 1u) << "only the drain posted before close(), which finds nothing";
  EXPECT_TRUE(a->seen.empty());
}

TEST_F(CompletionInboxTest, EachWorkerThreadSeesItsOwnInbox) {
  EXPECT_EQ(CompletionInbox::current(), nullptr);
  CompletionInbox* seen_there = nullptr;
  std::thread worker([&] {
    CompletionInbox::set_current(inbox.get());
    seen_there = CompletionInbox::current();
  });
  worker.join();
  EXPECT_EQ(seen_there, inbox.get());
  EXPECT_EQ(CompletionInbox::current(), nullptr) << "set on the worker, not here";
}

}  // namespace
}  // namespace server
