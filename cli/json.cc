#include "cli/json.h"

#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "cli/text.h"

namespace mooncake::cli {
namespace {

}  // namespace

bool IsJsonNumber(std::string_view t) {
    size_t i = 0;
    auto digit = [&](size_t k) { return k < t.size() && t[k] >= '0' && t[k] <= '9'; };
    if (i < t.size() && t[i] == '-') ++i;
    if (!digit(i)) return false;
    if (t[i] == '0') {
        ++i;
    } else {
        while (digit(i)) ++i;
    }
    if (i < t.size() && t[i] == '.') {
        ++i;
        if (!digit(i)) return false;
        while (digit(i)) ++i;
    }
    if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
        ++i;
        if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
        if (!digit(i)) return false;
        while (digit(i)) ++i;
    }
    return i == t.size();
}

void JsonWriter::Newline() {
    if (!pretty_) return;
    out_ += '\n';
    out_.append(stack_.size() * 2, ' ');
}

void JsonWriter::BeforeValue() {
    assert(!done_ && "a JSON document holds one value");
    if (stack_.empty()) return;
    Level& top = stack_.back();
    if (top.is_object) {
        assert(top.key_pending && "an object value needs a Key() first");
        top.key_pending = false;
        return;
    }
    if (top.count++ > 0) out_ += ',';
    Newline();
}

void JsonWriter::Key(std::string_view name) {
    assert(!stack_.empty() && stack_.back().is_object && !stack_.back().key_pending);
    Level& top = stack_.back();
    if (top.count++ > 0) out_ += ',';
    Newline();
    AppendJsonQuoted(out_, name);
    out_ += pretty_ ? ": " : ":";
    top.key_pending = true;
}

void JsonWriter::Open(bool is_object, char c) {
    BeforeValue();
    if (!stack_.empty()) stack_.back().has_container = true;
    stack_.push_back({is_object, 0, false, out_.size()});
    out_ += c;
}

void JsonWriter::Close(bool is_object, char c) {
    assert(!stack_.empty() && stack_.back().is_object == is_object && !stack_.back().key_pending);
    (void)is_object;
    const Level level = stack_.back();
    stack_.pop_back();
    if (level.count > 0) Newline();
    out_ += c;
    if (pretty_ && !is_object && !level.has_container && level.count > 0) {
        // An array of scalars reads better on one line: ["MEMORY", "LOCAL_DISK"]. Newlines
        // never occur inside written strings (they are escaped), so each newline plus its
        // indentation here is layout.
        std::string flat;
        for (size_t i = level.start; i < out_.size(); ++i) {
            if (out_[i] != '\n') {
                flat += out_[i];
                continue;
            }
            while (i + 1 < out_.size() && out_[i + 1] == ' ') ++i;
            if (!flat.empty() && flat.back() == ',') flat += ' ';
        }
        out_.replace(level.start, std::string::npos, flat);
    }
    if (stack_.empty()) done_ = true;
}

void JsonWriter::BeginObject() { Open(true, '{'); }
void JsonWriter::EndObject() { Close(true, '}'); }
void JsonWriter::BeginArray() { Open(false, '['); }
void JsonWriter::EndArray() { Close(false, ']'); }

void JsonWriter::String(std::string_view bytes) {
    BeforeValue();
    AppendJsonQuoted(out_, bytes);
    if (stack_.empty()) done_ = true;
}

void JsonWriter::Int(int64_t value) {
    BeforeValue();
    out_ += std::to_string(value);
    if (stack_.empty()) done_ = true;
}

void JsonWriter::Uint(uint64_t value) {
    BeforeValue();
    out_ += std::to_string(value);
    if (stack_.empty()) done_ = true;
}

void JsonWriter::Double(double value) {
    BeforeValue();
    if (!std::isfinite(value)) {
        out_ += "null";
    } else {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.17g", value);
        // Shortest form that reads back the same double.
        for (int precision = 1; precision <= 17; ++precision) {
            char shorter[32];
            std::snprintf(shorter, sizeof shorter, "%.*g", precision, value);
            if (std::strtod(shorter, nullptr) == value) {
                std::snprintf(buf, sizeof buf, "%s", shorter);
                break;
            }
        }
        out_ += buf;
    }
    if (stack_.empty()) done_ = true;
}

void JsonWriter::Bool(bool value) {
    BeforeValue();
    out_ += value ? "true" : "false";
    if (stack_.empty()) done_ = true;
}

void JsonWriter::Null() {
    BeforeValue();
    out_ += "null";
    if (stack_.empty()) done_ = true;
}

void JsonWriter::NumberOrString(std::string_view text) {
    if (!IsJsonNumber(text)) {
        String(text);
        return;
    }
    BeforeValue();
    out_.append(text);
    if (stack_.empty()) done_ = true;
}

std::string JsonWriter::Finish() const {
    assert(stack_.empty() && "unbalanced JSON document");
    return out_ + "\n";
}

}  // namespace mooncake::cli
