// Found by fuzz/data_header_fuzz: the data channel's header codec.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "gtest/gtest.h"
#include "net/data_protocol.h"

namespace mooncake {
namespace {

// The fuzzer's input (after its selector byte): a response header with non-zero reserved
// bytes 12..15. It was accepted, so two different byte strings meant the same header and a
// peer could smuggle data in the reserved field; a request's reserved flags were already
// refused. Now both are.
TEST(FuzzRegressionDataProtocol, ResponseWithReservedBytesIsRefused) {
    const unsigned char crash[] = {0x4d, 0x43, 0x44, 0x52, 0x01, 0x00, 0x00, 0x00,
                                   0x00, 0x00, 0x00, 0x00, 0x00, 0x19, 0xdb, 0xcb,
                                   0x19, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    static_assert(sizeof crash == data::kResponseHeaderSize);
    data::ResponseBytes raw;
    std::memcpy(raw.data(), crash, sizeof crash);
    auto h = data::ParseResponse(raw);
    EXPECT_FALSE(h.ok());

    // With the reserved bytes zeroed it is a fine OK response, and round-trips byte for byte.
    raw[13] = raw[14] = raw[15] = std::byte{0};
    auto ok = data::ParseResponse(raw);
    ASSERT_TRUE(ok.ok()) << ok.status().ToString();
    EXPECT_EQ(data::SerializeResponse(*ok), raw);
}

}  // namespace
}  // namespace mooncake
