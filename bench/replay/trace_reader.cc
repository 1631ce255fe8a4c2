#include "bench/replay/trace_reader.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>

namespace mooncake::replay {
namespace {

// Position just after `"name"` and the colon, or npos.
size_t FindField(std::string_view line, std::string_view name) {
    std::string quoted = "\"" + std::string(name) + "\"";
    size_t at = line.find(quoted);
    if (at == std::string_view::npos) return at;
    at += quoted.size();
    while (at < line.size() && std::isspace(static_cast<unsigned char>(line[at]))) ++at;
    if (at >= line.size() || line[at] != ':') return std::string_view::npos;
    return at + 1;
}

bool ParseInt(std::string_view line, size_t& at, int64_t& out) {
    while (at < line.size() && std::isspace(static_cast<unsigned char>(line[at]))) ++at;
    const char* begin = line.data() + at;
    const char* end = line.data() + line.size();
    double as_double = 0;
    auto [ptr, ec] = std::from_chars(begin, end, out);
    if (ec != std::errc()) return false;
    // Tolerate a fractional timestamp ("12.0"): take its integer part.
    if (ptr < end && *ptr == '.') {
        auto [p2, ec2] = std::from_chars(begin, end, as_double);
        if (ec2 != std::errc()) return false;
        out = static_cast<int64_t>(as_double);
        ptr = p2;
    }
    at = static_cast<size_t>(ptr - line.data());
    return true;
}

}  // namespace

Result<TraceRequest> ParseTraceLine(std::string_view line) {
    TraceRequest req;
    size_t at = FindField(line, "timestamp");
    if (at == std::string_view::npos || !ParseInt(line, at, req.timestamp_ms)) {
        return Status::InvalidArgument("no numeric \"timestamp\"");
    }
    at = FindField(line, "input_length");
    if (at != std::string_view::npos && !ParseInt(line, at, req.input_length)) {
        return Status::InvalidArgument("\"input_length\" is not a number");
    }
    at = FindField(line, "hash_ids");
    if (at == std::string_view::npos) return Status::InvalidArgument("no \"hash_ids\"");
    while (at < line.size() && std::isspace(static_cast<unsigned char>(line[at]))) ++at;
    if (at >= line.size() || line[at] != '[') {
        return Status::InvalidArgument("\"hash_ids\" is not an array");
    }
    ++at;
    for (;;) {
        while (at < line.size() && std::isspace(static_cast<unsigned char>(line[at]))) ++at;
        if (at < line.size() && line[at] == ']') break;
        int64_t id = 0;
        if (!ParseInt(line, at, id)) return Status::InvalidArgument("bad block id in hash_ids");
        req.blocks.push_back(id);
        while (at < line.size() && std::isspace(static_cast<unsigned char>(line[at]))) ++at;
        if (at < line.size() && line[at] == ',') {
            ++at;
            continue;
        }
        if (at < line.size() && line[at] == ']') break;
        return Status::InvalidArgument("unterminated hash_ids");
    }
    return req;
}

int64_t BlockTokens(const TraceRequest& request, size_t index, int64_t block_tokens) {
    if (index + 1 < request.blocks.size() || request.input_length < 0) return block_tokens;
    const int64_t before = block_tokens * static_cast<int64_t>(index);
    return std::clamp<int64_t>(request.input_length - before, 1, block_tokens);
}

uint64_t BlockBytes(const TraceRequest& request, size_t index, int64_t block_tokens,
                    uint64_t full_bytes) {
    const auto tokens = static_cast<uint64_t>(BlockTokens(request, index, block_tokens));
    const auto per_block = static_cast<uint64_t>(block_tokens);
    return std::max<uint64_t>(1, (full_bytes * tokens + per_block - 1) / per_block);
}

Result<std::vector<TraceRequest>> ReadTrace(const std::string& path) {
    std::ifstream in(path);
    if (!in) return Status::InvalidArgument("cannot read trace '" + path + "'");
    std::vector<TraceRequest> out;
    std::string line;
    size_t line_no = 0;
    while (std::getline(in, line)) {
        ++line_no;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        Result<TraceRequest> req = ParseTraceLine(line);
        if (!req.ok()) {
            return Status::InvalidArgument(path + ":" + std::to_string(line_no) + ": " +
                                           req.status().message());
        }
        out.push_back(std::move(req).value());
    }
    return out;
}

}  // namespace mooncake::replay
