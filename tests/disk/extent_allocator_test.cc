#include "core/disk/extent_allocator.h"

#include <gtest/gtest.h>

namespace mooncake {
namespace {

constexpr uint64_t kB = kDeviceBlockSize;

TEST(ExtentAllocatorTest, BestFitThenCoalesce) {
    ExtentAllocator a(100 * kB, 10 * kB);
    auto x = a.Allocate(3 * kB, 8);
    auto y = a.Allocate(1, 8);  // rounds up to a block
    auto z = a.Allocate(2 * kB, 8);
    ASSERT_TRUE(x && y && z);
    EXPECT_EQ(*x, (std::vector<ExtentAllocator::Extent>{{100 * kB, 3 * kB}}));
    EXPECT_EQ(*y, (std::vector<ExtentAllocator::Extent>{{103 * kB, kB}}));
    EXPECT_EQ(a.free_bytes(), 4 * kB);
    a.Free((*x)[0]);
    a.Free((*z)[0]);
    EXPECT_EQ(a.fragments(), 2u);
    // A 3-block request fits the freed x exactly (best fit), leaving the 4 blocks at the end.
    auto w = a.Allocate(3 * kB, 8);
    ASSERT_TRUE(w);
    EXPECT_EQ((*w)[0].offset, 100 * kB);
    a.Free((*w)[0]);
    a.Free((*y)[0]);
    EXPECT_EQ(a.fragments(), 1u);
    EXPECT_EQ(a.free_bytes(), 10 * kB);
}

TEST(ExtentAllocatorTest, FragmentedSpaceIsCombined) {
    ExtentAllocator a(0, 8 * kB);
    std::vector<ExtentAllocator::Extent> blocks;
    for (int i = 0; i < 8; ++i) blocks.push_back((*a.Allocate(kB, 1))[0]);
    for (int i = 0; i < 8; i += 2) a.Free(blocks[i]);
    EXPECT_FALSE(a.Allocate(4 * kB, 3));  // needs four pieces
    auto got = a.Allocate(4 * kB, 4);
    ASSERT_TRUE(got);
    EXPECT_EQ(got->size(), 4u);
    EXPECT_EQ(a.free_bytes(), 0u);
    EXPECT_TRUE(a.Allocate(0, 1));  // nothing needs nothing
    EXPECT_FALSE(a.Allocate(1, 4));
}

TEST(ExtentAllocatorTest, ClaimRefusesOverlapsAndOutOfRange) {
    ExtentAllocator a(16 * kB, 16 * kB);
    EXPECT_TRUE(a.Claim({20 * kB, 4 * kB}));
    EXPECT_FALSE(a.Claim({22 * kB, 4 * kB}));  // overlaps
    EXPECT_FALSE(a.Claim({8 * kB, 4 * kB}));   // before the region
    EXPECT_FALSE(a.Claim({30 * kB, 4 * kB}));  // runs past the end
    EXPECT_FALSE(a.Claim({17 * kB + 1, kB}));  // misaligned
    EXPECT_TRUE(a.Claim({16 * kB, 4 * kB}));
    EXPECT_EQ(a.free_bytes(), 8 * kB);
}

}  // namespace
}  // namespace mooncake
