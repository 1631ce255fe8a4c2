// SHA-256 (FIPS 180-4) of a byte string, for the FUSE view's hash-derived file names.
// A pure function with no state: safe from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace mooncake::tierfs {

using Sha256Digest = std::array<uint8_t, 32>;

Sha256Digest Sha256(std::string_view data);
// The digest as 64 lowercase hex digits.
std::string Sha256Hex(std::string_view data);

}  // namespace mooncake::tierfs
