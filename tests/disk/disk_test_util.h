// Helpers shared by the disk store tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mooncake::disk_test {

// Deterministic bytes that differ by seed.
inline std::vector<std::byte> Pattern(size_t n, uint64_t seed) {
    std::vector<std::byte> out(n);
    uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
    for (size_t i = 0; i < n; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out[i] = static_cast<std::byte>(x);
    }
    return out;
}

}  // namespace mooncake::disk_test
