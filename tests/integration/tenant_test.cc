// Tenants against real daemons (issue 34, scoped identity): the same key in two tenants is two
// objects, and no path that names keys — single and batch calls, listings, prefix removal,
// inspection, manual moves, LOCAL_DISK records and their recovery after a restart, the
// two-step (cluster) and the one-exchange (standalone) data paths — reaches another tenant's.
#include <thread>

#include "gtest/gtest.h"
#include "tests/integration/harness.h"

namespace mooncake::test {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<Client> In(const std::string& address, const std::string& tenant) {
    ClientOptions options;
    options.tenant = tenant;
    return ConnectWhenUp(address, 10s, options);
}

std::vector<std::string> ListedKeys(Client& client) {
    auto all = client.ListAll({});
    EXPECT_TRUE(all.ok()) << all.status().ToString();
    std::vector<std::string> keys;
    if (all.ok()) {
        for (const ObjectInfo& o : *all) keys.push_back(o.object.key);
    }
    return keys;
}

// Each of three clients (two tenants and the default one) puts the same keys with its own
// bytes, and reads back only its own.
struct ThreeTenants {
    explicit ThreeTenants(const std::string& address)
        : a(In(address, "tenant-a")), b(In(address, "tenant-b")), plain(In(address, "")) {}
    bool ok() const { return a && b && plain; }
    std::unique_ptr<Client> a, b, plain;
    std::vector<std::pair<Client*, uint64_t>> Each() {
        return {{a.get(), 1}, {b.get(), 2}, {plain.get(), 3}};
    }
};

TEST(TenantTest, TheSameKeyInTwoTenantsIsTwoObjects) {
    Standalone s;
    ThreeTenants t(s.address);
    ASSERT_TRUE(t.ok());
    for (auto [client, seed] : t.Each()) {
        ASSERT_TRUE(client->Put("page/0", Pattern(seed, 5000)).ok()) << seed;
    }
    for (auto [client, seed] : t.Each()) {
        auto got = client->Get("page/0");
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        EXPECT_EQ(*got, Pattern(seed, 5000)) << "tenant of seed " << seed << " read other bytes";
        auto info = client->Stat("page/0");
        ASSERT_TRUE(info.ok());
        EXPECT_EQ(info->object.key, "page/0");  // the caller's key, never the stored one
    }
    // Only tenant-a has this one.
    ASSERT_TRUE(t.a->Put("only-a", Pattern(9, 100)).ok());
    EXPECT_TRUE(t.b->Get("only-a").status().Is(StatusCode::kNotFound));
    EXPECT_TRUE(t.plain->Get("only-a").status().Is(StatusCode::kNotFound));
    EXPECT_FALSE(*t.b->Exists("only-a"));
    const std::vector<std::string> both{"page/0", "only-a"};
    auto exists = t.b->BatchExists(both);
    ASSERT_EQ(exists.size(), 2u);
    EXPECT_TRUE(exists[0].ok() && *exists[0]);
    EXPECT_TRUE(exists[1].ok() && !*exists[1]);
    EXPECT_TRUE(t.b->Remove("only-a", true).Is(StatusCode::kNotFound));
    EXPECT_TRUE(t.b->Stat("only-a").status().Is(StatusCode::kNotFound));
    // A tenant's removal leaves the others' objects.
    ASSERT_TRUE(t.a->Remove("page/0", true).ok());
    EXPECT_TRUE(t.a->Get("page/0").status().Is(StatusCode::kNotFound));
    EXPECT_EQ(*t.b->Get("page/0"), Pattern(2, 5000));
    EXPECT_EQ(*t.plain->Get("page/0"), Pattern(3, 5000));
    // The same key put again in b is AlreadyExists there only.
    EXPECT_TRUE(t.b->Put("page/0", "x").Is(StatusCode::kAlreadyExists));
    EXPECT_TRUE(t.a->Put("page/0", Pattern(4, 10)).ok());
}

TEST(TenantTest, BatchesKeepEveryItemInItsTenant) {
    Standalone s;
    ThreeTenants t(s.address);
    ASSERT_TRUE(t.ok());
    const int n = 24;
    for (auto [client, seed] : t.Each()) {
        std::vector<std::string> values;
        std::vector<std::pair<std::string, std::span<const std::byte>>> items;
        for (int i = 0; i < n; ++i) values.push_back(Pattern(seed * 100 + i, 64 * 1024 + i));
        for (int i = 0; i < n; ++i) {
            items.emplace_back("kv/" + std::to_string(i), std::as_bytes(std::span(values[i])));
        }
        for (const Status& st : client->BatchPut(items)) ASSERT_TRUE(st.ok()) << st.ToString();
    }
    for (auto [client, seed] : t.Each()) {
        std::vector<std::string> keys;
        for (int i = 0; i < n; ++i) keys.push_back("kv/" + std::to_string(i));
        keys.push_back("kv/missing");
        auto got = client->BatchGet(keys);
        ASSERT_EQ(got.size(), keys.size());
        for (int i = 0; i < n; ++i) {
            ASSERT_TRUE(got[i].ok()) << keys[i] << ": " << got[i].status().ToString();
            EXPECT_EQ(*got[i], Pattern(seed * 100 + i, 64 * 1024 + i)) << keys[i];
        }
        EXPECT_TRUE(got[n].status().Is(StatusCode::kNotFound));
        auto lists = client->BatchGetReplicaList(keys);
        ASSERT_EQ(lists.size(), keys.size());
        EXPECT_EQ(lists[0]->object.key, "kv/0");
    }
    // A key no tenant can name is refused for itself alone.
    std::vector<std::string> odd{"kv/0", std::string("bad\0key", 7)};
    auto removed = t.a->BatchRemove(odd, true);
    ASSERT_EQ(removed.size(), 2u);
    EXPECT_TRUE(removed[0].ok()) << removed[0].ToString();
    EXPECT_TRUE(removed[1].Is(StatusCode::kInvalidArgument)) << removed[1].ToString();
    EXPECT_TRUE(t.b->Get("kv/0").ok());
}

TEST(TenantTest, ListingsPrefixRemovalAndInspectionStayInTheTenant) {
    Standalone s({}, "64MiB");
    ThreeTenants t(s.address);
    ASSERT_TRUE(t.ok());
    ASSERT_TRUE(t.a->Put("x/1", Pattern(1, 8192)).ok());
    ASSERT_TRUE(t.a->Put("x/2", Pattern(2, 8192)).ok());
    ASSERT_TRUE(t.b->Put("x/1", Pattern(3, 8192)).ok());
    ASSERT_TRUE(t.b->Put("y/1", Pattern(4, 8192)).ok());
    ASSERT_TRUE(t.plain->Put("x/9", Pattern(5, 8192)).ok());
    EXPECT_EQ(ListedKeys(*t.a), (std::vector<std::string>{"x/1", "x/2"}));
    EXPECT_EQ(ListedKeys(*t.b), (std::vector<std::string>{"x/1", "y/1"}));
    EXPECT_EQ(ListedKeys(*t.plain), (std::vector<std::string>{"x/9"}));
    ListOptions page;
    page.limit = 1;
    page.start_after = "x/1";
    auto after = t.a->List(page);
    ASSERT_TRUE(after.ok());
    ASSERT_EQ(after->objects.size(), 1u);
    EXPECT_EQ(after->objects[0].object.key, "x/2");
    EXPECT_FALSE(after->more);

    // Manual moves name the tenant's own key; another tenant's is not there.
    const std::vector<std::string> x2{"x/2"};
    auto moved = t.a->WaitForMove(TierMove::kEvict, x2);
    ASSERT_TRUE(moved.ok()) << moved.status().ToString();
    EXPECT_EQ((*moved)[0].key, "x/2");
    EXPECT_EQ((*moved)[0].end, MoveEnd::kReached);
    auto elsewhere = t.b->Evict(x2);
    ASSERT_TRUE(elsewhere.ok());
    EXPECT_TRUE((*elsewhere)[0].status.Is(StatusCode::kNotFound)) << (*elsewhere)[0].status.ToString();
    // The disk-only key is a's hot candidate, no one else's.
    (void)t.a->Get("x/2");
    auto hot_a = t.a->Hot(10);
    ASSERT_TRUE(hot_a.ok());
    ASSERT_EQ(hot_a->size(), 1u);
    EXPECT_EQ((*hot_a)[0].key, "x/2");
    EXPECT_TRUE(t.b->Hot(10)->empty());
    EXPECT_TRUE(t.plain->Hot(10)->empty());
    EXPECT_EQ(*t.a->Get("x/2"), Pattern(2, 8192));

    // Removing "everything" removes the caller's tenant's keys only.
    auto cleared = t.plain->RemoveByPrefix("", true);
    ASSERT_TRUE(cleared.ok());
    EXPECT_EQ(cleared->removed, 1u);
    auto cleared_b = t.b->RemoveByPrefix("x/", true);
    ASSERT_TRUE(cleared_b.ok());
    EXPECT_EQ(cleared_b->removed, 1u);
    EXPECT_EQ(ListedKeys(*t.a), (std::vector<std::string>{"x/1", "x/2"}));
    EXPECT_EQ(ListedKeys(*t.b), (std::vector<std::string>{"y/1"}));
    EXPECT_TRUE(ListedKeys(*t.plain).empty());
}

TEST(TenantTest, KeysKeepTheirTenantOnDiskAcrossARestart) {
    Standalone s({}, "64MiB");
    {
        ThreeTenants t(s.address);
        ASSERT_TRUE(t.ok());
        std::vector<std::string> keys{"disk/0", "disk/1"};
        for (auto [client, seed] : t.Each()) {
            for (size_t i = 0; i < keys.size(); ++i) {
                ASSERT_TRUE(client->Put(keys[i], Pattern(seed * 10 + i, 20000)).ok());
            }
            auto moved = client->WaitForMove(TierMove::kEvict, keys);
            ASSERT_TRUE(moved.ok()) << moved.status().ToString();
            for (const auto& r : *moved) ASSERT_EQ(r.end, MoveEnd::kReached) << r.key;
        }
    }
    s.client.reset();
    ASSERT_EQ(s.daemon->Stop(), 0);
    ASSERT_TRUE(s.daemon->Start());
    ThreeTenants t(s.address);
    ASSERT_TRUE(t.ok());
    for (auto [client, seed] : t.Each()) {
        for (size_t i = 0; i < 2; ++i) {
            const std::string key = "disk/" + std::to_string(i);
            std::string value;
            ASSERT_TRUE(WaitFor([&] {
                auto got = client->Get(key);
                if (got.ok()) value = *got;
                return got.ok();
            })) << key << " (seed " << seed << ") did not come back";
            EXPECT_EQ(value, Pattern(seed * 10 + i, 20000)) << key << " read another tenant's bytes";
        }
        EXPECT_EQ(ListedKeys(*client), (std::vector<std::string>{"disk/0", "disk/1"}));
    }
}

TEST(TenantTest, ClusterTwoStepPathsStayInTheTenant) {
    Cluster c;
    ASSERT_NE(c.client, nullptr);
    c.AddNode("16MiB", true);
    c.AddNode("16MiB", true);
    ASSERT_TRUE(c.WaitForNodes(2));
    ThreeTenants t(c.master_address);
    ASSERT_TRUE(t.ok());
    const int n = 16;
    for (auto [client, seed] : t.Each()) {
        for (int i = 0; i < n; ++i) {
            // Large enough to take the two-step path (PutStart, bytes to the node, PutEnd).
            ASSERT_TRUE(client->Put("blk/" + std::to_string(i), Pattern(seed * 50 + i, 300000)).ok());
        }
    }
    for (auto [client, seed] : t.Each()) {
        for (int i = 0; i < n; ++i) {
            auto got = client->Get("blk/" + std::to_string(i));
            ASSERT_TRUE(got.ok()) << got.status().ToString();
            EXPECT_EQ(*got, Pattern(seed * 50 + i, 300000)) << "blk/" << i << " seed " << seed;
        }
    }
    const std::vector<std::string> first{"blk/0"};
    auto moved = t.b->WaitForMove(TierMove::kEvict, first);
    ASSERT_TRUE(moved.ok());
    EXPECT_EQ((*moved)[0].end, MoveEnd::kReached);
    auto on_disk = t.b->Stat("blk/0");
    ASSERT_TRUE(on_disk.ok());
    EXPECT_FALSE(HasTier(*on_disk, Tier::kMemory));
    EXPECT_TRUE(HasTier(*t.a->Stat("blk/0"), Tier::kMemory));  // a's blk/0 did not move
    EXPECT_EQ(*t.b->Get("blk/0"), Pattern(2 * 50, 300000));
}

TEST(TenantTest, NamesAndKeysThatCannotBeScopedAreRefused) {
    Standalone s;
    ASSERT_NE(s.client, nullptr);
    for (const std::string& bad : {std::string(65, 't'), std::string("a/b"), std::string("a b"),
                                   std::string("\xff"), std::string("a\0b", 3)}) {
        ClientOptions options;
        options.tenant = bad;
        auto client = Client::Connect(s.address, options);
        ASSERT_FALSE(client.ok()) << "tenant " << QuoteKey(bad) << " was accepted";
        EXPECT_TRUE(client.status().Is(StatusCode::kInvalidArgument)) << client.status().ToString();
    }
    // "default" is the default tenant by name.
    auto named = In(s.address, "default");
    ASSERT_NE(named, nullptr);
    ASSERT_TRUE(s.client->Put("shared", "v").ok());
    EXPECT_EQ(*named->Get("shared"), "v");
    // A tenant's keys are 4096 bytes with their frame.
    auto a = In(s.address, "abc");
    ASSERT_NE(a, nullptr);
    const Status too_long = a->Put(std::string(4096 - 4, 'k'), "v");
    EXPECT_TRUE(too_long.Is(StatusCode::kInvalidArgument)) << too_long.ToString();
    EXPECT_NE(too_long.message().find("the limit in tenant 'abc' is 4091"), std::string::npos)
        << too_long.message();
    EXPECT_TRUE(a->Put(std::string(4091, 'k'), "v").ok());
}

}  // namespace
}  // namespace mooncake::test
