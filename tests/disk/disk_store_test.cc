// DiskStore on the memory device: layout, eviction, pins, corruption, recovery, concurrency.
#include "core/disk/disk_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <future>
#include <latch>
#include <map>
#include <mutex>
#include <thread>

#include "core/disk/format.h"
#include "core/disk/memory_device.h"
#include "tests/disk/disk_test_util.h"

namespace mooncake {
namespace {

using disk_test::Pattern;
constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kKiB = 1 << 10;

// 8 MiB: 1 MiB superblock area, 2 MiB journal, 5 MiB of data.
constexpr uint64_t kSmall = 8 * kMiB;

struct Dropped {
    std::string key;
    Generation gen;
    DropReason reason;
    bool operator==(const Dropped&) const = default;
};

class DiskStoreTest : public ::testing::Test {
  protected:
    void SetUp() override { OpenFresh(kSmall); }

    void OpenFresh(uint64_t size) {
        store_.reset();
        device_ = std::make_unique<MemoryDevice>(size);
        Reopen();
    }

    // Drops the store without any shutdown (there is none: everything acknowledged is durable)
    // and opens a new one on the same bytes.
    void Reopen() {
        store_.reset();
        DiskStoreOptions options;
        auto store = DiskStore::OpenOnDevice(device_->OpenHandle(), options);
        ASSERT_TRUE(store.ok()) << store.status().ToString();
        store_ = std::move(*store);
        store_->SetDropListener([this](const DiskObjectInfo& info, DropReason reason) {
            std::lock_guard lock(dropped_mu_);
            dropped_.push_back({info.key, info.generation, reason});
        });
    }

    Status Put(const std::string& key, Generation gen, size_t size) {
        auto data = Pattern(size, std::hash<std::string>{}(key) + gen);
        return store_->Write(key, gen, data, IoPriority::kForeground);
    }

    // Reads and compares with what Put wrote.
    Status Check(const std::string& key, Generation gen, size_t size) {
        std::vector<std::byte> out(size);
        Status st = store_->Read(key, gen, out, IoPriority::kForeground);
        if (st.ok() && out != Pattern(size, std::hash<std::string>{}(key) + gen)) {
            return Status::Internal("wrong bytes for " + key);
        }
        return st;
    }

    std::vector<std::string> Keys() {
        std::vector<std::string> keys;
        for (const auto& info : store_->List()) keys.push_back(info.key);
        return keys;
    }

    std::vector<Dropped> TakeDropped() {
        std::lock_guard lock(dropped_mu_);
        return std::exchange(dropped_, {});
    }

    disk_format::Superblock Layout() const {
        return disk_format::Superblock::ForCapacity(device_->size(), 0);
    }

    std::unique_ptr<MemoryDevice> device_;
    std::unique_ptr<DiskStore> store_;
    std::mutex dropped_mu_;
    std::vector<Dropped> dropped_;
};

TEST_F(DiskStoreTest, RoundTripOfManySizesAndAlignments) {
    const std::vector<size_t> sizes = {0, 1, 100, 4096, 4097, 64 * kKiB + 7, kMiB, 2 * kMiB + 3};
    for (size_t i = 0; i < sizes.size(); ++i) {
        ASSERT_TRUE(Put("k" + std::to_string(i), 7, sizes[i]).ok()) << sizes[i];
    }
    auto check_all = [&] {
        for (size_t i = 0; i < sizes.size(); ++i) {
            std::string key = "k" + std::to_string(i);
            EXPECT_TRUE(Check(key, 7, sizes[i]).ok()) << key;
            EXPECT_EQ(*store_->SizeOf(key, 7), sizes[i]);
            // An unaligned destination works too.
            auto expected = Pattern(sizes[i], std::hash<std::string>{}(key) + 7);
            std::vector<std::byte> buf(sizes[i] + 1);
            ASSERT_TRUE(
                store_->Read(key, 7, {buf.data() + 1, sizes[i]}, IoPriority::kBackground).ok());
            EXPECT_TRUE(std::equal(expected.begin(), expected.end(), buf.begin() + 1));
        }
    };
    check_all();
    EXPECT_EQ(store_->object_count(), sizes.size());
    EXPECT_EQ(store_->capacity(), 5 * kMiB);
    uint64_t blocks = 0;
    for (size_t s : sizes) blocks += AlignUp(s);
    EXPECT_EQ(store_->used(), blocks);
    Reopen();
    check_all();
    EXPECT_EQ(store_->used(), blocks);
    EXPECT_EQ(store_->stats().recovered_objects, sizes.size());
}

TEST_F(DiskStoreTest, ReadErrorsAreClear) {
    ASSERT_TRUE(Put("a", 5, 10).ok());
    std::vector<std::byte> out(10);
    EXPECT_EQ(store_->Read("b", 5, out, IoPriority::kForeground).code(), StatusCode::kNotFound);
    EXPECT_EQ(store_->Read("a", 4, out, IoPriority::kForeground).code(),
              StatusCode::kStaleGeneration);
    EXPECT_EQ(store_->Read("a", 6, out, IoPriority::kForeground).code(),
              StatusCode::kStaleGeneration);
    std::vector<std::byte> small(9);
    EXPECT_EQ(store_->Read("a", 5, small, IoPriority::kForeground).code(),
              StatusCode::kInvalidArgument);
    EXPECT_EQ(store_->SizeOf("b", 5).status().code(), StatusCode::kNotFound);
    EXPECT_EQ(store_->Write("", 5, out, IoPriority::kForeground).code(),
              StatusCode::kInvalidArgument);
    EXPECT_EQ(store_->Write(std::string("a\0b", 3), 5, out, IoPriority::kForeground).code(),
              StatusCode::kInvalidArgument);
    EXPECT_EQ(store_->Write("a", kNoGeneration, out, IoPriority::kForeground).code(),
              StatusCode::kInvalidArgument);
    EXPECT_EQ(store_->Remove("a", 4).code(), StatusCode::kStaleGeneration);
    EXPECT_EQ(store_->Remove("zz", 4).code(), StatusCode::kNotFound);
}

TEST_F(DiskStoreTest, IdempotentWriteAndGenerations) {
    ASSERT_TRUE(Put("a", 10, 5000).ok());
    uint64_t writes = device_->writes();
    EXPECT_TRUE(Put("a", 10, 5000).ok());
    EXPECT_EQ(device_->writes(), writes);  // nothing written again
    EXPECT_EQ(store_->object_count(), 1u);
    EXPECT_EQ(Put("a", 9, 5000).code(), StatusCode::kStaleGeneration);
    // A newer generation replaces the old one, silently, and durably.
    ASSERT_TRUE(Put("a", 11, 3000).ok());
    EXPECT_EQ(store_->object_count(), 1u);
    EXPECT_TRUE(Check("a", 11, 3000).ok());
    EXPECT_EQ(Check("a", 10, 5000).code(), StatusCode::kStaleGeneration);
    EXPECT_TRUE(TakeDropped().empty());
    EXPECT_EQ(store_->used(), AlignUp(3000));
    Reopen();
    EXPECT_TRUE(Check("a", 11, 3000).ok());
    EXPECT_EQ(store_->object_count(), 1u);
}

TEST_F(DiskStoreTest, EvictsLeastRecentlyUsedFirst) {
    // 5 MiB of data: five 1 MiB objects fill it.
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(Put("o" + std::to_string(i), 1, kMiB).ok());
    EXPECT_EQ(store_->used(), 5 * kMiB);
    ASSERT_TRUE(Check("o0", 1, kMiB).ok());  // o0 becomes the most recent
    ASSERT_TRUE(Put("o5", 1, kMiB).ok());
    EXPECT_EQ(TakeDropped(), (std::vector<Dropped>{{"o1", 1, DropReason::kEvicted}}));
    ASSERT_TRUE(Put("o6", 1, 2 * kMiB).ok());
    EXPECT_EQ(TakeDropped(), (std::vector<Dropped>{{"o2", 1, DropReason::kEvicted},
                                                   {"o3", 1, DropReason::kEvicted}}));
    EXPECT_EQ(Keys(), (std::vector<std::string>{"o4", "o0", "o5", "o6"}));
    EXPECT_EQ(store_->stats().evictions, 3u);
    // Evictions are durable. After a restart recency is the write order.
    Reopen();
    EXPECT_EQ(Keys(), (std::vector<std::string>{"o0", "o4", "o5", "o6"}));
    EXPECT_EQ(Check("o1", 1, kMiB).code(), StatusCode::kNotFound);
}

TEST_F(DiskStoreTest, PinnedObjectsAreNeverEvicted) {
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(Put("o" + std::to_string(i), 1, kMiB).ok());
    store_->Pin("o0", 1);
    store_->Pin("o0", 1);  // counted
    store_->Pin("o1", 2);  // other generation: no effect
    ASSERT_TRUE(Put("o5", 1, kMiB).ok());
    ASSERT_TRUE(Put("o6", 1, kMiB).ok());
    EXPECT_EQ(TakeDropped(), (std::vector<Dropped>{{"o1", 1, DropReason::kEvicted},
                                                   {"o2", 1, DropReason::kEvicted}}));
    store_->Unpin("o0", 1);
    ASSERT_TRUE(Put("o7", 1, kMiB).ok());
    EXPECT_EQ(TakeDropped(), (std::vector<Dropped>{{"o3", 1, DropReason::kEvicted}}));
    store_->Unpin("o0", 1);
    ASSERT_TRUE(Put("o8", 1, kMiB).ok());
    EXPECT_EQ(TakeDropped(), (std::vector<Dropped>{{"o0", 1, DropReason::kEvicted}}));
}

TEST_F(DiskStoreTest, FullAndPinnedIsNoSpaceWithNothingWritten) {
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(Put("o" + std::to_string(i), 1, kMiB).ok());
    for (int i = 0; i < 3; ++i) store_->Pin("o" + std::to_string(i), 1);
    // 1 MiB free + 1 MiB evictable < 3 MiB: refused before anything is evicted or written.
    uint64_t writes = device_->writes();
    Status st = Put("big", 1, 3 * kMiB);
    EXPECT_EQ(st.code(), StatusCode::kNoSpace) << st.ToString();
    EXPECT_EQ(device_->writes(), writes);
    EXPECT_TRUE(TakeDropped().empty());
    EXPECT_EQ(store_->object_count(), 4u);
    EXPECT_EQ(Check("big", 1, 3 * kMiB).code(), StatusCode::kNotFound);
    // Larger than the whole store.
    EXPECT_EQ(Put("huge", 1, 6 * kMiB).code(), StatusCode::kNoSpace);
    // What can be relieved is.
    ASSERT_TRUE(Put("mid", 1, 2 * kMiB).ok());
    EXPECT_EQ(TakeDropped(), (std::vector<Dropped>{{"o3", 1, DropReason::kEvicted}}));
}

TEST_F(DiskStoreTest, CorruptionIsDetectedAndDropped) {
    ASSERT_TRUE(Put("victim", 3, 64 * kKiB).ok());
    ASSERT_TRUE(Put("bystander", 3, 64 * kKiB).ok());
    // The first object sits at the start of the data region.
    device_->FlipBit(Layout().data_offset + 12345, 3);
    EXPECT_EQ(Check("victim", 3, 64 * kKiB).code(), StatusCode::kCorruption);
    EXPECT_EQ(TakeDropped(), (std::vector<Dropped>{{"victim", 3, DropReason::kCorrupt}}));
    // Dropped, and a later read is told why (a read racing the one that found it, too).
    EXPECT_EQ(Check("victim", 3, 64 * kKiB).code(), StatusCode::kCorruption);
    EXPECT_TRUE(Check("bystander", 3, 64 * kKiB).ok());
    EXPECT_EQ(store_->stats().corruptions, 1u);
    Reopen();
    EXPECT_EQ(Check("victim", 3, 64 * kKiB).code(), StatusCode::kNotFound);
    EXPECT_TRUE(Check("bystander", 3, 64 * kKiB).ok());
}

TEST_F(DiskStoreTest, ReadIoErrorKeepsTheObject) {
    ASSERT_TRUE(Put("a", 1, 8192).ok());
    device_->SetFaultHook([](MemoryDevice::Op op, const IoRequest&) {
        return MemoryDevice::Fault{op == MemoryDevice::Op::kRead ? MemoryDevice::Fault::kIoError
                                                                 : MemoryDevice::Fault::kNone};
    });
    EXPECT_EQ(Check("a", 1, 8192).code(), StatusCode::kIoError);
    device_->SetFaultHook(nullptr);
    EXPECT_TRUE(Check("a", 1, 8192).ok());
    EXPECT_TRUE(TakeDropped().empty());
}

TEST_F(DiskStoreTest, RemoveIsDurable) {
    ASSERT_TRUE(Put("a", 1, 10000).ok());
    ASSERT_TRUE(Put("b", 1, 10000).ok());
    store_->Pin("a", 1);
    ASSERT_TRUE(store_->Remove("a", 1).ok());
    EXPECT_EQ(Check("a", 1, 10000).code(), StatusCode::kNotFound);
    EXPECT_EQ(store_->used(), AlignUp(10000));
    Reopen();
    EXPECT_EQ(Keys(), std::vector<std::string>{"b"});
    // The key can come back as a new incarnation.
    ASSERT_TRUE(Put("a", 2, 100).ok());
    Reopen();
    EXPECT_TRUE(Check("a", 2, 100).ok());
}

// An engine's pages are small (4-64 KiB) and its keys long: a disk filled with 4 KiB pages
// under 60-byte keys holds them in its data region, not in a fifth of it. (With a journal of
// 1/32 of the capacity the index filled first, and from then on every write evicted a record
// for index room, one journal flush each.)
TEST_F(DiskStoreTest, SmallPagesFillTheDataRegionBeforeTheIndex) {
    OpenFresh(48 * kMiB);
    const uint64_t pages = store_->capacity() / (4 * kKiB);
    for (uint64_t i = 0; i < pages * 95 / 100; ++i) {
        char key[64];
        std::snprintf(key, sizeof key, "model-7b@tp0@layer-group-3@%032llu",
                      static_cast<unsigned long long>(i));
        ASSERT_TRUE(Put(key, 1, 4 * kKiB).ok()) << i;
    }
    EXPECT_EQ(store_->stats().evictions, 0u) << "evicted while the data region had room";
    EXPECT_GE(store_->used(), store_->capacity() * 9 / 10);
}

// A heartbeat's deletes go as one RemoveMany: one journal commit for all of them (one flush,
// not one per record), each item answered as Remove would be, and durable like Remove.
TEST_F(DiskStoreTest, RemoveManyCommitsOnceAndAnswersEachItem) {
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(Put("k" + std::to_string(i), 3, 5000).ok());
    std::vector<std::string> keys;
    for (int i = 0; i < 10; ++i) keys.push_back("k" + std::to_string(i));
    keys.push_back("missing");
    keys.push_back("k10");
    std::vector<DiskRemoval> items;
    for (const std::string& key : keys) items.push_back({key, 3});
    items.back().generation = 2;  // k10 is held as generation 3
    const uint64_t commits = store_->stats().journal_commits;
    std::vector<Status> answers = store_->RemoveMany(items);
    EXPECT_EQ(store_->stats().journal_commits, commits + 1);
    ASSERT_EQ(answers.size(), items.size());
    for (int i = 0; i < 10; ++i) EXPECT_TRUE(answers[i].ok()) << answers[i].ToString();
    EXPECT_EQ(answers[10].code(), StatusCode::kNotFound);
    EXPECT_EQ(answers[11].code(), StatusCode::kStaleGeneration);
    EXPECT_EQ(store_->stats().removes, 10u);
    Reopen();
    EXPECT_EQ(store_->object_count(), 10u);
    EXPECT_EQ(Check("k0", 3, 5000).code(), StatusCode::kNotFound);
    EXPECT_TRUE(Check("k10", 3, 5000).ok());
}

TEST_F(DiskStoreTest, WriteManyCommitsOnceAndAnswersEachItem) {
    ASSERT_TRUE(Put("held", 5, 3000).ok());
    struct Item {
        std::string key;
        Generation generation;
        size_t size;
    };
    std::vector<Item> plan;
    for (int i = 0; i < 12; ++i) plan.push_back({"w" + std::to_string(i), 3, 1000 + 517u * i});
    plan.push_back({"held", 4, 100});   // older than the record held: stale
    plan.push_back({"held", 5, 3000});  // the record held: already stored
    plan.push_back({"w0", 3, 1000});    // twice in the batch: written once
    plan.push_back({"", 3, 10});        // no key
    std::vector<std::vector<std::byte>> bytes;
    std::vector<DiskWrite> items;
    for (const Item& it : plan) {
        bytes.push_back(Pattern(it.size, std::hash<std::string>{}(it.key) + it.generation));
    }
    for (size_t i = 0; i < plan.size(); ++i) {
        items.push_back({plan[i].key, plan[i].generation, bytes[i]});
    }
    const uint64_t commits = store_->stats().journal_commits;
    std::vector<Status> answers = store_->WriteMany(items, IoPriority::kBackground);
    EXPECT_EQ(store_->stats().journal_commits, commits + 1);
    ASSERT_EQ(answers.size(), items.size());
    for (int i = 0; i < 12; ++i) EXPECT_TRUE(answers[i].ok()) << i << ": " << answers[i].ToString();
    EXPECT_EQ(answers[12].code(), StatusCode::kStaleGeneration);
    EXPECT_TRUE(answers[13].ok()) << answers[13].ToString();
    EXPECT_TRUE(answers[14].ok()) << answers[14].ToString();
    EXPECT_EQ(answers[15].code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(store_->stats().writes, 1u + 12u);
    Reopen();
    EXPECT_EQ(store_->object_count(), 13u);
    for (int i = 0; i < 12; ++i) {
        EXPECT_TRUE(Check(plan[i].key, 3, plan[i].size).ok()) << plan[i].key;
    }
    EXPECT_TRUE(Check("held", 5, 3000).ok());
}

// Space held by a batch's own earlier items cannot be evicted: an item refused room for that
// is written alone after the batch, where it evicts as a single Write would.
TEST_F(DiskStoreTest, WriteManyItemRefusedRoomHeldByItsBatchIsWrittenAfterIt) {
    const uint64_t size = store_->capacity() * 45 / 100 / (4 * kKiB) * (4 * kKiB);
    const std::vector<std::string> keys = {"a", "b", "c"};  // together 135% of the disk
    std::vector<std::vector<std::byte>> bytes;
    std::vector<DiskWrite> items;
    for (const std::string& key : keys) {
        bytes.push_back(Pattern(size, std::hash<std::string>{}(key) + 1));
    }
    for (size_t i = 0; i < keys.size(); ++i) items.push_back({keys[i], 1, bytes[i]});
    std::vector<Status> answers = store_->WriteMany(items, IoPriority::kBackground);
    for (const Status& st : answers) EXPECT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(Check("a", 1, size).code(), StatusCode::kNotFound);  // evicted for "c"
    EXPECT_TRUE(Check("b", 1, size).ok());
    EXPECT_TRUE(Check("c", 1, size).ok());
}

// Two batches that each hold the other's key in flight: neither waits for the other while it
// holds reservations (each writes its twin alone afterwards), so both finish.
TEST_F(DiskStoreTest, WriteManyBatchesSharingKeysDoNotWaitForEachOther) {
    std::vector<std::vector<std::byte>> bytes;
    std::vector<std::string> keys;
    for (int i = 0; i < 64; ++i) {
        keys.push_back("shared" + std::to_string(i));
        bytes.push_back(Pattern(4096, std::hash<std::string>{}(keys.back())));
    }
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (int round = 0; round < 20; ++round) {
                std::vector<DiskWrite> items;
                // Each thread walks the keys in its own order, so batches overlap both ways.
                for (int i = 0; i < 64; ++i) {
                    const int k = t % 2 == 0 ? i : 63 - i;
                    // A new generation each round: every round writes (a newer one
                    // replaces, an older one is stale; both are answers, not failures).
                    items.push_back({keys[k], static_cast<Generation>(2 + round), bytes[k]});
                }
                for (const Status& st : store_->WriteMany(items, IoPriority::kBackground)) {
                    if (!st.ok() && !st.Is(StatusCode::kStaleGeneration)) ++failures;
                }
            }
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_EQ(store_->object_count(), 64u);
    for (size_t k = 0; k < keys.size(); ++k) {
        std::vector<std::byte> out(4096);
        ASSERT_TRUE(store_->Read(keys[k], 21, out, IoPriority::kForeground).ok()) << keys[k];
        EXPECT_TRUE(out == bytes[k]) << keys[k];
    }
}

TEST_F(DiskStoreTest, TombstonesSurviveJournalCheckpoints) {
    // Enough commits to wrap the 1 MiB journal halves several times.
    std::map<std::string, Generation> expect;
    for (int i = 0; i < 1500; ++i) {
        std::string key = "key-" + std::to_string(i % 97);
        Generation gen = static_cast<Generation>(i + 1);
        if (i % 3 == 2 && expect.contains(key)) {
            ASSERT_TRUE(store_->Remove(key, expect[key]).ok());
            expect.erase(key);
        } else {
            ASSERT_TRUE(Put(key, gen, 100 + i).ok());
            expect[key] = gen;
        }
    }
    EXPECT_GT(store_->stats().journal_checkpoints, 2u);
    Reopen();
    ASSERT_EQ(store_->object_count(), expect.size());
    for (const auto& info : store_->List()) {
        ASSERT_TRUE(expect.contains(info.key));
        EXPECT_EQ(info.generation, expect[info.key]);
        EXPECT_TRUE(Check(info.key, info.generation, info.size).ok());
    }
}

TEST_F(DiskStoreTest, TornJournalWriteIsSkippedOnRecovery) {
    ASSERT_TRUE(Put("a", 1, 5000).ok());
    const auto layout = Layout();
    // The next journal batch reaches the disk only in part, then the "process dies".
    device_->SetFaultHook([&](MemoryDevice::Op op, const IoRequest& req) {
        bool journal = req.offset >= layout.journal_offset && req.offset < layout.data_offset;
        if (op == MemoryDevice::Op::kWrite && journal) {
            return MemoryDevice::Fault{MemoryDevice::Fault::kTorn, 100};
        }
        return MemoryDevice::Fault{};
    });
    EXPECT_EQ(Put("b", 1, std::string(4000, 'x').size()).code(), StatusCode::kIoError);
    // The journal refuses further commits until the store is reopened.
    EXPECT_EQ(Put("c", 1, 10).code(), StatusCode::kIoError);
    EXPECT_TRUE(Check("a", 1, 5000).ok());
    device_->SetFaultHook(nullptr);
    Reopen();
    EXPECT_EQ(Keys(), std::vector<std::string>{"a"});
    EXPECT_TRUE(Check("a", 1, 5000).ok());
    EXPECT_EQ(store_->stats().recovery_skipped_batches, 1u);
    ASSERT_TRUE(Put("c", 1, 10).ok());
    Reopen();
    EXPECT_EQ(Keys(), (std::vector<std::string>{"a", "c"}));
}

TEST_F(DiskStoreTest, CorruptOlderBatchIsSkippedNotFatal) {
    ASSERT_TRUE(Put("a", 1, 100).ok());
    ASSERT_TRUE(Put("b", 1, 100).ok());
    ASSERT_TRUE(Put("c", 1, 100).ok());
    // Batches: checkpoint at half 0 block 0, then one per Put. Damage b's.
    device_->FlipBit(Layout().journal_offset + 2 * kDeviceBlockSize + 70, 1);
    Reopen();
    EXPECT_EQ(Keys(), (std::vector<std::string>{"a", "c"}));
    EXPECT_EQ(store_->stats().recovery_skipped_batches, 1u);
}

TEST_F(DiskStoreTest, PowerLossDuringCommitDropsObjectsWhoseBytesAreMissing) {
    ASSERT_TRUE(Put("a", 1, 20000).ok());
    const auto layout = Layout();
    // The data of "b" never reaches the media, but its journal batch does (a volatile cache
    // that kept one write and lost the other).
    device_->SetFaultHook([&](MemoryDevice::Op op, const IoRequest& req) {
        if (op == MemoryDevice::Op::kWrite && req.offset >= layout.data_offset) {
            return MemoryDevice::Fault{MemoryDevice::Fault::kDropSilently};
        }
        return MemoryDevice::Fault{};
    });
    ASSERT_TRUE(Put("b", 1, 20000).ok());
    device_->SetFaultHook(nullptr);
    Reopen();
    EXPECT_EQ(Keys(), std::vector<std::string>{"a"});
    EXPECT_EQ(store_->stats().recovery_dropped, 1u);
    EXPECT_TRUE(Check("a", 1, 20000).ok());
}

TEST_F(DiskStoreTest, LostUnflushedWritesLoseOnlyUnacknowledgedWork) {
    ASSERT_TRUE(Put("a", 1, 20000).ok());
    // "b" is being written when the power goes: its data write happens, the journal write
    // fails, nothing was flushed.
    const auto layout = Layout();
    device_->SetFaultHook([&](MemoryDevice::Op op, const IoRequest& req) {
        bool journal = req.offset >= layout.journal_offset && req.offset < layout.data_offset;
        if (op == MemoryDevice::Op::kWrite && journal) {
            return MemoryDevice::Fault{MemoryDevice::Fault::kIoError};
        }
        return MemoryDevice::Fault{};
    });
    EXPECT_FALSE(Put("b", 1, 20000).ok());
    device_->SetFaultHook(nullptr);
    device_->LoseUnflushedWrites();
    Reopen();
    EXPECT_EQ(Keys(), std::vector<std::string>{"a"});
    EXPECT_TRUE(Check("a", 1, 20000).ok());
}

TEST_F(DiskStoreTest, SpaceOfAnObjectBeingReadIsNotReusedUntilTheReadEnds) {
    ASSERT_TRUE(Put("x", 1, 2 * kMiB).ok());
    const auto layout = Layout();
    std::latch reading(1), release(1);
    std::atomic<bool> armed{true};
    device_->SetFaultHook([&](MemoryDevice::Op op, const IoRequest& req) {
        if (op == MemoryDevice::Op::kRead && req.offset >= layout.data_offset &&
            armed.exchange(false)) {
            reading.count_down();
            release.wait();
        }
        return MemoryDevice::Fault{};
    });
    Status read_status;
    std::thread reader([&] { read_status = Check("x", 1, 2 * kMiB); });
    reading.wait();
    ASSERT_TRUE(store_->Remove("x", 1).ok());
    // x's blocks are still held by the reader: a new object must go elsewhere.
    EXPECT_EQ(store_->used(), 2 * kMiB);
    ASSERT_TRUE(Put("y", 1, 3 * kMiB).ok());
    EXPECT_EQ(store_->used(), 5 * kMiB);
    release.count_down();
    reader.join();
    EXPECT_TRUE(read_status.ok()) << read_status.ToString();
    EXPECT_EQ(store_->used(), 3 * kMiB);
    device_->SetFaultHook(nullptr);
}

TEST_F(DiskStoreTest, IndexBudgetEvictsWhenKeysOutgrowTheJournal) {
    // 4 KiB keys on tiny objects: the index (half of a 1 MiB journal half) fills before the data.
    std::string long_key(4000, 'k');
    int stored = 0;
    for (int i = 0; i < 300; ++i) {
        std::string key = long_key + std::to_string(i);
        ASSERT_TRUE(Put(key, 1, 10).ok()) << i;
        ++stored;
    }
    EXPECT_LT(store_->object_count(), 300u);
    EXPECT_GT(store_->stats().evictions, 0u);
    Reopen();
    EXPECT_EQ(store_->object_count(), store_->List().size());
    for (const auto& info : store_->List()) EXPECT_TRUE(Check(info.key, 1, 10).ok());
}

TEST_F(DiskStoreTest, ConcurrentReadersAndWriters) {
    OpenFresh(32 * kMiB);
    constexpr int kThreads = 6;
    constexpr int kOps = 300;
    std::atomic<int> bad{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kOps; ++i) {
                // Shared keys across threads; generation encodes the writer so data is checkable.
                std::string key = "key-" + std::to_string((i * 7 + t) % 40);
                size_t size = 1000 + static_cast<size_t>((i * 131 + t * 17) % 300000);
                Generation gen = static_cast<Generation>(i * kThreads + t + 1);
                switch (i % 4) {
                    case 0:
                    case 1: {
                        Status st = Put(key, gen, size);
                        if (!st.ok() && !st.Is(StatusCode::kStaleGeneration)) ++bad;
                        break;
                    }
                    case 2: {
                        for (const auto& info : store_->List()) {
                            if (info.key != key) continue;
                            Status st = Check(info.key, info.generation, info.size);
                            // Racing with a replace or remove is fine; wrong bytes never are.
                            if (!st.ok() && !st.Is(StatusCode::kNotFound) &&
                                !st.Is(StatusCode::kStaleGeneration)) {
                                ++bad;
                            }
                        }
                        break;
                    }
                    case 3: {
                        for (const auto& info : store_->List()) {
                            if (info.key != key) continue;
                            Status st = store_->Remove(info.key, info.generation);
                            if (!st.ok() && !st.Is(StatusCode::kNotFound) &&
                                !st.Is(StatusCode::kStaleGeneration)) {
                                ++bad;
                            }
                        }
                        break;
                    }
                }
            }
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(bad.load(), 0);
    auto listed = store_->List();
    uint64_t used = 0;
    for (const auto& info : listed) {
        EXPECT_TRUE(Check(info.key, info.generation, info.size).ok()) << info.key;
        used += AlignUp(info.size);
    }
    EXPECT_EQ(store_->used(), used);  // nothing leaked
    Reopen();
    EXPECT_EQ(store_->List().size(), listed.size());
    for (const auto& info : store_->List()) {
        EXPECT_TRUE(Check(info.key, info.generation, info.size).ok()) << info.key;
    }
}

TEST(DiskStoreBackgroundTest, BackgroundIoPassesTheRateLimiter) {
    // A rate high enough that nothing here has to wait: the path is exercised, time is not.
    ManualClock clock;
    DiskStoreOptions options;
    options.background_bytes_per_sec = uint64_t{1} << 40;
    options.clock = &clock;
    options.queue_depth = 4;  // one background operation at a time
    auto device = std::make_unique<MemoryDevice>(kSmall);
    auto store = DiskStore::OpenOnDevice(device->OpenHandle(), options);
    ASSERT_TRUE(store.ok());
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < 20; ++i) {
                std::string key = "bg" + std::to_string(t) + "-" + std::to_string(i);
                auto data = Pattern(10000 + i, t);
                auto prio = i % 2 ? IoPriority::kBackground : IoPriority::kForeground;
                if (!(*store)->Write(key, 1, data, prio).ok()) ++failures;
                std::vector<std::byte> out(data.size());
                if (!(*store)->Read(key, 1, out, IoPriority::kBackground).ok() || out != data) {
                    ++failures;
                }
            }
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_EQ((*store)->object_count(), 80u);
}

// The node runs one offload worker per background slot (node/node.cc OffloadWorkers): a
// quarter of the queue, at least one, and 32 at the daemon's default depth of 128.
TEST(DiskStoreBackgroundTest, BackgroundSlotsAreAQuarterOfTheQueueDepth) {
    for (auto [depth, slots] : {std::pair{128, 32u}, {32, 8u}, {4, 1u}, {1, 1u}}) {
        DiskStoreOptions options;
        options.queue_depth = depth;
        auto device = std::make_unique<MemoryDevice>(kSmall);
        auto store = DiskStore::OpenOnDevice(device->OpenHandle(), options);
        ASSERT_TRUE(store.ok()) << store.status().ToString();
        EXPECT_EQ((*store)->background_slots(), slots) << "queue depth " << depth;
    }
}

// A promotion's read has slots of its own: an offload write holding the only background slot
// (queue_depth 4 -> one of each) through its I/O does not hold a hot object off DRAM.
TEST(DiskStoreBackgroundTest, PromotionReadsDoNotWaitForBackgroundWrites) {
    DiskStoreOptions options;
    options.queue_depth = 4;
    auto device = std::make_unique<MemoryDevice>(kSmall);
    MemoryDevice& dev = *device;
    auto store = DiskStore::OpenOnDevice(device->OpenHandle(), options);
    ASSERT_TRUE(store.ok());
    const auto hot = Pattern(8192, 1);
    ASSERT_TRUE((*store)->Write("hot", 1, hot, IoPriority::kForeground).ok());
    std::mutex mu;
    std::condition_variable cv;
    bool holding = false, release = false;
    dev.SetFaultHook([&](MemoryDevice::Op op, const IoRequest&) {
        if (op == MemoryDevice::Op::kWrite) {
            std::unique_lock lock(mu);
            holding = true;
            cv.notify_all();
            cv.wait(lock, [&] { return release; });
        }
        return MemoryDevice::Fault{};
    });
    std::thread offload([&] {
        EXPECT_TRUE((*store)->Write("cold", 1, Pattern(8192, 2), IoPriority::kBackground).ok());
    });
    {
        std::unique_lock lock(mu);
        ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return holding; }));
    }
    // The background slot is taken and the write is in flight; the promotion read goes on.
    std::vector<std::byte> out(hot.size());
    auto read = std::async(std::launch::async, [&] {
        return (*store)->Read("hot", 1, out, IoPriority::kPromotion);
    });
    const bool done = read.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
    {
        std::lock_guard lock(mu);
        release = true;
        cv.notify_all();
    }
    offload.join();
    ASSERT_TRUE(done) << "the promotion read waited for the background write";
    EXPECT_TRUE(read.get().ok());
    EXPECT_EQ(out, hot);
    dev.SetFaultHook(nullptr);
    EXPECT_EQ((*store)->object_count(), 2u);
}

TEST(DiskStoreFormatTest, RefusesForeignNewerAndResizedStores) {
    auto device = std::make_unique<MemoryDevice>(kSmall);
    DiskStoreOptions options;
    {
        auto store = DiskStore::OpenOnDevice(device->OpenHandle(), options);
        ASSERT_TRUE(store.ok());
    }
    // Another capacity than the store was made with.
    options.capacity = 4 * kMiB;
    auto resized = DiskStore::OpenOnDevice(device->OpenHandle(), options);
    EXPECT_EQ(resized.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(resized.status().message().find("resizing"), std::string::npos);
    options.capacity = 0;
    // Not MiB aligned.
    options.capacity = 5 * kMiB + 4096;
    EXPECT_EQ(DiskStore::OpenOnDevice(device->OpenHandle(), options).status().code(),
              StatusCode::kInvalidArgument);
    options.capacity = 0;
    // A newer format version in both superblock copies.
    uint32_t newer = disk_format::kFormatVersion + 1;
    for (uint64_t copy = 0; copy < 2; ++copy) {
        device->Poke(copy * kDeviceBlockSize + 8,
                     {reinterpret_cast<const std::byte*>(&newer), sizeof newer});
    }
    auto st = DiskStore::OpenOnDevice(device->OpenHandle(), options);
    EXPECT_EQ(st.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.status().message().find("newer"), std::string::npos) << st.status().ToString();
    // Someone else's bytes.
    std::string junk = "this is not a disk store";
    device->Poke(0, {reinterpret_cast<const std::byte*>(junk.data()), junk.size()});
    device->Poke(kDeviceBlockSize, {reinterpret_cast<const std::byte*>(junk.data()), junk.size()});
    EXPECT_EQ(DiskStore::OpenOnDevice(device->OpenHandle(), options).status().code(),
              StatusCode::kInvalidArgument);
}

TEST(DiskStoreFormatTest, OneDamagedSuperblockCopyIsTolerated) {
    auto device = std::make_unique<MemoryDevice>(kSmall);
    {
        auto store = DiskStore::OpenOnDevice(device->OpenHandle(), {});
        ASSERT_TRUE(store.ok());
        auto data = Pattern(100, 1);
        ASSERT_TRUE((*store)->Write("a", 1, data, IoPriority::kForeground).ok());
    }
    device->FlipBit(20, 0);
    auto store = DiskStore::OpenOnDevice(device->OpenHandle(), {});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    EXPECT_EQ((*store)->object_count(), 1u);
    store->reset();
    // The open repaired copy 0 from copy 1: damage to copy 1 now is survivable too.
    device->FlipBit(kDeviceBlockSize + 20, 0);
    store = DiskStore::OpenOnDevice(device->OpenHandle(), {});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    EXPECT_EQ((*store)->object_count(), 1u);
    store->reset();
    // Both damaged at once: nothing to trust.
    device->FlipBit(20, 0);
    device->FlipBit(kDeviceBlockSize + 20, 0);
    EXPECT_EQ(DiskStore::OpenOnDevice(device->OpenHandle(), {}).status().code(),
              StatusCode::kCorruption);
}

}  // namespace
}  // namespace mooncake
