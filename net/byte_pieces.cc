#include "net/byte_pieces.h"

#include <algorithm>
#include <cstring>

namespace mooncake {

void GatherPieces(ConstPieces from, std::span<std::byte> to) {
    size_t at = 0;
    for (const auto& p : from) {
        const size_t n = std::min(p.size(), to.size() - at);
        if (n > 0) std::memcpy(to.data() + at, p.data(), n);
        at += n;
        if (at == to.size()) break;
    }
}

void ScatterPieces(std::span<const std::byte> from, MutablePieces to) {
    size_t at = 0;
    for (const auto& p : to) {
        const size_t n = std::min(p.size(), from.size() - at);
        if (n > 0) std::memcpy(p.data(), from.data() + at, n);
        at += n;
        if (at == from.size()) break;
    }
}

void FirstBytes(MutablePieces pieces, uint64_t n, std::vector<std::span<std::byte>>& out) {
    out.clear();
    for (const auto& p : pieces) {
        if (n == 0) break;
        const uint64_t take = std::min<uint64_t>(p.size(), n);
        out.push_back(p.first(static_cast<size_t>(take)));
        n -= take;
    }
}

}  // namespace mooncake
