// Issue 36: the object table's flat key index (core/master/key_index.h) finds exactly what the
// shard's map holds, through growth, tombstones and their clean-up, and Prefetch of a batch
// changes nothing.
#include "core/master/object_table.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <vector>

namespace mooncake {
namespace {

std::string Key(size_t i) { return "object-table-test-key-" + std::to_string(i); }

// The index agrees with the map for every key in [0, n), present or not.
void ExpectAgrees(ObjectTable& table, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        const std::string key = Key(i);
        Shard& shard = table.ShardFor(key);
        MutexLock lock(shard.mu);
        auto it = shard.objects.find(key);
        ObjectMeta* found = table.Find(shard, key);
        if (it == shard.objects.end()) {
            ASSERT_EQ(found, nullptr) << key;
        } else {
            ASSERT_EQ(found, &it->second) << key;
        }
    }
}

TEST(ObjectTableTest, IndexFollowsInsertsAndErasesThroughRebuilds) {
    ObjectTable table(1);
    std::mt19937_64 rng(7);
    std::set<size_t> live;
    constexpr size_t kKeys = 20000;
    for (int step = 0; step < 100000; ++step) {
        const size_t i = rng() % kKeys;
        const std::string key = Key(i);
        Shard& shard = table.ShardFor(key);
        MutexLock lock(shard.mu);
        if (live.count(i)) {
            table.Erase(shard, *table.Find(shard, key));
            live.erase(i);
        } else {
            auto [meta, inserted] = table.Insert(shard, key);
            ASSERT_TRUE(inserted);
            ASSERT_EQ(*meta->key, key);
            live.insert(i);
        }
    }
    EXPECT_EQ(table.live(), live.size());
    ExpectAgrees(table, kKeys + 100);
}

TEST(ObjectTableTest, EmptyAndShortKeysAndPrefetchChangeNothing) {
    ObjectTable table(1);
    std::vector<std::string> keys = {"a", "b", std::string(4096, 'x')};
    for (const std::string& key : keys) {
        Shard& shard = table.ShardFor(key);
        MutexLock lock(shard.mu);
        table.Insert(shard, key);
    }
    keys.push_back("absent");
    keys.push_back("");
    table.Prefetch(keys);
    for (const std::string& key : keys) {
        Shard& shard = table.ShardFor(key);
        MutexLock lock(shard.mu);
        const bool present = shard.objects.count(key) == 1;
        EXPECT_EQ(table.Find(shard, key) != nullptr, present) << key.substr(0, 8);
    }
    EXPECT_EQ(table.live(), 3u);
}

}  // namespace
}  // namespace mooncake
