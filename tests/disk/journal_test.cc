#include "core/disk/journal.h"

#include <gtest/gtest.h>

#include <set>

#include "core/disk/memory_device.h"

namespace mooncake {
namespace {

using disk_format::PutEntry;

constexpr uint64_t kJournalBytes = 2 << 20;  // halves of 1 MiB
constexpr uint64_t kSeed = 42;

PutEntry MakePut(uint64_t id, size_t key_bytes) {
    PutEntry put;
    put.object_id = id;
    put.generation = id;
    put.size = 4096;
    put.data_hash = id * 3;
    put.extents = {{id * 4096, 4096}};
    put.key = std::string(key_bytes, 'a') + std::to_string(id);
    return put;
}

std::set<uint64_t> Ids(const Journal::Recovered& rec) {
    std::set<uint64_t> ids;
    for (auto& [id, put] : rec.puts) ids.insert(id);
    return ids;
}

TEST(JournalTest, ReplaysPutsAndDelsAcrossCheckpoints) {
    MemoryDevice device(kJournalBytes);
    ASSERT_TRUE(Journal::Format(&device, 0, kJournalBytes, kSeed).ok());
    std::set<uint64_t> live;
    {
        Journal::Recovered rec;
        auto j = Journal::Recover(&device, 0, kJournalBytes, kSeed, &rec);
        ASSERT_TRUE(j.ok());
        EXPECT_TRUE(rec.puts.empty());
        for (uint64_t id = 1; id <= 2000; ++id) {
            std::vector<uint64_t> dels;
            if (id % 5 == 0) {
                dels.push_back(id - 3);
                live.erase(id - 3);
            }
            ASSERT_TRUE((*j)->Commit({MakePut(id, 200)}, dels).ok());
            live.insert(id);
        }
        EXPECT_GT((*j)->checkpoints(), 2u);
    }
    Journal::Recovered rec;
    auto j = Journal::Recover(&device, 0, kJournalBytes, kSeed, &rec);
    ASSERT_TRUE(j.ok());
    EXPECT_EQ(Ids(rec), live);
    EXPECT_EQ(rec.max_object_id, 2000u);
    EXPECT_EQ(rec.skipped_batches, 0u);
    const PutEntry& p = rec.puts.at(2000);
    EXPECT_EQ(p.key, std::string(200, 'a') + "2000");
    EXPECT_EQ(p.extents, (std::vector<disk_format::Extent>{{2000 * 4096, 4096}}));
    EXPECT_EQ(p.commit_seq, rec.last_commit_seq);
}

TEST(JournalTest, InterruptedCheckpointFallsBackToTheOtherHalf) {
    MemoryDevice device(kJournalBytes);
    ASSERT_TRUE(Journal::Format(&device, 0, kJournalBytes, kSeed).ok());
    std::set<uint64_t> acked;
    {
        Journal::Recovered rec;
        auto j = Journal::Recover(&device, 0, kJournalBytes, kSeed, &rec);
        ASSERT_TRUE(j.ok());
        // Long keys so a checkpoint spans several batches; then tear the first write into
        // half 1 after its first batch.
        device.SetFaultHook([](MemoryDevice::Op op, const IoRequest& req) {
            if (op == MemoryDevice::Op::kWrite && req.offset >= kJournalBytes / 2) {
                return MemoryDevice::Fault{MemoryDevice::Fault::kTorn, 160 << 10};
            }
            return MemoryDevice::Fault{};
        });
        for (uint64_t id = 1;; ++id) {
            Status st = (*j)->Commit({MakePut(id, 3000)}, {});
            if (!st.ok()) break;
            acked.insert(id);
        }
        device.SetFaultHook(nullptr);
        EXPECT_EQ((*j)->checkpoints(), 0u);
    }
    std::set<uint64_t> live = acked;
    {
        Journal::Recovered rec;
        auto j = Journal::Recover(&device, 0, kJournalBytes, kSeed, &rec);
        ASSERT_TRUE(j.ok());
        EXPECT_EQ(Ids(rec), acked);
        // Keep going: the next checkpoint must not adopt the torn one's leftovers.
        for (uint64_t id = 10000; id < 10400; ++id) {
            std::vector<uint64_t> dels;
            if (!live.empty() && id % 2 == 0) {
                dels.push_back(*live.begin());
                live.erase(live.begin());
            }
            ASSERT_TRUE((*j)->Commit({MakePut(id, 100)}, dels).ok());
            live.insert(id);
        }
        EXPECT_GT((*j)->checkpoints(), 0u);
    }
    Journal::Recovered rec;
    auto j = Journal::Recover(&device, 0, kJournalBytes, kSeed, &rec);
    ASSERT_TRUE(j.ok());
    EXPECT_EQ(Ids(rec), live);
}

TEST(JournalTest, ForeignSeedSeesNothing) {
    MemoryDevice device(kJournalBytes);
    ASSERT_TRUE(Journal::Format(&device, 0, kJournalBytes, kSeed).ok());
    {
        Journal::Recovered rec;
        auto j = Journal::Recover(&device, 0, kJournalBytes, kSeed, &rec);
        ASSERT_TRUE((*j)->Commit({MakePut(1, 10)}, {}).ok());
    }
    // Batches of another store (another seed) are not ours: start empty, not fail.
    Journal::Recovered rec;
    auto j = Journal::Recover(&device, 0, kJournalBytes, kSeed + 1, &rec);
    ASSERT_TRUE(j.ok());
    EXPECT_TRUE(rec.reset);
    EXPECT_TRUE(rec.puts.empty());
}

}  // namespace
}  // namespace mooncake
