// Text helpers for mooncakectl's output: UTF-8 checks, base64, key display, human sizes and
// durations. Pure functions, no I/O.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/base/text_encoding.h"  // Utf8SequenceLength

namespace mooncake::cli {

bool IsValidUtf8(std::string_view s);

std::string Base64Encode(std::string_view bytes);
std::optional<std::string> Base64Decode(std::string_view text);

// A key for a human table: printable bytes and valid UTF-8 as is; control bytes, DEL, '\' and
// bytes outside valid UTF-8 as \xNN. Unambiguous: a literal backslash is shown as \x5C.
std::string DisplayKey(std::string_view key);
// Terminal columns `text` takes: code points of valid UTF-8 (wide CJK counted as one).
size_t DisplayWidth(std::string_view text);

// "512 B", "4 KiB", "1.5 MiB", "64 MiB", "1.2 GiB", "120 GiB" (binary units; one decimal
// below 100, dropped when it is 0).
std::string HumanSize(uint64_t bytes);
// "0s", "850ms", "3.2s", "2m05s", "1h02m", "3d04h".
std::string HumanDuration(std::chrono::nanoseconds d);

}  // namespace mooncake::cli
