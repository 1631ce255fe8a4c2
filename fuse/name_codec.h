// How mooncake-tierfs names a key as a file (DESIGN.md, "Contracts"). Pure functions, no state:
// safe from any thread, and the target of the codec fuzzer.
//
// Plain names. Encode(key) is the key with these bytes percent-encoded as `%` and two
// UPPERCASE hex digits: `%` (0x25), `/` (0x2F), every byte below 0x20, and 0x7F. Every other
// byte, including space, `~` and bytes >= 0x80 (UTF-8 or not), is kept as is.
//   "a/b%c" -> "a%2Fb%25c"      "tab\there" -> "tab%09here"
// The keys "." and ".." would be the directory entries of the same names, so their dots are
// encoded: "." -> "%2E", ".." -> "%2E%2E" (only these two keys; "..." stays "...").
//
// Hashed names. When the plain name is longer than 255 bytes (NAME_MAX), the key is listed as
//   PREFIX "%~" HASH
// HASH is the SHA-256 of the raw key bytes as 64 lowercase hex digits. PREFIX is the start of
// the plain name cut at byte min(128, length), then (1) moved back, at most 3 bytes, while the
// byte after the cut is a UTF-8 continuation byte (0x80..0xBF), so a readable prefix does not
// end in half a character, then (2) moved back while the cut is inside a %XX escape (one of
// the two bytes before it is '%'). A hashed name is at most 128 + 2 + 64 = 194 bytes.
//
// Why "%~": in a plain name every `%` starts an escape with two uppercase hex digits, so "%~"
// never occurs in one. Plain and hashed names can therefore never collide, and two hashed
// names collide only if SHA-256 does. Each key has exactly one name, and Decode accepts only
// that name (non-canonical spellings such as "%41" for "A" are refused), so
// Encode(Decode(n)) == n whenever Decode(n) succeeds.
//
// A hashed name cannot be decoded: the FUSE view resolves it from the names it has listed, or
// by listing the keys that start with HashedNameKeyPrefix(name) and encoding each one.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace mooncake::tierfs::name_codec {

inline constexpr size_t kMaxNameBytes = 255;          // NAME_MAX
inline constexpr size_t kHashedPrefixMaxBytes = 128;  // readable part of a hashed name
inline constexpr std::string_view kHashMarker = "%~";
inline constexpr size_t kHashHexDigits = 64;  // SHA-256

// The file name of `key` (any bytes; the store's keys are 1..4096 bytes without NUL).
// An empty key encodes to "" (no key is empty).
std::string Encode(std::string_view key);

// The percent-encoded form without the 255-byte rule (may be longer than NAME_MAX). Used by
// Encode, and by descriptions that print a key in full.
std::string EscapeKey(std::string_view key);

// The key whose plain name is `name`; nullopt if `name` is not the canonical plain name of any
// key (malformed or lowercase escape, an escape of a byte that is not encoded, a raw `/` or
// control byte, "." / "..", empty, longer than 255 bytes) or is a hashed name.
std::optional<std::string> Decode(std::string_view name);

// True when `name` has the hashed form: at most 255 bytes, ends with "%~" and 64 lowercase hex
// digits, and its prefix is at most 128 bytes.
bool IsHashedName(std::string_view name);

// For a hashed name: the raw key bytes its PREFIX stands for (every key listed under that name
// starts with them). nullopt if `name` is not a hashed name or its prefix is malformed.
std::optional<std::string> HashedNameKeyPrefix(std::string_view name);

}  // namespace mooncake::tierfs::name_codec
