// Batch calls (BatchPut, BatchGet, BatchGetInto) against real daemons: per-key statuses among
// present, missing and refused keys, exact bytes, large batches spread over two nodes, reads
// from both tiers, and many threads sharing one client's batch workers.
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "tests/integration/harness.h"

namespace mooncake::test {
namespace {

using Items = std::vector<std::pair<std::string, std::span<const std::byte>>>;

Items AsItems(const std::vector<std::string>& keys, const std::vector<std::string>& values) {
    Items items;
    for (size_t i = 0; i < keys.size(); ++i) {
        items.emplace_back(keys[i], std::as_bytes(std::span(values[i])));
    }
    return items;
}

std::string View(const std::vector<std::byte>& buf, uint64_t n) {
    return std::string(reinterpret_cast<const char*>(buf.data()), n);
}

TEST(BatchTest, BatchGetIntoReportsPerKey) {
    Standalone s({"--dram_size=64MiB", "--enable_offload=false"});
    ASSERT_NE(s.client, nullptr);
    std::vector<std::string> keys = {"bi/0", "bi/1", "bi/2"};
    std::vector<std::string> values = {Pattern(10, 1), Pattern(11, 4096), Pattern(12, 300000)};
    for (const Status& st : s.client->BatchPut(AsItems(keys, values))) {
        ASSERT_TRUE(st.ok()) << st.ToString();
    }
    // present, missing, a buffer one byte short, present again, an invalid key
    std::vector<std::string> ask = {"bi/2", "bi/missing", "bi/1", "bi/0", ""};
    std::vector<std::vector<std::byte>> bufs = {std::vector<std::byte>(300000),
                                                std::vector<std::byte>(10),
                                                std::vector<std::byte>(4095),
                                                std::vector<std::byte>(64),
                                                std::vector<std::byte>(8)};
    std::vector<std::span<std::byte>> outs(bufs.begin(), bufs.end());
    auto got = s.client->BatchGetInto(ask, outs);
    ASSERT_EQ(got.size(), ask.size());
    ASSERT_TRUE(got[0].ok()) << got[0].status().ToString();
    EXPECT_EQ(*got[0], 300000u);
    EXPECT_EQ(View(bufs[0], 300000), values[2]);
    EXPECT_TRUE(got[1].status().Is(StatusCode::kNotFound)) << got[1].status().ToString();
    EXPECT_TRUE(got[2].status().Is(StatusCode::kInvalidArgument)) << got[2].status().ToString();
    EXPECT_NE(got[2].status().message().find("4096"), std::string::npos);
    ASSERT_TRUE(got[3].ok()) << got[3].status().ToString();
    EXPECT_EQ(*got[3], 1u);
    EXPECT_EQ(View(bufs[3], 1), values[0]);
    EXPECT_FALSE(got[4].ok());
    // Fewer buffers than keys: every key refused, nothing read.
    auto mismatched = s.client->BatchGetInto(ask, std::span(outs).first(2));
    ASSERT_EQ(mismatched.size(), ask.size());
    for (const auto& r : mismatched) EXPECT_TRUE(r.status().Is(StatusCode::kInvalidArgument));
    // An empty batch is an empty answer.
    EXPECT_TRUE(s.client->BatchGetInto({}, {}).empty());
    EXPECT_TRUE(s.client->BatchGet({}).empty());
}

TEST(BatchTest, BatchPutRefusesOnlyTheBadItems) {
    Standalone s({"--dram_size=64MiB", "--enable_offload=false"});
    ASSERT_NE(s.client, nullptr);
    ASSERT_TRUE(s.client->Put("bp/taken", "old").ok());
    std::vector<std::string> keys = {"bp/0", "bp/taken", "bp/1", "", "bp/2"};
    std::vector<std::string> values = {Pattern(1, 70000), Pattern(2, 10), Pattern(3, 1),
                                       Pattern(4, 5), Pattern(5, 200000)};
    Items items = AsItems(keys, values);
    items.emplace_back("bp/empty", std::span<const std::byte>());
    auto put = s.client->BatchPut(items);
    ASSERT_EQ(put.size(), items.size());
    EXPECT_TRUE(put[0].ok()) << put[0].ToString();
    EXPECT_TRUE(put[1].Is(StatusCode::kAlreadyExists)) << put[1].ToString();
    EXPECT_TRUE(put[2].ok()) << put[2].ToString();
    EXPECT_TRUE(put[3].Is(StatusCode::kInvalidArgument)) << put[3].ToString();
    EXPECT_TRUE(put[4].ok()) << put[4].ToString();
    EXPECT_TRUE(put[5].Is(StatusCode::kInvalidArgument)) << put[5].ToString();
    EXPECT_EQ(*s.client->Get("bp/taken"), "old");  // the refused item left the old value
    auto got = s.client->BatchGet(std::vector<std::string>{"bp/0", "bp/1", "bp/2", "bp/empty"});
    ASSERT_EQ(got.size(), 4u);
    EXPECT_EQ(*got[0], values[0]);
    EXPECT_EQ(*got[1], values[2]);
    EXPECT_EQ(*got[2], values[4]);
    EXPECT_TRUE(got[3].status().Is(StatusCode::kNotFound));
}

// 400 keys of varied sizes over two nodes, some moved to LOCAL_DISK: every byte comes back,
// in order, by BatchGet and BatchGetInto, missing keys reported where they are asked.
TEST(BatchTest, LargeBatchAcrossTwoNodesBothTiers) {
    Cluster c;
    ASSERT_NE(c.client, nullptr);
    auto& a = c.AddNode("64MiB", true);
    auto& b = c.AddNode("64MiB", true);
    ASSERT_TRUE(c.WaitForNodes(2));
    const int n = 400;
    std::vector<std::string> keys, values;
    for (int i = 0; i < n; ++i) {
        keys.push_back("big/" + std::to_string(i));
        values.push_back(Pattern(static_cast<uint64_t>(i) + 100, 1 + (static_cast<size_t>(i) * 7919) % 150000));
    }
    auto put = c.client->BatchPut(AsItems(keys, values));
    ASSERT_EQ(put.size(), keys.size());
    for (int i = 0; i < n; ++i) ASSERT_TRUE(put[i].ok()) << keys[i] << ": " << put[i].ToString();
    // Both nodes hold some of them.
    std::set<std::string> holders;
    for (const auto& k : keys) {
        auto info = c.client->Stat(k);
        ASSERT_TRUE(info.ok());
        for (const auto& loc : info->locations) holders.insert(loc.node_name);
    }
    EXPECT_TRUE(holders.count(a.name) && holders.count(b.name));
    // Every tenth key to LOCAL_DISK only.
    std::vector<std::string> to_disk;
    for (int i = 0; i < n; i += 10) to_disk.push_back(keys[i]);
    auto moved = c.client->WaitForMove(TierMove::kEvict, to_disk);
    ASSERT_TRUE(moved.ok()) << moved.status().ToString();
    for (const auto& r : *moved) ASSERT_EQ(r.end, MoveEnd::kReached) << r.key;
    // Ask for all of them backwards with missing keys mixed in.
    std::vector<std::string> ask;
    std::vector<int> expect;  // index into values, -1 = missing
    for (int i = n - 1; i >= 0; --i) {
        ask.push_back(keys[i]);
        expect.push_back(i);
        if (i % 37 == 0) {
            ask.push_back("big/missing/" + std::to_string(i));
            expect.push_back(-1);
        }
    }
    auto got = c.client->BatchGet(ask);
    ASSERT_EQ(got.size(), ask.size());
    for (size_t j = 0; j < ask.size(); ++j) {
        if (expect[j] < 0) {
            EXPECT_TRUE(got[j].status().Is(StatusCode::kNotFound)) << ask[j];
        } else {
            ASSERT_TRUE(got[j].ok()) << ask[j] << ": " << got[j].status().ToString();
            EXPECT_EQ(*got[j], values[expect[j]]) << ask[j];
        }
    }
    std::vector<std::vector<std::byte>> bufs(ask.size(), std::vector<std::byte>(150000));
    std::vector<std::span<std::byte>> outs(bufs.begin(), bufs.end());
    auto into = c.client->BatchGetInto(ask, outs);
    ASSERT_EQ(into.size(), ask.size());
    for (size_t j = 0; j < ask.size(); ++j) {
        if (expect[j] < 0) {
            EXPECT_TRUE(into[j].status().Is(StatusCode::kNotFound)) << ask[j];
            continue;
        }
        ASSERT_TRUE(into[j].ok()) << ask[j] << ": " << into[j].status().ToString();
        EXPECT_EQ(*into[j], values[expect[j]].size());
        EXPECT_EQ(View(bufs[j], *into[j]), values[expect[j]]) << ask[j];
    }
}

// Many application threads, each issuing batches through one client (whose batch workers
// they share), and a client that reads one key at a time (batch_parallelism 1): same bytes.
TEST(BatchTest, ConcurrentBatchesShareOneClient) {
    Standalone s({"--dram_size=128MiB", "--enable_offload=false"});
    ASSERT_NE(s.client, nullptr);
    const int per_thread = 40, threads = 8;
    std::vector<std::thread> pool;
    std::atomic<int> wrong{0};
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            std::vector<std::string> keys, values;
            for (int i = 0; i < per_thread; ++i) {
                keys.push_back("cc/" + std::to_string(t) + "/" + std::to_string(i));
                values.push_back(Pattern(static_cast<uint64_t>(t * 1000 + i), 1000 + 997 * static_cast<size_t>(i)));
            }
            for (const Status& st : s.client->BatchPut(AsItems(keys, values))) {
                if (!st.ok()) wrong.fetch_add(1);
            }
            for (int round = 0; round < 3; ++round) {
                auto got = s.client->BatchGet(keys);
                for (int i = 0; i < per_thread; ++i) {
                    if (!got[i].ok() || *got[i] != values[i]) wrong.fetch_add(1);
                }
            }
        });
    }
    for (auto& th : pool) th.join();
    EXPECT_EQ(wrong.load(), 0);

    ClientOptions serial;
    serial.batch_parallelism = 1;
    auto one = ConnectWhenUp(s.address, std::chrono::seconds(10), serial);
    ASSERT_NE(one, nullptr);
    std::vector<std::string> keys;
    for (int i = 0; i < per_thread; ++i) keys.push_back("cc/3/" + std::to_string(i));
    auto got = one->BatchGet(keys);
    for (int i = 0; i < per_thread; ++i) {
        ASSERT_TRUE(got[i].ok());
        EXPECT_EQ(*got[i], Pattern(static_cast<uint64_t>(3000 + i), 1000 + 997 * static_cast<size_t>(i)));
    }
}

}  // namespace
}  // namespace mooncake::test
