// Pieces: one value in caller memory as spans concatenated in order (an iovec list). An object
// made of scattered buffers (an engine's per-layer KV pages, many keys over 8 buffers) moves
// with vectored socket calls or one memcpy per piece, never through a contiguous staging copy.
// A single span is a list of one piece.
//
// Thread-safety: pure functions over memory the caller owns.
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace mooncake {

using ConstPieces = std::span<const std::span<const std::byte>>;
using MutablePieces = std::span<const std::span<std::byte>>;

template <typename Piece>
uint64_t PiecesSize(std::span<const Piece> pieces) {
    uint64_t total = 0;
    for (const Piece& p : pieces) total += p.size();
    return total;
}

// Copies the pieces, in order, into `to` (at most to.size() bytes).
void GatherPieces(ConstPieces from, std::span<std::byte> to);
// Copies `from` over the pieces in order (at most their total).
void ScatterPieces(std::span<const std::byte> from, MutablePieces to);
// The first `n` bytes of `pieces` (the last piece taken cut short), replacing `out`.
void FirstBytes(MutablePieces pieces, uint64_t n, std::vector<std::span<std::byte>>& out);
// iovecs over the pieces' bytes from byte `skip` on, at most `n` of them, appended to `out`.
template <typename Piece>
void AppendIovecs(std::span<const Piece> pieces, uint64_t skip, uint64_t n,
                  std::vector<iovec>& out) {
    for (const Piece& p : pieces) {
        if (n == 0) break;
        if (skip >= p.size()) {
            skip -= p.size();
            continue;
        }
        const uint64_t take = std::min<uint64_t>(p.size() - skip, n);
        out.push_back({const_cast<std::byte*>(p.data()) + skip, static_cast<size_t>(take)});
        n -= take;
        skip = 0;
    }
}

}  // namespace mooncake
