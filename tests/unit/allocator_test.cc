// Issue 2: the DRAM segment allocator — 4 KiB alignment, coalescing, no leaks, and bounded
// fragmentation under churn of mixed sizes (measured here), at dram_alloc_granularity=4096.
// Issue 21: small granules (SmallGranuleTest) — small values packed, 4 KiB alignment kept for
// values of 4 KiB and more, coalescing across granules.
#include "core/base/segment_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <vector>

#include "core/base/types.h"

namespace mooncake {
namespace {

constexpr uint64_t kPage = kSegmentAlignment;

// The granularity is process-wide (set by each MasterStore): these tests pin theirs and put
// the default back.
class GranularityScope : public ::testing::Test {
protected:
    explicit GranularityScope(uint64_t granule) { SegmentAllocator::SetGranularity(granule); }
    ~GranularityScope() override { SegmentAllocator::SetGranularity(64); }
};
class SegmentAllocatorTest : public GranularityScope {
protected:
    SegmentAllocatorTest() : GranularityScope(kPage) {}
};
class SmallGranuleTest : public GranularityScope {
protected:
    SmallGranuleTest() : GranularityScope(64) {}
};

// Every free and used range accounted for: used + free extents = capacity, no overlap.
void ExpectConsistent(const SegmentAllocator& a, const std::map<uint64_t, uint64_t>& live) {
    uint64_t used = 0;
    uint64_t end = 0;
    for (auto [offset, size] : live) {
        EXPECT_EQ(offset % SegmentAllocator::UnitFor(size), 0u) << size;
        EXPECT_GE(offset, end) << "overlapping allocations";
        end = offset + SegmentAllocator::RoundUp(size);
        EXPECT_LE(end, a.capacity());
        used += SegmentAllocator::RoundUp(size);
    }
    EXPECT_EQ(a.used(), used);
    EXPECT_EQ(a.free_bytes(), a.capacity() - used);
    EXPECT_LE(a.largest_free_extent(), a.free_bytes());
}

TEST_F(SegmentAllocatorTest, RoundsToFourKiB) {
    EXPECT_EQ(SegmentAllocator::RoundUp(1), kPage);
    EXPECT_EQ(SegmentAllocator::RoundUp(kPage), kPage);
    EXPECT_EQ(SegmentAllocator::RoundUp(kPage + 1), 2 * kPage);
    SegmentAllocator a(10 * kPage + 123);  // capacity rounded down
    EXPECT_EQ(a.capacity(), 10 * kPage);
    EXPECT_EQ(a.largest_free_extent(), 10 * kPage);
    EXPECT_EQ(a.free_extent_count(), 1u);
    EXPECT_EQ(a.fragmentation(), 0.0);
}

TEST_F(SegmentAllocatorTest, ZeroCapacityAllocatesNothing) {
    SegmentAllocator a(0);
    EXPECT_FALSE(a.Allocate(1).has_value());
    EXPECT_EQ(a.largest_free_extent(), 0u);
    EXPECT_EQ(a.fragmentation(), 0.0);
}

TEST_F(SegmentAllocatorTest, AllocationsAreAlignedAndDisjoint) {
    SegmentAllocator a(64 * kPage);
    std::map<uint64_t, uint64_t> live;
    for (uint64_t size : {1ull, 4095ull, 4096ull, 4097ull, 12288ull, 100ull, 65536ull}) {
        std::optional<uint64_t> off = a.Allocate(size);
        ASSERT_TRUE(off.has_value()) << size;
        EXPECT_EQ(*off % kPage, 0u);
        live[*off] = size;
    }
    ExpectConsistent(a, live);
}

TEST_F(SegmentAllocatorTest, TooLargeIsRefusedWithoutSideEffects) {
    SegmentAllocator a(8 * kPage);
    ASSERT_TRUE(a.Allocate(kPage).has_value());
    EXPECT_FALSE(a.Allocate(8 * kPage).has_value());
    EXPECT_FALSE(a.Allocate(100 * kPage).has_value());
    EXPECT_EQ(a.used(), kPage);
    EXPECT_TRUE(a.Allocate(7 * kPage).has_value());  // exactly the rest
    EXPECT_EQ(a.free_bytes(), 0u);
    EXPECT_FALSE(a.Allocate(1).has_value());
}

TEST_F(SegmentAllocatorTest, FreeCoalescesWithBothNeighbours) {
    SegmentAllocator a(3 * kPage);
    uint64_t x = *a.Allocate(kPage);
    uint64_t y = *a.Allocate(kPage);
    uint64_t z = *a.Allocate(kPage);
    a.Free(x, kPage);
    a.Free(z, kPage);
    EXPECT_EQ(a.free_extent_count(), 2u);
    EXPECT_EQ(a.largest_free_extent(), kPage);
    EXPECT_DOUBLE_EQ(a.fragmentation(), 0.5);
    a.Free(y, kPage);  // joins both sides
    EXPECT_EQ(a.free_extent_count(), 1u);
    EXPECT_EQ(a.largest_free_extent(), 3 * kPage);
    EXPECT_EQ(a.used(), 0u);
    EXPECT_EQ(a.fragmentation(), 0.0);
}

TEST_F(SegmentAllocatorTest, BestFitKeepsLargeExtentsForLargeRequests) {
    SegmentAllocator a(16 * kPage);
    // Holes of 1 and 4 pages, then the tail of 8.
    uint64_t h1 = *a.Allocate(kPage);
    ASSERT_TRUE(a.Allocate(kPage).has_value());
    uint64_t h4 = *a.Allocate(4 * kPage);
    ASSERT_TRUE(a.Allocate(2 * kPage).has_value());
    a.Free(h1, kPage);
    a.Free(h4, 4 * kPage);
    // A one-page request goes into the one-page hole, not into the bigger ones.
    EXPECT_EQ(*a.Allocate(kPage), h1);
    EXPECT_EQ(*a.Allocate(3 * kPage), h4);
    EXPECT_EQ(a.largest_free_extent(), 8 * kPage);
}

// KV-cache blocks are mostly one size. Then nothing is ever lost to fragmentation: an
// allocation succeeds exactly when a block's worth of DRAM is free, whatever the churn.
TEST_F(SegmentAllocatorTest, UniformSizesNeverFragment) {
    constexpr uint64_t kBlock = 3 * kPage + 17;  // rounds to 4 pages
    SegmentAllocator a(1024 * kPage);
    std::mt19937_64 rng(42);
    std::vector<uint64_t> live;
    for (int step = 0; step < 100000; ++step) {
        bool alloc = live.empty() || (rng() % 100) < 55;
        if (alloc) {
            const bool room = a.free_bytes() >= 4 * kPage;
            std::optional<uint64_t> off = a.Allocate(kBlock);
            ASSERT_EQ(off.has_value(), room) << "step " << step;
            if (off) live.push_back(*off);
        } else {
            size_t i = rng() % live.size();
            a.Free(live[i], kBlock);
            live[i] = live.back();
            live.pop_back();
        }
    }
    for (uint64_t off : live) a.Free(off, kBlock);
    EXPECT_EQ(a.used(), 0u);
    EXPECT_EQ(a.free_extent_count(), 1u);
}

// Churn of random mixed sizes at high occupancy. Each round offers allocations until 32 in a
// row are refused (the segment can take nothing more of this mix), records how full it is,
// then frees a random quarter of what is live. The DRAM still free at that point is what
// fragmentation costs: free, but in holes too small for the requests.
//
// Bound, and why: sizes are byte-granular from 1 B to 1 MiB (1/64 of the segment), skewed to
// small. No non-moving allocator has a useful worst-case bound (Robson), but best fit with
// coalescing wastes little on random workloads (Wilson et al., "Dynamic Storage Allocation:
// A Survey and Critical Review", 1995). We require the segment to take, on average, at least
// 93% of its capacity before it refuses the mix, and never less than 85% — fragmentation
// costs at most ~7% of DRAM on average. Measured about 97.7% mean / 90.5% min at the time of
// writing (printed below). The first refusal comes earlier (about 76% full on average): a
// 1 MiB request needs a 1 MiB hole. That is printed too and only loosely bounded; the store
// answers it by evicting until the allocation fits.
TEST_F(SegmentAllocatorTest, MixedSizeChurnKeepsFragmentationBounded) {
    constexpr uint64_t kCapacity = 64ull << 20;
    SegmentAllocator a(kCapacity);
    std::mt19937_64 rng(20240531);
    auto random_size = [&]() -> uint64_t {
        uint64_t bucket = rng() % 100;
        if (bucket < 60) return 1 + rng() % (16 << 10);           // up to 16 KiB
        if (bucket < 90) return (16 << 10) + rng() % (240 << 10);  // 16..256 KiB
        return (256 << 10) + rng() % (768 << 10);                  // 256 KiB..1 MiB
    };
    std::vector<std::pair<uint64_t, uint64_t>> live;  // offset, size
    double sum_full = 0, min_full = 1, sum_first = 0, min_first = 1, max_frag = 0;
    constexpr int kRounds = 400;
    for (int round = 0; round < kRounds; ++round) {
        int refused = 0;
        bool first = true;
        while (refused < 32) {
            uint64_t size = random_size();
            std::optional<uint64_t> off = a.Allocate(size);
            if (!off) {
                // A refusal must be genuine: no free extent can hold the request.
                ASSERT_LT(a.largest_free_extent(), SegmentAllocator::RoundUp(size));
                if (first) {
                    double util = static_cast<double>(a.used()) / kCapacity;
                    sum_first += util;
                    min_first = std::min(min_first, util);
                    first = false;
                }
                ++refused;
                continue;
            }
            ASSERT_EQ(*off % kPage, 0u);
            live.emplace_back(*off, size);
        }
        double util = static_cast<double>(a.used()) / kCapacity;
        sum_full += util;
        min_full = std::min(min_full, util);
        max_frag = std::max(max_frag, a.fragmentation());
        std::shuffle(live.begin(), live.end(), rng);
        size_t keep = live.size() * 3 / 4;
        for (size_t i = keep; i < live.size(); ++i) a.Free(live[i].first, live[i].second);
        live.resize(keep);
    }
    const double mean_full = sum_full / kRounds;
    const double mean_first = sum_first / kRounds;
    std::printf("[ measured ] mixed-size churn: usable DRAM before the mix is refused: mean "
                "%.4f min %.4f; at the first refusal: mean %.4f min %.4f; max fragmentation "
                "index %.3f\n",
                mean_full, min_full, mean_first, min_first, max_frag);
    EXPECT_GE(mean_full, 0.93);
    EXPECT_GE(min_full, 0.85);
    EXPECT_GE(mean_first, 0.60);

    // No leaks: the books balance, and freeing the rest leaves one extent again.
    {
        std::map<uint64_t, uint64_t> check(live.begin(), live.end());
        ExpectConsistent(a, check);
    }
    for (auto [off, size] : live) a.Free(off, size);
    EXPECT_EQ(a.used(), 0u);
    EXPECT_EQ(a.free_extent_count(), 1u);
    EXPECT_EQ(a.largest_free_extent(), kCapacity);
}

// Random interleaving with the bookkeeping checked at every step against a shadow map.
TEST_F(SegmentAllocatorTest, RandomChurnMatchesShadowAccounting) {
    SegmentAllocator a(256 * kPage);
    std::mt19937_64 rng(7);
    std::map<uint64_t, uint64_t> live;
    for (int step = 0; step < 20000; ++step) {
        if (live.empty() || rng() % 2 == 0) {
            uint64_t size = 1 + rng() % (8 * kPage);
            if (std::optional<uint64_t> off = a.Allocate(size)) {
                ASSERT_FALSE(live.count(*off));
                live[*off] = size;
            }
        } else {
            auto it = live.begin();
            std::advance(it, static_cast<long>(rng() % live.size()));
            a.Free(it->first, it->second);
            live.erase(it);
        }
        if (step % 997 == 0) ExpectConsistent(a, live);
    }
    ExpectConsistent(a, live);
    for (auto [off, size] : live) a.Free(off, size);
    EXPECT_EQ(a.used(), 0u);
    EXPECT_EQ(a.free_extent_count(), 1u);
}


TEST_F(SmallGranuleTest, GranularityIsAPowerOfTwoWithinBounds) {
    SegmentAllocator::SetGranularity(100);
    EXPECT_EQ(SegmentAllocator::granularity(), 128u);
    SegmentAllocator::SetGranularity(1);
    EXPECT_EQ(SegmentAllocator::granularity(), SegmentAllocator::kMinGranularity);
    SegmentAllocator::SetGranularity(1 << 20);
    EXPECT_EQ(SegmentAllocator::granularity(), kPage);
    SegmentAllocator::SetGranularity(64);
    EXPECT_EQ(SegmentAllocator::RoundUp(1), 64u);
    EXPECT_EQ(SegmentAllocator::RoundUp(64), 64u);
    EXPECT_EQ(SegmentAllocator::RoundUp(65), 128u);
    EXPECT_EQ(SegmentAllocator::RoundUp(kPage - 1), kPage);
    EXPECT_EQ(SegmentAllocator::RoundUp(kPage), kPage);
    EXPECT_EQ(SegmentAllocator::RoundUp(kPage + 1), 2 * kPage);  // large: whole blocks
}

// The case: 20,000 values of 7-11 bytes took 80 MB at 4 KiB units.
TEST_F(SmallGranuleTest, SmallValuesArePacked) {
    SegmentAllocator a(2 * 1024 * kPage);  // 8 MiB
    std::map<uint64_t, uint64_t> live;
    for (uint64_t i = 0; i < 20000; ++i) {
        const uint64_t size = 7 + i % 5;
        std::optional<uint64_t> off = a.Allocate(size);
        ASSERT_TRUE(off.has_value()) << i;
        EXPECT_EQ(*off % 64, 0u);
        live[*off] = size;
    }
    EXPECT_EQ(a.used(), 20000u * 64);  // 1.25 MiB, not 80 MB
    EXPECT_EQ(a.free_extent_count(), 1u);  // packed from the start, no holes
    ExpectConsistent(a, live);
}

// Values of 4 KiB and more keep 4 KiB-aligned offsets among small ones (O_DIRECT straight
// from the segment); the padding before them stays free for small values.
TEST_F(SmallGranuleTest, LargeValuesStayBlockAligned) {
    SegmentAllocator a(64 * kPage);
    std::map<uint64_t, uint64_t> live;
    std::mt19937 rng(21);
    for (int i = 0; i < 40; ++i) {
        const uint64_t size = i % 3 == 0 ? kPage * (1 + rng() % 3) + rng() % 100 : 1 + rng() % 600;
        std::optional<uint64_t> off = a.Allocate(size);
        ASSERT_TRUE(off.has_value()) << i;
        if (size >= kPage) {
            EXPECT_EQ(*off % kPage, 0u) << size;
        }
        live[*off] = size;
    }
    ExpectConsistent(a, live);
    // Fill what is left with small values: the alignment padding is usable.
    while (std::optional<uint64_t> off = a.Allocate(64)) live[*off] = 64;
    EXPECT_EQ(a.free_bytes(), 0u);
    ExpectConsistent(a, live);
}

TEST_F(SmallGranuleTest, AlignedFitSkipsExtentsTooSmallOnceAligned) {
    SegmentAllocator a(4 * kPage);
    ASSERT_TRUE(a.AllocateAt(0, 64));
    ASSERT_TRUE(a.AllocateAt(kPage + 64, 64));
    // Free: [64, 4160) (4 KiB long, but 4 KiB-aligned nowhere) and [4224, 16384).
    EXPECT_EQ(a.free_extent_count(), 2u);
    EXPECT_EQ(a.Allocate(kPage), std::optional<uint64_t>(2 * kPage));  // the best fit skipped
    EXPECT_EQ(a.Allocate(4000), std::optional<uint64_t>(64));  // under 4 KiB: the hole fits
    EXPECT_EQ(a.used(), 64u + 64u + kPage + 4032u);
}

TEST_F(SmallGranuleTest, FreeCoalescesAcrossGranules) {
    SegmentAllocator a(kPage);
    std::vector<uint64_t> offs;
    for (int i = 0; i < 64; ++i) offs.push_back(*a.Allocate(10));
    EXPECT_FALSE(a.Allocate(1).has_value());
    for (size_t i = 0; i < offs.size(); i += 2) a.Free(offs[i], 10);
    EXPECT_EQ(a.free_extent_count(), 32u);
    EXPECT_EQ(a.largest_free_extent(), 64u);
    for (size_t i = 1; i < offs.size(); i += 2) a.Free(offs[i], 10);
    EXPECT_EQ(a.free_extent_count(), 1u);
    EXPECT_EQ(a.largest_free_extent(), kPage);
    EXPECT_EQ(a.used(), 0u);
}

TEST_F(SmallGranuleTest, AllocateAtChecksTheUnitOfTheSize) {
    SegmentAllocator a(4 * kPage);
    EXPECT_TRUE(a.AllocateAt(192, 100));       // small: granule-aligned is enough
    EXPECT_FALSE(a.AllocateAt(4160, kPage));   // large: must be block-aligned
    EXPECT_TRUE(a.AllocateAt(kPage, kPage));
    EXPECT_FALSE(a.AllocateAt(200, 10));       // mid-granule
    EXPECT_EQ(a.used(), 128u + kPage);
}

TEST_F(SmallGranuleTest, RandomMixedChurnMatchesShadowAccounting) {
    SegmentAllocator a(256 * kPage);
    std::map<uint64_t, uint64_t> live;
    std::mt19937_64 rng(2121);
    for (int step = 0; step < 20000; ++step) {
        if (live.empty() || rng() % 3 != 0) {
            const uint64_t size = rng() % 4 == 0 ? 1 + rng() % (6 * kPage) : 1 + rng() % 300;
            std::optional<uint64_t> off = a.Allocate(size);
            if (!off) {
                EXPECT_LT(a.largest_free_extent(), SegmentAllocator::RoundUp(size) + kPage);
                continue;
            }
            if (size >= kPage) {
                ASSERT_EQ(*off % kPage, 0u);
            }
            ASSERT_EQ(live.count(*off), 0u);
            live[*off] = size;
        } else {
            auto it = live.begin();
            std::advance(it, static_cast<long>(rng() % live.size()));
            a.Free(it->first, it->second);
            live.erase(it);
        }
    }
    ExpectConsistent(a, live);
    for (auto [offset, size] : live) a.Free(offset, size);
    EXPECT_EQ(a.used(), 0u);
    EXPECT_EQ(a.free_extent_count(), 1u);
}

}  // namespace
}  // namespace mooncake
