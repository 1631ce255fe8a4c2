// The two-tenant replay (bench/replay/tenant_replay.h, issue 34): with quotas on, the steady
// tenant within its MEMORY quota keeps its hot set while the other tenant bursts.
#include "bench/replay/tenant_replay.h"

#include <gtest/gtest.h>

namespace mooncake::replay {
namespace {

TwoTenantWorkload SmallWorkload() {
    TwoTenantShape shape;
    shape.distinct = 4000;
    shape.fraction = 0.05;  // 200 objects of MEMORY; steady's hot set 90 keys
    shape.bursts = 2;
    shape.seed = 7;
    return MakeTwoTenantWorkload(shape);
}

TEST(TwoTenantWorkload, IsDeterministicAndShaped) {
    TwoTenantWorkload a = SmallWorkload(), b = SmallWorkload();
    ASSERT_EQ(a.refs.size(), b.refs.size());
    for (size_t i = 0; i < a.refs.size(); ++i) {
        ASSERT_EQ(a.refs[i].steady, b.refs[i].steady);
        ASSERT_EQ(a.refs[i].key, b.refs[i].key);
    }
    EXPECT_EQ(a.capacity_objects, 200u);
    EXPECT_EQ(a.steady_keys, 90u);
    uint64_t burst_refs = 0;
    for (const TenantRef& r : a.refs) {
        if (!r.steady) {
            ++burst_refs;
            EXPECT_TRUE(r.in_burst);
        } else {
            EXPECT_LT(static_cast<uint64_t>(r.key), a.steady_keys);
        }
    }
    EXPECT_GT(burst_refs, a.burst_keys);  // every burst key, most of them twice
    EXPECT_GT(burst_refs, 5 * a.capacity_objects);
}

TEST(TwoTenantReplay, QuotasHoldTheSteadyTenantsHitRatioThroughBursts) {
    const TwoTenantWorkload w = SmallWorkload();
    Result<TwoTenantRun> off = RunTwoTenant(w, /*quotas=*/false, 65536);
    ASSERT_TRUE(off.ok()) << off.status().ToString();
    Result<TwoTenantRun> on = RunTwoTenant(w, /*quotas=*/true, 65536);
    ASSERT_TRUE(on.ok()) << on.status().ToString();
    std::printf("%s", TwoTenantTable(0.05, w, {*off, *on}).c_str());

    EXPECT_GT(on->steady.reads_in_bursts, 0u);
    EXPECT_GE(on->steady.memory_hit_ratio_in_bursts(), off->steady.memory_hit_ratio_in_bursts());
    // And by a margin: without quotas the bursts push steady's colder keys to LOCAL_DISK
    // (0.75 vs 0.998 when written).
    EXPECT_GT(on->steady.memory_hit_ratio_in_bursts(),
              off->steady.memory_hit_ratio_in_bursts() + 0.1);
    EXPECT_EQ(on->steady.quota_evictions, 0u);
    EXPECT_GT(on->burst.quota_evictions, 0u);
    // Without quotas nothing is a quota eviction.
    EXPECT_EQ(off->steady.quota_evictions + off->burst.quota_evictions, 0u);
}

}  // namespace
}  // namespace mooncake::replay
