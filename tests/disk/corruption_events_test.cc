// Corruption is an event (issue 22): every checksum failure, damaged journal batch (payload or
// header), bad record and damaged superblock copy reaches DiskStoreOptions::on_corruption with
// its kind (each is also a warning line); Scrub finds what reads would; allocated_bytes is the
// one "disk used" figure.
#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "core/disk/disk_store.h"
#include "core/disk/format.h"
#include "core/disk/memory_device.h"
#include "tests/disk/disk_test_util.h"

namespace mooncake {
namespace {

using disk_test::Pattern;
constexpr uint64_t kSmall = 8 << 20;

class CorruptionEventsTest : public ::testing::Test {
  protected:
    void SetUp() override {
        device_ = std::make_unique<MemoryDevice>(kSmall);
        Reopen();
    }

    void Reopen() {
        store_.reset();
        DiskStoreOptions options;
        options.on_corruption = [this](CorruptionKind kind) {
            std::lock_guard lock(mu_);
            ++events_[kind];
        };
        auto store = DiskStore::OpenOnDevice(device_->OpenHandle(), options);
        ASSERT_TRUE(store.ok()) << store.status().ToString();
        store_ = std::move(*store);
    }

    Status Put(const std::string& key, size_t size) {
        return store_->Write(key, 1, Pattern(size, std::hash<std::string>{}(key)),
                             IoPriority::kForeground);
    }
    Status Read(const std::string& key, size_t size) {
        std::vector<std::byte> out(size);
        return store_->Read(key, 1, out, IoPriority::kForeground);
    }
    std::map<CorruptionKind, int> TakeEvents() {
        std::lock_guard lock(mu_);
        return std::exchange(events_, {});
    }
    std::vector<std::string> Keys() {
        std::vector<std::string> keys;
        for (const auto& info : store_->List()) keys.push_back(info.key);
        return keys;
    }
    disk_format::Superblock Layout() const {
        return disk_format::Superblock::ForCapacity(device_->size(), 0);
    }

    std::unique_ptr<MemoryDevice> device_;
    std::unique_ptr<DiskStore> store_;
    std::mutex mu_;
    std::map<CorruptionKind, int> events_;
};

using Events = std::map<CorruptionKind, int>;

TEST_F(CorruptionEventsTest, AFailedChecksumOnReadIsAChecksumEvent) {
    ASSERT_TRUE(Put("victim", 10000).ok());
    ASSERT_TRUE(Put("bystander", 10000).ok());
    EXPECT_EQ(TakeEvents(), Events{});
    device_->FlipBit(Layout().data_offset + 123, 0);
    EXPECT_EQ(Read("victim", 10000).code(), StatusCode::kCorruption);
    EXPECT_EQ(TakeEvents(), (Events{{CorruptionKind::kChecksum, 1}}));
    EXPECT_TRUE(Read("bystander", 10000).ok());
    EXPECT_EQ(TakeEvents(), Events{});
}

// Two reads of a corrupt record race (a promotion's and a client's, say): the one that finds
// the record already dropped is told CORRUPTION too, not NotFound (docs/BAD_INPUT.md: the
// first read a client makes says CORRUPTION). The event is counted once.
TEST_F(CorruptionEventsTest, AReadAfterAnotherDroppedTheCorruptRecordIsCorruptionToo) {
    ASSERT_TRUE(Put("victim", 10000).ok());
    device_->FlipBit(Layout().data_offset + 123, 0);
    EXPECT_EQ(Read("victim", 10000).code(), StatusCode::kCorruption);  // drops it
    EXPECT_EQ(Read("victim", 10000).code(), StatusCode::kCorruption);
    Status later = Read("victim", 10000);
    EXPECT_NE(later.message().find("corrupt on disk"), std::string::npos) << later.ToString();
    EXPECT_EQ(store_->SizeOf("victim", 1).status().code(), StatusCode::kCorruption);
    EXPECT_EQ(TakeEvents(), (Events{{CorruptionKind::kChecksum, 1}}));
    EXPECT_TRUE(Keys().empty());
    // Another incarnation of the key, or a key never written, is not affected.
    EXPECT_EQ(store_->SizeOf("victim", 2).status().code(), StatusCode::kNotFound);
    EXPECT_EQ(store_->SizeOf("other", 1).status().code(), StatusCode::kNotFound);
    ASSERT_TRUE(store_->Write("victim", 2, disk_test::Pattern(10000, 7), IoPriority::kForeground)
                    .ok());
    std::vector<std::byte> out(10000);
    EXPECT_TRUE(store_->Read("victim", 2, out, IoPriority::kForeground).ok());
    EXPECT_EQ(store_->SizeOf("victim", 1).status().code(), StatusCode::kCorruption);
}

TEST_F(CorruptionEventsTest, ADamagedJournalPayloadIsAJournalEvent) {
    ASSERT_TRUE(Put("a", 100).ok());
    ASSERT_TRUE(Put("b", 100).ok());
    ASSERT_TRUE(Put("c", 100).ok());
    // Batches: the checkpoint at block 0, then one per Put. Damage b's payload.
    device_->FlipBit(Layout().journal_offset + 2 * kDeviceBlockSize + 70, 1);
    Reopen();
    EXPECT_EQ(Keys(), (std::vector<std::string>{"a", "c"}));
    EXPECT_EQ(TakeEvents(), (Events{{CorruptionKind::kJournal, 1}}));
    EXPECT_EQ(store_->stats().recovery_damaged_batches, 1u);
}

TEST_F(CorruptionEventsTest, ADamagedJournalHeaderIsFoundByTheMissingBatchNumber) {
    ASSERT_TRUE(Put("a", 100).ok());
    ASSERT_TRUE(Put("b", 100).ok());
    ASSERT_TRUE(Put("c", 100).ok());
    // b's batch header: the batch no longer looks like one at all. Before issue 22 its key
    // vanished without a word.
    device_->FlipBit(Layout().journal_offset + 2 * kDeviceBlockSize + 20, 3);
    Reopen();
    EXPECT_EQ(Keys(), (std::vector<std::string>{"a", "c"}));
    EXPECT_EQ(TakeEvents(), (Events{{CorruptionKind::kJournal, 1}}));
    // A clean reopen finds nothing new.
    Reopen();
    EXPECT_EQ(TakeEvents(), Events{});
}

TEST_F(CorruptionEventsTest, ADamagedSuperblockCopyIsAnEventAndIsRepaired) {
    ASSERT_TRUE(Put("a", 100).ok());
    device_->FlipBit(kDeviceBlockSize + 20, 0);
    Reopen();
    EXPECT_EQ(TakeEvents(), (Events{{CorruptionKind::kSuperblock, 1}}));
    EXPECT_EQ(store_->stats().damaged_superblocks, 1u);
    Reopen();
    EXPECT_EQ(TakeEvents(), Events{});  // repaired from the good copy
    // So later damage to the other copy is survivable too.
    device_->FlipBit(20, 0);
    Reopen();
    EXPECT_EQ(TakeEvents(), (Events{{CorruptionKind::kSuperblock, 1}}));
    EXPECT_EQ(Keys(), std::vector<std::string>{"a"});
}

TEST_F(CorruptionEventsTest, ScrubFindsAndDropsEveryCorruptRecord) {
    for (const char* k : {"a", "b", "c", "d"}) ASSERT_TRUE(Put(k, 5000).ok());
    std::vector<DiskObjectInfo> dropped;
    store_->SetDropListener([&](const DiskObjectInfo& info, DropReason reason) {
        if (reason == DropReason::kCorrupt) dropped.push_back(info);
    });
    // "a" and "c": the first and third objects, two blocks each.
    device_->FlipBit(Layout().data_offset + 10, 2);
    device_->FlipBit(Layout().data_offset + 4 * kDeviceBlockSize + 10, 2);
    ScrubReport report = store_->Scrub();
    EXPECT_EQ(report.checked, 4u);
    EXPECT_EQ(report.checked_bytes, 4u * 5000);
    EXPECT_EQ(report.io_errors, 0u);
    ASSERT_EQ(report.corrupt.size(), 2u);
    EXPECT_EQ(report.corrupt[0].key, "a");
    EXPECT_EQ(report.corrupt[1].key, "c");
    EXPECT_EQ(dropped.size(), 2u);
    EXPECT_EQ(TakeEvents(), (Events{{CorruptionKind::kChecksum, 2}}));
    EXPECT_EQ(Keys(), (std::vector<std::string>{"b", "d"}));  // recency order kept
    EXPECT_TRUE(store_->Scrub().corrupt.empty());
}

TEST_F(CorruptionEventsTest, AllocatedBytesIsWholeBlocksPerObject) {
    EXPECT_EQ(store_->allocated_bytes(), 0u);
    ASSERT_TRUE(Put("small", 10).ok());
    ASSERT_TRUE(Put("exact", 4096).ok());
    ASSERT_TRUE(Put("odd", 4097).ok());
    EXPECT_EQ(store_->allocated_bytes(), 4096u + 4096u + 8192u);
    EXPECT_EQ(store_->allocated_bytes(), DiskFootprint(10) + DiskFootprint(4096) + DiskFootprint(4097));
    EXPECT_EQ(store_->used(), store_->allocated_bytes());  // nothing in flight
    ASSERT_TRUE(store_->Remove("odd", 1).ok());
    EXPECT_EQ(store_->allocated_bytes(), 8192u);
    Reopen();
    EXPECT_EQ(store_->allocated_bytes(), 8192u);
}

}  // namespace
}  // namespace mooncake
