#include "net/buffered_reader.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "net/net.h"

namespace mooncake::net {

Status BufferedReader::Fill() {
    begin_ = end_ = 0;
    for (;;) {
        ssize_t n = ::recv(fd_, buffer_.get(), fill_limit_, 0);
        if (n > 0) {
            end_ = static_cast<size_t>(n);
            return Status::Ok();
        }
        if (n == 0) return Status::Unavailable("peer closed the connection");
        if (errno == EINTR) continue;
        return IoFailure("recv");
    }
}

Status BufferedReader::WaitForData(std::chrono::milliseconds idle) {
    if (buffered() > 0) return Status::Ok();
    // A blocking recv both waits and reads (a poll first would cost a second system call per
    // request); its socket timeout bounds each wait, so `idle` is checked at that step.
    const auto deadline = std::chrono::steady_clock::now() + idle;
    for (;;) {
        Status st = Fill();
        if (!st.Is(StatusCode::kTimeout)) return st;
        if (std::chrono::steady_clock::now() >= deadline) return st;
    }
}

Status BufferedReader::RecvAll(void* data, size_t size) {
    return Read(data, size, kDirectBytes);
}

Status BufferedReader::RecvPayload(void* data, size_t size) {
    if (size < kSmallPayloadBytes) {
        if (capacity_ < kBufferBytes) {
            auto larger = std::make_unique_for_overwrite<char[]>(kBufferBytes);
            std::memcpy(larger.get(), buffer_.get() + begin_, buffered());
            end_ -= begin_;
            begin_ = 0;
            buffer_ = std::move(larger);
            capacity_ = kBufferBytes;
        }
        fill_limit_ = kBufferBytes;
        return Read(data, size, /*direct=*/SIZE_MAX);
    }
    fill_limit_ = kFieldFillBytes;
    return Read(data, size, kDirectBytes);
}

Status BufferedReader::Read(void* data, size_t size, size_t direct) {
    char* out = static_cast<char*>(data);
    const size_t take = std::min(size, buffered());
    if (take > 0) std::memcpy(out, buffer_.get() + begin_, take);
    begin_ += take;
    size_t got = take;
    if (size - got >= direct) return net::RecvAll(fd_, out + got, size - got);
    while (got < size) {
        Status st = Fill();
        if (!st.ok()) {
            if (st.Is(StatusCode::kUnavailable) && got > 0) {
                return Status::IoError("peer closed the connection mid-message");
            }
            return st;
        }
        const size_t more = std::min(size - got, buffered());
        std::memcpy(out + got, buffer_.get() + begin_, more);
        begin_ += more;
        got += more;
    }
    return Status::Ok();
}

Status BufferedReader::Discard(uint64_t size) {
    const uint64_t take = std::min<uint64_t>(size, buffered());
    begin_ += static_cast<size_t>(take);
    size -= take;
    return size == 0 ? Status::Ok() : net::Discard(fd_, size);
}

}  // namespace mooncake::net
