// Text encodings every part shares: UTF-8 validation and JSON string quoting. The daemon's
// HTTP answers, the metrics exposition and mooncakectl's --json all use these, so a key or a
// name with odd bytes is written the same way everywhere.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mooncake {

// Length in bytes of the valid UTF-8 sequence starting at s[i], or 0 if none starts there
// (overlong forms, surrogates and code points above U+10FFFF are invalid).
size_t Utf8SequenceLength(std::string_view s, size_t i);

// Appends `bytes` as a JSON string literal. Control characters, DEL and U+2028/U+2029 are
// escaped; a byte that starts no valid UTF-8 sequence becomes the lone surrogate U+DC00 + byte
// (Python's surrogateescape), so arbitrary bytes round-trip and the output is always valid JSON.
void AppendJsonQuoted(std::string& out, std::string_view bytes);
std::string JsonQuote(std::string_view bytes);

}  // namespace mooncake
