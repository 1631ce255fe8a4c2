// Issue 34: tenants' quotas in the master (core/master/tenant_ledger.h, store_tenants.cc) —
// own-first eviction, protection of a tenant within its quota, strict multi-tenant mode,
// promotions charged, LOCAL_DISK trimming, the policy's administration and file format.
#include "tests/unit/store_test_util.h"

namespace mooncake::testing {
namespace {

class TenantQuotaTest : public StoreFixture {
public:
    static std::string Key(const std::string& tenant, int i) {
        std::string key = "k" + std::to_string(i);
        if (tenant.empty()) return key;
        return *KeyScope::Make(tenant)->Scope(key);
    }
    bool InMemory(const std::string& key) {
        std::vector<Tier> tiers = TiersOf(key);
        return !tiers.empty() && tiers.front() == Tier::kMemory;
    }
    // A Put whose eviction queued offloads (put_wait_for_offload_ms is 0 here) is tried again
    // once the node has written them, as a client's retry would.
    void PutWithRoom(const std::string& key, NodeId node) {
        Result<PutStartReply> start = store().PutStart(1, key, kObject);
        if (!start.ok() && start.status().code() == StatusCode::kNoSpace) {
            RunOffloads(node);
            start = store().PutStart(1, key, kObject);
        }
        ASSERT_TRUE(start.ok()) << start.status().ToString();
        ASSERT_TRUE(store().PutEnd(1, key, start->generation).ok());
        RunOffloads(node);
    }
    static TenantQuota Memory(uint64_t objects) { return {objects * kObject, 0}; }
    TenantRow Row(const std::string& tenant) {
        for (const TenantRow& row : store().Tenants().tenants) {
            if (row.tenant == tenant) return row;
        }
        return {};
    }
    void SetTenant(const std::string& tenant, TenantQuota quota) {
        Result<MasterStore::TenantReport> set = store().SetTenant(tenant, quota);
        ASSERT_TRUE(set.ok()) << set.status().ToString();
    }
};

TEST_F(TenantQuotaTest, OverItsQuotaATenantEvictsItsOwnColdestObjects) {
    NodeId node = AddNode("n1", 16 * kObject);
    SetTenant("a", Memory(4));
    SetTenant("b", Memory(8));
    for (int i = 0; i < 6; ++i) Put(Key("b", i));  // b's objects are the coldest
    // The node writes no offload until the end: the evictions under way are counted as
    // made, not made again at each Put.
    for (int i = 0; i < 8; ++i) Put(Key("a", i));
    RunOffloads(node);
    for (int i = 0; i < 6; ++i) EXPECT_TRUE(InMemory(Key("b", i))) << i;
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(TiersOf(Key("a", i)), std::vector<Tier>{Tier::kLocalDisk}) << i;
    }
    for (int i = 4; i < 8; ++i) EXPECT_TRUE(InMemory(Key("a", i))) << i;
    EXPECT_EQ(Row("a").memory_bytes, 4 * kObject);
    EXPECT_EQ(Row("a").quota_evictions, 4u);  // no more than it had to: none twice
    EXPECT_EQ(Row("b").quota_evictions, 0u);
    EXPECT_EQ(Metric("tenant_quota_evictions_total", {{"tenant", "a"}}), 4);
    EXPECT_EQ(Metric("tenant_memory_bytes", {{"tenant", "a"}}), 4.0 * kObject);
    ExpectInvariants();
}

TEST_F(TenantQuotaTest, AnotherTenantsBurstNeverEvictsATenantWithinItsQuota) {
    NodeId node = AddNode("n1", 10 * kObject);
    SetTenant("steady", Memory(5));
    SetTenant("burst", {});  // registered, no quota: it may use whatever is not protected
    for (int i = 0; i < 5; ++i) Put(Key("steady", i));
    for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < 10; ++i) PutWithRoom(Key("burst", round * 10 + i), node);
    }
    for (int i = 0; i < 5; ++i) EXPECT_TRUE(InMemory(Key("steady", i))) << i;
    EXPECT_EQ(Row("steady").memory_objects, 5u);
    // The default tenant, unquoted, is held to the same rule.
    for (int i = 0; i < 10; ++i) PutWithRoom(Key("", i), node);
    for (int i = 0; i < 5; ++i) EXPECT_TRUE(InMemory(Key("steady", i))) << i;
    ExpectInvariants();
}

TEST_F(TenantQuotaTest, WithoutQuotasEvictionIsTheGlobalColdestOrderAsBefore) {
    NodeId node = AddNode("n1", 10 * kObject);
    SetTenant("steady", {});
    SetTenant("burst", {});
    for (int i = 0; i < 5; ++i) Put(Key("steady", i));
    for (int i = 0; i < 10; ++i) PutWithRoom(Key("burst", i), node);
    // The same run with quotas off: the steady tenant's cold objects are the first to go.
    for (int i = 0; i < 5; ++i) EXPECT_FALSE(InMemory(Key("steady", i))) << i;
    ExpectInvariants();
}

TEST_F(TenantQuotaTest, AStrictStoreRefusesTheWritesOfAnUnregisteredTenant) {
    AddNode("n1", 16 * kObject);
    Put(Key("ghost", 0));  // one tenant mode: anyone may write
    SetTenant("a", Memory(4));
    Result<PutStartReply> refused = store().PutStart(1, Key("ghost", 1), kObject);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), StatusCode::kIllegalClient);
    EXPECT_NE(refused.status().message().find("tenant 'ghost' is not registered"),
              std::string::npos)
        << refused.status().message();
    EXPECT_EQ(Row("ghost").puts_refused, 1u);
    Put(Key("", 1));  // the default tenant, the administrator's, always may
    Put(Key("a", 1));
    // What it wrote before stays readable; it may be removed.
    EXPECT_EQ(Get(Key("ghost", 0)), StatusCode::kOk);
    ExpectInvariants();
}

TEST_F(TenantQuotaTest, APutThatItsOwnObjectsCannotMakeRoomForIsRefused) {
    AddNode("n1", 16 * kObject);
    SetTenant("a", Memory(2));
    Result<PutStartReply> too_big = store().PutStart(1, Key("a", 9), 3 * kObject);
    ASSERT_FALSE(too_big.ok());
    EXPECT_EQ(too_big.status().code(), StatusCode::kNoSpace);
    EXPECT_NE(too_big.status().message().find("larger than tenant 'a''s MEMORY quota"),
              std::string::npos)
        << too_big.status().message();
    // Two puts in progress fill the quota and cannot be evicted.
    Result<PutStartReply> p0 = store().PutStart(1, Key("a", 0), kObject);
    Result<PutStartReply> p1 = store().PutStart(1, Key("a", 1), kObject);
    ASSERT_TRUE(p0.ok() && p1.ok());
    Result<PutStartReply> refused = store().PutStart(1, Key("a", 2), kObject);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), StatusCode::kNoSpace);
    EXPECT_NE(refused.status().message().find("at its MEMORY quota"), std::string::npos)
        << refused.status().message();
    EXPECT_EQ(Row("a").puts_refused, 2u);
    EXPECT_EQ(Metric("tenant_puts_refused_total", {{"tenant", "a"}}), 2);
    ASSERT_TRUE(store().PutEnd(1, Key("a", 0), p0->generation).ok());
    ASSERT_TRUE(store().PutEnd(1, Key("a", 1), p1->generation).ok());
    ExpectInvariants();
}

TEST_F(TenantQuotaTest, APromotionIsChargedToItsTenantsQuota) {
    NodeId node = AddNode("n1", 16 * kObject);
    SetTenant("a", Memory(2));
    PutOnDisk(Key("a", 0), node);
    Put(Key("a", 1));
    Put(Key("a", 2));
    Result<ManualOutcome> promoted = store().Promote(Key("a", 0), /*force=*/false);
    ASSERT_TRUE(promoted.ok()) << promoted.status().ToString();
    Drain(node);
    EXPECT_TRUE(InMemory(Key("a", 0)));
    EXPECT_FALSE(InMemory(Key("a", 1)));  // its own coldest made the room
    EXPECT_EQ(Row("a").memory_bytes, 2 * kObject);
    EXPECT_EQ(Row("a").promotions, 1u);
    ExpectInvariants();
}

TEST_F(TenantQuotaTest, OverItsDiskQuotaATenantLosesItsColdestDiskOnlyObjects) {
    NodeId node = AddNode("n1", 16 * kObject);
    SetTenant("a", {0, 2 * DiskFootprint(kObject)});
    for (int i = 0; i < 4; ++i) PutOnDisk(Key("a", i), node);
    PutOnDisk(Key("", 0), node);  // another tenant's disk copy is not touched
    EXPECT_EQ(store().EnforceTenantQuotas(), 2u);
    EXPECT_EQ(store().Stat(Key("a", 0)).status().code(), StatusCode::kNotFound);
    EXPECT_EQ(store().Stat(Key("a", 1)).status().code(), StatusCode::kNotFound);
    EXPECT_EQ(TiersOf(Key("a", 3)), std::vector<Tier>{Tier::kLocalDisk});
    EXPECT_EQ(TiersOf(Key("", 0)), std::vector<Tier>{Tier::kLocalDisk});
    EXPECT_EQ(Row("a").disk_bytes, 2 * DiskFootprint(kObject));
    ExpectInvariants();
}

TEST_F(TenantQuotaTest, ATenantHoldingDataIsRemovedOnlyWithItsData) {
    AddNode("n1", 16 * kObject);
    SetTenant("a", Memory(4));
    SetTenant("b", Memory(4));
    Put(Key("a", 0));
    Put(Key("b", 0));
    Result<MasterStore::TenantReport> refused = store().RemoveTenant("a", /*purge=*/false);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("still holds 1 MEMORY"), std::string::npos)
        << refused.status().message();
    size_t removed = 0;
    ASSERT_TRUE(store().RemoveTenant("a", /*purge=*/true, &removed).ok());
    EXPECT_EQ(removed, 1u);
    EXPECT_EQ(store().Stat(Key("a", 0)).status().code(), StatusCode::kNotFound);
    EXPECT_EQ(Get(Key("b", 0)), StatusCode::kOk);
    // Unregistered, in a store still multi-tenant (b): its writes are refused from now on.
    EXPECT_EQ(store().PutStart(1, Key("a", 1), kObject).status().code(),
              StatusCode::kIllegalClient);
    EXPECT_EQ(store().RemoveTenant("a", false).status().code(), StatusCode::kNotFound);
    EXPECT_EQ(store().RemoveTenant("default", true).status().code(),
              StatusCode::kInvalidArgument);
    // b gone too: one tenant again, and anyone may write.
    ASSERT_TRUE(store().RemoveTenant("b", true).ok());
    Put(Key("a", 1));
    ExpectInvariants();
}

TEST_F(TenantQuotaTest, APolicyChangeIsWrittenBeforeItTakesEffect) {
    AddNode("n1", 16 * kObject);
    std::vector<TenantPolicy> written;
    bool fail = false;
    store().SetTenantPolicyWriter([&](const TenantPolicy& policy) {
        if (fail) return Status::IoError("disk full");
        written.push_back(policy);
        return Status::Ok();
    });
    SetTenant("b", Memory(2));
    SetTenant("a", Memory(1));
    ASSERT_EQ(written.size(), 2u);
    EXPECT_EQ(written[1], (TenantPolicy{{"a", Memory(1)}, {"b", Memory(2)}}));
    fail = true;
    EXPECT_EQ(store().SetTenant("c", {}).status().code(), StatusCode::kIoError);
    EXPECT_FALSE(Row("c").registered);
    EXPECT_EQ(store().RemoveTenant("a", false).status().code(), StatusCode::kIoError);
    EXPECT_TRUE(Row("a").registered);
    EXPECT_EQ(store().tenant_ledger().Policy(), written[1]);
}

TEST_F(TenantQuotaTest, QuotasPastCapacityAreSaidNotSilentlyAccepted) {
    AddNode("n1", 16 * kObject, /*disk=*/64 * kObject);
    Result<MasterStore::TenantReport> report = store().SetTenant("a", Memory(12));
    ASSERT_TRUE(report.ok());
    EXPECT_TRUE(report->warnings.empty());
    report = store().SetTenant("b", Memory(12));
    ASSERT_TRUE(report.ok());
    ASSERT_EQ(report->warnings.size(), 1u);
    EXPECT_NE(report->warnings[0].find("MEMORY quotas add up to 96KiB"), std::string::npos)
        << report->warnings[0];
    report = store().SetTenant("c", {0, 128 * kObject});
    ASSERT_TRUE(report.ok());
    bool said = false;
    for (const std::string& w : report->warnings) {
        said |= w.find("tenant 'c''s LOCAL_DISK quota (512KiB) is larger") != std::string::npos;
    }
    EXPECT_TRUE(said);
    EXPECT_EQ(report->quota_sum.memory_bytes, 24 * kObject);
    EXPECT_EQ(report->memory_capacity, 16 * kObject);
}

TEST_F(TenantQuotaTest, BadTenantNamesAreRefused) {
    for (const std::string& bad : {std::string(65, 'x'), std::string("a/b"),
                                   std::string("a b"), std::string("t\x01")}) {
        EXPECT_EQ(store().SetTenant(bad, {}).status().code(), StatusCode::kInvalidArgument)
            << bad;
    }
    EXPECT_EQ(store().tenant_ledger().Policy(), TenantPolicy{});
}

TEST(TenantPolicyFileTest, ParsesAndFormatsTheOneLineAPolicy) {
    Result<TenantPolicy> policy = ParseTenantPolicy(
        "# quotas\n"
        "chat memory=8GiB disk=100GiB\n"
        "\n"
        "  batch   disk=1T   # no MEMORY quota\n"
        "free\n");
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    EXPECT_EQ(*policy, (TenantPolicy{{"chat", {8ull << 30, 100ull << 30}},
                                     {"batch", {0, 1ull << 40}},
                                     {"free", {}}}));
    Result<TenantPolicy> again = ParseTenantPolicy(FormatTenantPolicy(*policy));
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *policy);
    for (auto [text, says] : {std::pair("a memory=lots\n", "line 1"),
                              std::pair("a\nb cpu=2\n", "line 2: expected memory=SIZE"),
                              std::pair("a\na\n", "named twice"),
                              std::pair("a/b\n", "line 1")}) {
        Result<TenantPolicy> bad = ParseTenantPolicy(text);
        ASSERT_FALSE(bad.ok()) << text;
        EXPECT_NE(bad.status().message().find(says), std::string::npos)
            << bad.status().message();
    }
}

}  // namespace
}  // namespace mooncake::testing
