// MEMORY copies (PutConfig::replicas, Mooncake's replica_num) under a real fault: one holder
// killed with SIGKILL while readers read. No read fails or returns other bytes (a reader
// handed the dead node's copy first tries the next), the master drops the dead node's copies
// once it expires, and every key ends with its one copy on the live node, invariants clean.
#include <atomic>
#include <thread>

#include "gtest/gtest.h"
#include "tests/fault/fault_util.h"

namespace mooncake::test {
namespace {

constexpr auto kExpiry = std::chrono::seconds(15);  // node expiry (3 s TTL) on a loaded box

TEST(CopiesFaultTest, AKilledCopyHolderFailsNoReadAndLeavesTheOtherCopy) {
    Figures f;
    Cluster c;
    ASSERT_NE(c.client, nullptr);
    Cluster::NodeProcess& a = c.AddNode("8MiB", false);
    Cluster::NodeProcess& b = c.AddNode("8MiB", false);
    ASSERT_TRUE(c.WaitForNodes(2));
    PutConfig two;
    two.replicas = 2;
    std::vector<WrittenKey> keys;
    for (int i = 0; i < 24; ++i) {
        WrittenKey k{"copied/" + std::to_string(i), 7000u + static_cast<uint64_t>(i),
                     48 * 1024 + static_cast<size_t>(i), true};
        const std::string value = Pattern(k.seed, k.size);
        // Half with the first copy on each node: readers are handed b's first for half.
        const NodeId first = c.IdOf(i % 2 == 0 ? a : b);
        ASSERT_TRUE(c.client->Put(k.key, std::as_bytes(std::span(value)), first, two).ok());
        keys.push_back(k);
    }
    ASSERT_TRUE(WaitAllStat(*c.client, Names(keys), [](const ObjectInfo& info) {
        size_t memory = 0;
        for (const ReplicaDesc& r : info.object.replicas) memory += r.tier == Tier::kMemory;
        return memory == 2;
    }));
    f.keys += keys.size();

    std::atomic<bool> stop{false};
    std::atomic<size_t> reads{0}, failed{0}, wrong{0};
    std::thread reader([&] {
        auto client = ConnectWhenUp(c.master_address);
        if (client == nullptr) return;
        while (!stop.load()) {
            for (const WrittenKey& k : keys) {
                auto got = client->Get(k.key);
                ++reads;
                if (!got.ok()) {
                    ++failed;
                } else if (*got != Pattern(k.seed, k.size)) {
                    ++wrong;
                }
            }
        }
    });
    while (reads.load() < keys.size()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    b.daemon->Kill();
    ++f.faults;
    // Reads go on while the master still lists b's copies, and after it drops them.
    const bool expired = c.WaitForNodes(1, kExpiry);
    const size_t at_expiry = reads.load();
    while (reads.load() < at_expiry + keys.size()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    stop.store(true);
    reader.join();
    f.operations += reads.load();
    ASSERT_TRUE(expired) << "the killed node was never expired";
    EXPECT_EQ(failed.load(), 0u) << "reads failed while one copy's holder was dead";
    EXPECT_EQ(wrong.load(), 0u);

    const NodeId a_id = c.IdOf(a);
    EXPECT_TRUE(WaitAllStat(*c.client, Names(keys), [&](const ObjectInfo& info) {
        return info.object.replicas.size() == 1 && info.object.replicas[0].node == a_id &&
               info.object.replicas[0].tier == Tier::kMemory;
    })) << "a dead node's copy is still listed";
    f.operations += SettleAndCheck(*c.client, keys, "one copy's holder killed");
    f.Print("copy holder killed");
}

}  // namespace
}  // namespace mooncake::test
