#include "net/spill_reader.h"

#include <limits.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "net/net.h"

namespace mooncake::net {

Status SpillReader::Read(std::span<const iovec> buffers) {
    std::vector<iovec> want(buffers.begin(), buffers.end());
    size_t first = 0;  // want[first..] still to fill; want[first] may be partly filled
    size_t left = 0;
    for (const iovec& v : want) left += v.iov_len;
    const size_t total = left;
    // Advances the wanted buffers by n bytes that have landed.
    auto advance = [&](size_t n) {
        left -= n;
        while (n > 0 && first < want.size()) {
            const size_t take = std::min(n, want[first].iov_len);
            want[first].iov_base = static_cast<char*>(want[first].iov_base) + take;
            want[first].iov_len -= take;
            n -= take;
            if (want[first].iov_len == 0) ++first;
        }
        while (first < want.size() && want[first].iov_len == 0) ++first;
    };
    // What spilled past an earlier Read first.
    while (left > 0 && begin_ < end_) {
        const size_t take = std::min(end_ - begin_, want[first].iov_len);
        std::memcpy(want[first].iov_base, spill_.data() + begin_, take);
        begin_ += take;
        advance(take);
    }
    while (left > 0) {
        // The spill is empty here: the readv may fill it whole past the wanted bytes.
        begin_ = end_ = 0;
        const size_t count = std::min<size_t>(want.size() - first, IOV_MAX - 1);
        std::vector<iovec> iov(want.begin() + static_cast<std::ptrdiff_t>(first),
                               want.begin() + static_cast<std::ptrdiff_t>(first + count));
        size_t asked = 0;
        for (const iovec& v : iov) asked += v.iov_len;
        // Only behind the last wanted bytes: a spill in front of more wanted ones would be
        // bytes out of order.
        if (!spill_.empty() && first + count == want.size()) {
            iov.push_back({spill_.data(), spill_.size()});
        }
        const ssize_t n = ::readv(fd_, iov.data(), static_cast<int>(iov.size()));
        if (n == 0) {
            return left == total ? Status::Unavailable("peer closed the connection")
                                 : Status::IoError("peer closed the connection mid-message");
        }
        if (n < 0) {
            if (errno == EINTR) continue;
            return IoFailure("recv");
        }
        const size_t got = static_cast<size_t>(n);
        advance(std::min(got, asked));
        if (got > asked) end_ = got - asked;
    }
    return Status::Ok();
}

}  // namespace mooncake::net
