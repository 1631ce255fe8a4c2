// RemovalJournal (core/master/removal_journal.h): removals made durable before they are acknowledged,
// concurrent ones written together; and how the store uses it (core/master/master_store.cc) with the
// newest-incarnation rule of adoption (core/master/store_rejoin.cc): no removed or superseded
// version comes back with the next leader.
#include "core/master/removal_journal.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "tests/unit/store_test_util.h"

namespace mooncake::testing {
namespace {

using Entries = RemovalJournal::Entries;

TEST(RemovalJournalTest, WithoutAWriterRecordingIsFree) {
    RemovalJournal journal;
    EXPECT_FALSE(journal.active());
    EXPECT_TRUE(journal.Record({{"k", 1}}).ok());
    EXPECT_EQ(journal.batches_written(), 0u);
}

TEST(RemovalJournalTest, ConcurrentRemovalsShareWritesAndEachWaitsForItsOwn) {
    RemovalJournal journal;
    std::atomic<int> writes{0};
    std::mutex mu;
    std::set<std::string> durable;
    constexpr int kCallers = 24;
    std::atomic<int> started{0};
    journal.SetWriter([&](const Entries& batch) {
        if (writes.fetch_add(1) == 0) {
            // The first write lasts until every caller has come (threads start slowly under
            // TSan on a loaded machine): the others must then share the writes that follow.
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            while (started.load() < kCallers && std::chrono::steady_clock::now() < deadline) {
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        std::lock_guard lock(mu);
        for (const auto& [key, gen] : batch) durable.insert(key);
        return Status::Ok();
    });
    std::vector<std::thread> callers;
    std::atomic<int> not_durable{0};
    for (int i = 0; i < kCallers; ++i) {
        callers.emplace_back([&, i] {
            const std::string key = "k" + std::to_string(i);
            ++started;
            ASSERT_TRUE(journal.Record({{key, Generation(i + 1)}}).ok());
            std::lock_guard lock(mu);
            if (durable.count(key) == 0) ++not_durable;  // returned before its write
        });
    }
    for (std::thread& t : callers) t.join();
    EXPECT_EQ(not_durable.load(), 0);
    EXPECT_EQ(durable.size(), size_t{kCallers});
    EXPECT_LT(writes.load(), kCallers) << "no two removals shared a write";
}

TEST(RemovalJournalTest, AFailedWriteIsTheErrorOfEveryCallerInIt) {
    RemovalJournal journal;
    journal.SetWriter([](const Entries&) { return Status::Unavailable("etcd is down"); });
    EXPECT_TRUE(journal.Record({{"k", 1}}).Is(StatusCode::kUnavailable));
    EXPECT_TRUE(journal.Record({{"j", 2}}).Is(StatusCode::kUnavailable));
}

class RemovalTest : public StoreFixture {
public:
    std::vector<StatusCode> Codes(const Result<std::vector<Status>>& out) {
        EXPECT_TRUE(out.ok()) << out.status().ToString();
        std::vector<StatusCode> codes;
        if (out.ok()) {
            for (const Status& st : *out) codes.push_back(st.code());
        }
        return codes;
    }
    // A new leader: empty metadata, a later epoch, the records of the previous one loaded.
    void NewLeader(const Entries& loaded) {
        store_.reset();
        store_ = std::make_unique<MasterStore>(config_, clock_, metrics_, 9);
        store().AddTombstones(loaded);
    }
    std::vector<MemoryReplicaReport> HeldOn(NodeId node, const std::string& key) {
        std::vector<MemoryReplicaReport> out;
        auto v = store().Stat(key);
        if (!v.ok()) return out;
        for (const ReplicaDesc& r : v->replicas) {
            if (r.tier == Tier::kMemory && r.node == node) {
                out.push_back({key, v->generation, v->size, r.offset});
            }
        }
        return out;
    }
};

// The leader acknowledged a Remove and died before the node's next beat carried the release:
// the range is still in the node's segment when it registers with the next leader.
TEST_F(RemovalTest, AnAcknowledgedRemoveIsDurableBeforeItIsAppliedAndTheNextLeaderRefusesTheCopy) {
    Entries journal;
    store().SetRemovalWriter([&](const Entries& batch) {
        for (const auto& [key, gen] : batch) {
            EXPECT_EQ(Get(key), StatusCode::kOk) << "applied before it was durable";
        }
        journal.insert(journal.end(), batch.begin(), batch.end());
        return Status::Ok();
    });
    NodeId a = AddNode("a", 16 * kObject);
    Generation k = Put("k");
    Generation j = Put("j");
    Generation p = Put("p/1");
    std::vector<MemoryReplicaReport> held = HeldOn(a, "k");
    for (auto& r : HeldOn(a, "j")) held.push_back(r);
    for (auto& r : HeldOn(a, "p/1")) held.push_back(r);
    ASSERT_EQ(held.size(), 3u);
    ASSERT_TRUE(store().Remove("k").ok());
    std::vector<std::string> batch{"j"};
    ASSERT_TRUE(store().BatchRemove(batch)[0].ok());
    ASSERT_EQ(store().RemoveByPrefix("p/", true), 1u);
    EXPECT_EQ(journal, (Entries{{"k", k}, {"j", j}, {"p/1", p}}));

    NewLeader(journal);
    NodeId again = AddNode("a", 16 * kObject);
    EXPECT_EQ(Codes(store().RegisterMemoryReplicas(again, held)),
              (std::vector<StatusCode>(3, StatusCode::kNotFound)));
    for (const char* key : {"k", "j", "p/1"}) EXPECT_EQ(Get(key), StatusCode::kNotFound) << key;
    ExpectInvariants();
}

TEST_F(RemovalTest, ARemoveThatCannotBeMadeDurableRemovesNothingAndSaysSo) {
    store().SetRemovalWriter([](const Entries&) { return Status::Unavailable("etcd is down"); });
    AddNode("a", 16 * kObject);
    Put("k");
    Status st = store().Remove("k");
    EXPECT_TRUE(st.Is(StatusCode::kUnavailable)) << st.ToString();
    EXPECT_NE(st.message().find("nothing was removed"), std::string::npos) << st.ToString();
    std::vector<std::string> batch{"k"};
    EXPECT_TRUE(store().BatchRemove(batch)[0].Is(StatusCode::kUnavailable));
    Status error;
    EXPECT_EQ(store().RemoveByPrefix("k", true, nullptr, &error), 0u);
    EXPECT_TRUE(error.Is(StatusCode::kUnavailable));
    EXPECT_EQ(Get("k"), StatusCode::kOk);
    EXPECT_EQ(Metric("removals_unrecorded_total"), 3);
    EXPECT_EQ(Get("missing"), StatusCode::kNotFound);
    EXPECT_TRUE(store().Remove("missing").Is(StatusCode::kNotFound));
}

// Newest wins at adoption: an older incarnation adopted from a node that registered first is
// replaced by a newer one reported later (a put after the older was removed, whose delete
// never reached the first node), and its node is told to delete it.
TEST_F(RemovalTest, ANewerIncarnationReportedLaterReplacesTheOlderAdoptedFirst) {
    const Generation older = (uint64_t{3} << 32) | 1;
    const Generation newer = (uint64_t{4} << 32) | 1;
    NodeId a = AddNode("a", 0);
    NodeId b = AddNode("b", 0);
    std::vector<DiskReplicaReport> old_copy{{"k", older, kObject}};
    std::vector<DiskReplicaReport> new_copy{{"k", newer, kObject}};
    EXPECT_EQ(Codes(store().RegisterDiskReplicas(a, old_copy)),
              std::vector<StatusCode>{StatusCode::kOk});
    EXPECT_EQ(Codes(store().RegisterDiskReplicas(b, new_copy)),
              std::vector<StatusCode>{StatusCode::kOk});
    auto v = store().GetReplicaList("k");
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(v->generation, newer);
    ASSERT_EQ(v->replicas.size(), 1u);
    EXPECT_EQ(v->replicas[0].node, b);
    auto beat = store().Heartbeat(a, 0);
    ASSERT_TRUE(beat.ok());
    ASSERT_EQ(beat->disk_deletes.size(), 1u);
    EXPECT_EQ(beat->disk_deletes[0].key, "k");
    EXPECT_EQ(beat->disk_deletes[0].generation, older);
    // Reported again (or in the other order): the older is refused.
    EXPECT_EQ(Codes(store().RegisterDiskReplicas(a, old_copy)),
              std::vector<StatusCode>{StatusCode::kStaleGeneration});
    EXPECT_EQ(Metric("rejoin_superseded_total"), 1);
    ExpectInvariants();
}

}  // namespace
}  // namespace mooncake::testing
