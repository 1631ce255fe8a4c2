// The object contents disk_recovery_fuzz writes into its base image, shared with the seed
// generator, which must hash exactly the same bytes to build matching journal records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mooncake::fuzz {

// `n` bytes of a xorshift stream started from `seed`.
inline std::vector<std::byte> ObjectBytes(size_t n, uint64_t seed) {
    std::vector<std::byte> out(n);
    uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
    for (auto& b : out) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        b = static_cast<std::byte>(x);
    }
    return out;
}

}  // namespace mooncake::fuzz
