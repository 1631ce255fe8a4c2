// Found by fuzz/disk_record_fuzz: the superblock sanity check and the disk record codecs.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/disk/device.h"
#include "core/disk/format.h"
#include "gtest/gtest.h"

namespace mooncake {
namespace {

namespace df = disk_format;

// A superblock whose hash is right but whose layout only looked sane because the sums in the
// check wrapped around 2^64 (data_offset + data_size, journal_offset + journal_size). It was
// accepted as valid; the store would then read its journal and data far outside the device.
TEST(FuzzRegressionFormat, SuperblockLayoutThatWrapsAroundIsDamaged) {
    df::Superblock sb;
    sb.capacity = 4 << 20;
    sb.journal_offset = 1 << 20;
    sb.journal_size = 2 << 20;
    sb.data_offset = 0xFFFFFFFFFFFFF000ull;  // past the capacity ...
    sb.data_size = 0x2000;                   // ... and the sum wraps to 0x1000
    sb.store_id = 7;
    std::vector<std::byte> block(kDeviceBlockSize);
    df::EncodeSuperblock(sb, block);
    df::Superblock out;
    EXPECT_EQ(df::DecodeSuperblock(block, &out), df::SuperblockState::kDamaged);

    sb.data_offset = 3 << 20;
    sb.data_size = 1 << 20;
    sb.journal_offset = 0xFFFFFFFFFFFFF000ull;  // journal_offset + journal_size wraps
    df::EncodeSuperblock(sb, block);
    EXPECT_EQ(df::DecodeSuperblock(block, &out), df::SuperblockState::kDamaged);

    // The layout a real store writes is still valid.
    df::Superblock real = df::Superblock::ForCapacity(4 << 20, 7);
    df::EncodeSuperblock(real, block);
    ASSERT_EQ(df::DecodeSuperblock(block, &out), df::SuperblockState::kValid);
    EXPECT_EQ(out.data_offset, real.data_offset);
    EXPECT_EQ(out.data_size, real.data_size);
}

}  // namespace
}  // namespace mooncake
