// Client::WaitForMove against a real standalone mooncaked with a LOCAL_DISK: manual promote,
// offload and evict followed to their end, the way `mooncakectl ... --wait` and library users
// rely on (the rule itself is unit-tested in tests/unit/manual_move_test.cc).
#include <chrono>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/harness.h"

namespace mooncake::test {
namespace {

using namespace std::chrono_literals;

constexpr size_t kKiB = 1024;

class MoveWaitTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() { server_ = new Standalone({"--dram_size=64MiB"}, "256MiB"); }
    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
    }
    void SetUp() override {
        ASSERT_NE(server_->client, nullptr) << "standalone daemon did not come up";
    }
    Client& client() { return *server_->client; }

    static MoveWaitOptions Within(std::chrono::milliseconds budget) {
        MoveWaitOptions options;
        options.deadline = std::chrono::steady_clock::now() + budget;
        return options;
    }
    // The tiers holding a COMPLETE copy, MEMORY first ("" when the key is gone).
    std::vector<Tier> Tiers(const std::string& key) {
        auto info = client().Stat(key);
        return info.ok() ? info->object.CompleteTiers() : std::vector<Tier>{};
    }
    // Puts `keys` (size bytes each) and moves them to LOCAL_DISK only.
    void PutOnDiskOnly(const std::vector<std::string>& keys, size_t size) {
        for (size_t i = 0; i < keys.size(); ++i) {
            ASSERT_TRUE(client().Put(keys[i], Pattern(i, size)).ok()) << keys[i];
        }
        auto evicted = client().WaitForMove(TierMove::kEvict, keys, Within(10s));
        ASSERT_TRUE(evicted.ok()) << evicted.status().ToString();
        for (const MoveKeyResult& r : *evicted) {
            ASSERT_EQ(r.end, MoveEnd::kReached) << r.key << ": " << r.status.ToString();
        }
        for (const std::string& key : keys) {
            ASSERT_EQ(Tiers(key), std::vector<Tier>{Tier::kLocalDisk}) << key;
        }
    }
    static Standalone* server_;
};
Standalone* MoveWaitTest::server_ = nullptr;

TEST_F(MoveWaitTest, EvictThenPromoteReachTheirTiersAndSayWhenAlreadyThere) {
    const std::vector<std::string> keys = {"mw/a", "mw/b"};
    PutOnDiskOnly(keys, 256 * kKiB);

    auto promoted = client().WaitForMove(TierMove::kPromote, keys, Within(10s));
    ASSERT_TRUE(promoted.ok()) << promoted.status().ToString();
    ASSERT_EQ(promoted->size(), keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
        const MoveKeyResult& r = (*promoted)[i];
        EXPECT_EQ(r.key, keys[i]);
        EXPECT_EQ(r.end, MoveEnd::kReached) << r.status.ToString();
        EXPECT_EQ(r.outcome, ManualOutcome::kDone);
        EXPECT_TRUE(r.status.ok());
        EXPECT_EQ(Tiers(keys[i]), (std::vector<Tier>{Tier::kMemory, Tier::kLocalDisk}));
        EXPECT_TRUE(*client().Get(keys[i]) == Pattern(i, 256 * kKiB));
    }
    // Asked again: nothing to do, and it says so.
    auto again = client().WaitForMove(TierMove::kPromote, keys, Within(10s));
    ASSERT_TRUE(again.ok());
    for (const MoveKeyResult& r : *again) {
        EXPECT_EQ(r.end, MoveEnd::kReached);
        EXPECT_EQ(r.outcome, ManualOutcome::kAlreadyThere);
    }
}

TEST_F(MoveWaitTest, OffloadKeepsMemoryAndEvictWithADiskCopyIsDoneAtOnce) {
    const std::vector<std::string> keys = {"mw/off"};
    ASSERT_TRUE(client().Put(keys[0], Pattern(7, 100 * kKiB)).ok());
    auto offloaded = client().WaitForMove(TierMove::kOffload, keys, Within(10s));
    ASSERT_TRUE(offloaded.ok()) << offloaded.status().ToString();
    EXPECT_EQ((*offloaded)[0].end, MoveEnd::kReached) << (*offloaded)[0].status.ToString();
    EXPECT_EQ((*offloaded)[0].outcome, ManualOutcome::kDone);
    EXPECT_EQ(Tiers(keys[0]), (std::vector<Tier>{Tier::kMemory, Tier::kLocalDisk}));

    auto evicted = client().WaitForMove(TierMove::kEvict, keys, Within(10s));
    ASSERT_TRUE(evicted.ok());
    EXPECT_EQ((*evicted)[0].end, MoveEnd::kReached);
    EXPECT_EQ((*evicted)[0].outcome, ManualOutcome::kDone);
    EXPECT_EQ(Tiers(keys[0]), std::vector<Tier>{Tier::kLocalDisk});
    // Not in MEMORY any more: an evict has nothing to do.
    auto again = client().WaitForMove(TierMove::kEvict, keys, Within(10s));
    ASSERT_TRUE(again.ok());
    EXPECT_EQ((*again)[0].outcome, ManualOutcome::kAlreadyThere);
}

TEST_F(MoveWaitTest, EvictRightAfterAnOffloadDropsMemoryOnceTheCopyLands) {
    // The evict finds the offload in flight (or already done): either way it ends with MEMORY
    // dropped and the bytes on LOCAL_DISK.
    const std::vector<std::string> keys = {"mw/race"};
    ASSERT_TRUE(client().Put(keys[0], Pattern(9, 8 * 1024 * kKiB)).ok());
    auto offload = client().Move(TierMove::kOffload, keys);
    ASSERT_TRUE(offload.ok());
    ASSERT_TRUE((*offload)[0].status.ok()) << (*offload)[0].status.ToString();
    auto evicted = client().WaitForMove(TierMove::kEvict, keys, Within(20s));
    ASSERT_TRUE(evicted.ok());
    EXPECT_EQ((*evicted)[0].end, MoveEnd::kReached) << (*evicted)[0].status.ToString();
    EXPECT_EQ((*evicted)[0].outcome, ManualOutcome::kDone);
    EXPECT_EQ(Tiers(keys[0]), std::vector<Tier>{Tier::kLocalDisk});
    EXPECT_TRUE(*client().Get(keys[0]) == Pattern(9, 8 * 1024 * kKiB));
}

TEST_F(MoveWaitTest, PromotionsRefusedAsBusyAreAskedAgainUntilDone) {
    const std::vector<std::string> keys = {"mw/q0", "mw/q1", "mw/q2", "mw/q3"};
    PutOnDiskOnly(keys, 2 * 1024 * kKiB);
    ASSERT_TRUE(client().TuneSet({{"promotion_queue_limit", "1"}}).ok());
    auto issued = client().Move(TierMove::kPromote, keys);
    ASSERT_TRUE(issued.ok()) << issued.status().ToString();
    size_t busy = 0;
    for (const KeyOutcome& o : *issued) busy += o.status.Is(StatusCode::kBusy) ? 1 : 0;
    auto waited = client().WaitForMove(TierMove::kPromote, *issued, Within(20s));
    ASSERT_TRUE(client().TuneSet({{"promotion_queue_limit", "50000"}}).ok());
    EXPECT_GE(busy, 1u) << "a queue of one took every promotion";
    ASSERT_TRUE(waited.ok()) << waited.status().ToString();
    for (const MoveKeyResult& r : *waited) {
        EXPECT_EQ(r.end, MoveEnd::kReached) << r.key << ": " << r.status.ToString();
        EXPECT_EQ(r.outcome, ManualOutcome::kDone) << r.key;
        EXPECT_EQ(Tiers(r.key).front(), Tier::kMemory) << r.key;
    }
}

TEST_F(MoveWaitTest, AMoveStillRunningAtTheDeadlineIsLateAndStillCompletes) {
    const std::vector<std::string> keys = {"mw/slow"};
    PutOnDiskOnly(keys, 32 * 1024 * kKiB);
    auto waited = client().WaitForMove(TierMove::kPromote, keys, Within(0ms));
    ASSERT_TRUE(waited.ok()) << waited.status().ToString();
    const MoveKeyResult& r = (*waited)[0];
    EXPECT_EQ(r.end, MoveEnd::kLate) << r.status.ToString();
    EXPECT_TRUE(r.status.Is(StatusCode::kTimeout)) << r.status.ToString();
    EXPECT_NE(r.status.message().find("still lacks a COMPLETE MEMORY copy"), std::string::npos)
        << r.status.message();
    // Only the wait gave up: the promotion lands.
    EXPECT_TRUE(WaitFor([&] { return Tiers(keys[0]).front() == Tier::kMemory; }, 20s));
}

TEST_F(MoveWaitTest, AKeyRemovedWhileWaitingEndsRemoved) {
    const std::vector<std::string> keys = {"mw/gone"};
    PutOnDiskOnly(keys, 16 * 1024 * kKiB);
    auto issued = client().Move(TierMove::kPromote, keys);
    ASSERT_TRUE(issued.ok());
    ASSERT_EQ((*issued)[0].outcome, ManualOutcome::kQueued) << (*issued)[0].status.ToString();
    ASSERT_TRUE(client().Remove(keys[0], /*force=*/true).ok());
    auto waited = client().WaitForMove(TierMove::kPromote, *issued, Within(10s));
    ASSERT_TRUE(waited.ok());
    EXPECT_EQ((*waited)[0].end, MoveEnd::kRemoved);
    EXPECT_TRUE((*waited)[0].status.Is(StatusCode::kNotFound));
    EXPECT_EQ((*waited)[0].status.message(), "key 'mw/gone' was removed while waiting");
}

TEST_F(MoveWaitTest, RefusalsComeBackAsTheMastersStatus) {
    const std::vector<std::string> keys = {"mw/missing"};
    for (TierMove move : {TierMove::kPromote, TierMove::kOffload, TierMove::kEvict}) {
        auto waited = client().WaitForMove(move, keys, Within(5s));
        ASSERT_TRUE(waited.ok()) << TierMoveName(move);
        EXPECT_EQ((*waited)[0].end, MoveEnd::kRefused) << TierMoveName(move);
        EXPECT_TRUE((*waited)[0].status.Is(StatusCode::kNotFound)) << TierMoveName(move);
    }
}

TEST_F(MoveWaitTest, WaitingIsNotAnAccess) {
    // Polling is Stat: no lease is taken, so the key can be removed without force at once.
    const std::vector<std::string> keys = {"mw/nolease"};
    PutOnDiskOnly(keys, 64 * kKiB);
    auto waited = client().WaitForMove(TierMove::kPromote, keys, Within(10s));
    ASSERT_TRUE(waited.ok());
    EXPECT_EQ((*waited)[0].end, MoveEnd::kReached);
    auto info = client().Stat(keys[0]);
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->object.lease_expiry.count(), 0);
    EXPECT_TRUE(client().Remove(keys[0]).ok());
}

}  // namespace
}  // namespace mooncake::test
