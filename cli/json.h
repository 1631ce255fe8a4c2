// JsonWriter: a small streaming JSON writer for mooncakectl's --json output.
//
// Plain JSON (RFC 8259) for people's scripts: objects, arrays, strings, numbers, booleans,
// null; indented two spaces per level (an array of scalars stays on one line), one value per
// document. Strings are byte strings:
// valid UTF-8 is written as is (control characters, '"' and '\' escaped, U+2028/U+2029 as
// \u escapes), and each byte that is not part of valid UTF-8 is written as the lone surrogate
// \udc80..\udcff (the "surrogateescape" convention: Python's
// json.loads(s).encode("utf-8", "surrogateescape") recovers the exact bytes). Callers that
// must be lossless for every reader add a base64 field next to it (see WriteKeyFields in printers.h).
//
// Misuse (a value where a key is due, unbalanced End*) is a programming error: asserted.
//
// Thread-safety: none; one writer per document.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/text_encoding.h"  // JsonQuote

namespace mooncake::cli {

class JsonWriter {
  public:
    explicit JsonWriter(bool pretty = true) : pretty_(pretty) {}

    void BeginObject();
    void EndObject();
    void BeginArray();
    void EndArray();
    void Key(std::string_view name);  // inside an object, before each value

    void String(std::string_view bytes);
    void Int(int64_t value);
    void Uint(uint64_t value);
    void Double(double value);  // non-finite values become null (JSON has no NaN)
    void Bool(bool value);
    void Null();
    // `text` if it is a JSON number (e.g. a knob's "0.95"), else `text` as a string.
    void NumberOrString(std::string_view text);

    // The document so far; complete once every Begin has its End. Ends with a newline.
    std::string Finish() const;

  private:
    struct Level {
        bool is_object;
        size_t count = 0;
        bool key_pending = false;
        size_t start = 0;  // offset of the opening bracket in out_
        bool has_container = false;
    };
    void BeforeValue();
    void Newline();
    void Open(bool is_object, char c);
    void Close(bool is_object, char c);

    bool pretty_;
    std::string out_;
    std::vector<Level> stack_;
    bool done_ = false;
};

// JSON string escaping is core/base/text_encoding.h's JsonQuote, which JsonWriter::String uses.
// True when `text` is a number in JSON's grammar ("-0.5e3" yes; "1." "01" "inf" no).
bool IsJsonNumber(std::string_view text);

}  // namespace mooncake::cli
