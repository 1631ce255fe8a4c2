// Tenants' key scopes (core/base/tenant.h) and the store's rules for scoped keys: framing,
// validation, listing order, and a store walk that keeps each tenant to its own keys.
#include "core/base/tenant.h"

#include <algorithm>

#include "core/base/types.h"
#include "tests/unit/store_test_util.h"

namespace mooncake::testing {
namespace {

KeyScope Tenant(std::string_view name) {
    auto scope = KeyScope::Make(name);
    EXPECT_TRUE(scope.ok()) << scope.status().ToString();
    return scope.ok() ? *scope : KeyScope::Default();
}

TEST(TenantNameTest, NamesAreShortAndPlain) {
    EXPECT_TRUE(ValidateTenant("tenant-a").ok());
    EXPECT_TRUE(ValidateTenant("A.b_c-9").ok());
    EXPECT_TRUE(ValidateTenant(std::string(64, 'x')).ok());
    EXPECT_FALSE(ValidateTenant("").ok());
    EXPECT_FALSE(ValidateTenant(std::string(65, 'x')).ok());
    for (std::string_view bad : {"a/b", "a b", "a\nb", "\xc3\xa9t\xc3\xa9", "a:b"}) {
        EXPECT_TRUE(ValidateTenant(bad).Is(StatusCode::kInvalidArgument)) << bad;
    }
    EXPECT_FALSE(ValidateTenant(std::string("a\0b", 3)).ok());
    EXPECT_FALSE(KeyScope::Make("a/b").ok());
}

TEST(KeyScopeTest, DefaultTenantKeysAreStoredAsNamed) {
    for (std::string_view name : {"", "default"}) {
        KeyScope scope = Tenant(name);
        EXPECT_TRUE(scope.is_default());
        EXPECT_EQ(scope.tenant(), "default");
        EXPECT_EQ(*scope.Scope("k"), "k");
        EXPECT_TRUE(scope.Contains("k"));
        EXPECT_FALSE(scope.Contains(std::string("\0t\0k", 4)));
    }
}

TEST(KeyScopeTest, ATenantsKeysAreFramedAndComeBackAsNamed) {
    KeyScope a = Tenant("a");
    const std::string stored = *a.Scope("page/1");
    EXPECT_EQ(stored, std::string("\0a\0page/1", 9));
    EXPECT_TRUE(ValidateKey(stored).ok());
    EXPECT_FALSE(ValidateUserKey(stored).ok());
    EXPECT_TRUE(a.Contains(stored));
    EXPECT_EQ(a.Unscope(stored), "page/1");
    EXPECT_EQ(TenantOfKey(stored), "a");
    EXPECT_EQ(UserPartOfKey(stored), "page/1");
    EXPECT_EQ(TenantOfKey("page/1"), "default");
    EXPECT_EQ(QuoteKey(stored), "'page/1' (tenant a)");
    // Another tenant whose name starts the same is another frame.
    EXPECT_FALSE(Tenant("ab").Contains(stored));
    EXPECT_FALSE(a.Contains(*Tenant("ab").Scope("page/1")));
    EXPECT_FALSE(a.Contains("page/1"));
    // A caller's key may not hold NUL: it could forge a frame.
    EXPECT_TRUE(a.Scope(std::string("\0b\0k", 4)).status().Is(StatusCode::kInvalidArgument));
    EXPECT_TRUE(a.Scope("").status().Is(StatusCode::kInvalidArgument));
}

TEST(KeyScopeTest, TheFrameCountsAgainstTheKeyLimit) {
    KeyScope t = Tenant("abc");
    EXPECT_TRUE(t.Scope(std::string(kMaxKeyBytes - 5, 'k')).ok());
    Result<std::string> over = t.Scope(std::string(kMaxKeyBytes - 4, 'k'));
    ASSERT_FALSE(over.ok());
    EXPECT_NE(over.status().message().find("the limit in tenant 'abc' is 4091"),
              std::string::npos) << over.status().message();
}

TEST(KeyScopeTest, MalformedStoredKeysAreRefused) {
    EXPECT_FALSE(ValidateKey(std::string("\0a", 2)).ok());         // no end of frame
    EXPECT_FALSE(ValidateKey(std::string("\0\0k", 3)).ok());       // empty tenant
    EXPECT_FALSE(ValidateKey(std::string("\0a\0", 3)).ok());       // empty key
    EXPECT_FALSE(ValidateKey(std::string("\0a/b\0k", 6)).ok());    // bad tenant name
    EXPECT_FALSE(ValidateKey(std::string("\0a\0k\0", 5)).ok());    // NUL in the key
}

TEST(KeyScopeTest, ListingStartsSkipOtherTenants) {
    // Sorted, every framed key comes before every default-tenant key.
    std::vector<std::string> keys = {"\x01", "a", "zz", *Tenant("a").Scope("\xff\xff"),
                                     *Tenant("zz").Scope("k"), *Tenant("a").Scope("k")};
    std::sort(keys.begin(), keys.end());
    const std::string start = KeyScope::Default().ListStartAfter("");
    for (const std::string& k : keys) {
        EXPECT_EQ(k > start, KeyScope::Default().Contains(k)) << QuoteKey(k);
    }
    EXPECT_EQ(Tenant("a").ListStartAfter("x"), *Tenant("a").Scope("x"));
    EXPECT_EQ(KeyScope::Default().ListStartAfter("x"), "x");
}

class TenantStoreTest : public StoreFixture {};

TEST_F(TenantStoreTest, PrefixRemovalAndListingKeepToTheScope) {
    AddNode("n", 16 * kObject);
    KeyScope a = Tenant("a");
    const std::string ka = *a.Scope("x"), kb = *Tenant("b").Scope("x");
    ASSERT_NE(Put(ka), kNoGeneration);
    ASSERT_NE(Put(kb), kNoGeneration);
    ASSERT_NE(Put("x"), kNoGeneration);
    ListOptions all;
    all.start_after = KeyScope::Default().ListStartAfter("");
    auto listed = store().List(all);
    ASSERT_EQ(listed.size(), 1u);
    EXPECT_EQ(listed[0].key, "x");
    size_t skipped = 0;
    EXPECT_EQ(store().RemoveByPrefix("", true, &skipped, nullptr, KeyScope::Default()), 1u);
    EXPECT_EQ(store().RemoveByPrefix(a.ScopePrefix(""), true, &skipped, nullptr, a), 1u);
    EXPECT_TRUE(store().Exists(kb).value());
    EXPECT_FALSE(store().Exists(ka).value());
    ExpectInvariants();
}

}  // namespace
}  // namespace mooncake::testing

namespace mooncake::testing {
namespace {

// A tenant over its MEMORY quota evicts as many of its own objects as its Puts need, no more,
// while the evicted copies are still on their way to LOCAL_DISK (an offload thread behind).
//
// (Was: MakeTenantRoom's MemoryExcess counted the MEMORY bytes of objects already chosen for
// eviction, their offloads pending, so each Put evicted them again in new victims: 1+2+3+4 =
// 10 quota evictions for 4 Puts, the tenant left with 2 of its 8 objects' worth of MEMORY.
// The replay runs offloads after every reference, so it did not show.)
TEST_F(TenantStoreTest, OwnFirstEvictionTakesOnlyWhatPutsNeedWhileOffloadsArePending) {
    const NodeId node = AddNode("n", 64 * kObject);
    ASSERT_TRUE(store().SetTenant("a", {8 * kObject, 0}).ok());
    KeyScope a = Tenant("a");
    for (int i = 0; i < 8; ++i) Put(*a.Scope("k" + std::to_string(i)));
    // Four more Puts before the node runs any offload.
    for (int i = 8; i < 12; ++i) Put(*a.Scope("k" + std::to_string(i)));
    RunOffloads(node);
    uint64_t quota_evictions = 0, memory_bytes = 0;
    for (const TenantRow& row : store().Tenants().tenants) {
        if (row.tenant == "a") {
            quota_evictions = row.quota_evictions;
            memory_bytes = row.memory_bytes;
        }
    }
    EXPECT_EQ(quota_evictions, 4u);
    EXPECT_EQ(memory_bytes, 8 * kObject);
}

}  // namespace
}  // namespace mooncake::testing
