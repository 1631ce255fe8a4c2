#include "net/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <memory>
#include <charconv>
#include <cstring>
#include <vector>

namespace mooncake::net {
namespace {

std::string Errno(std::string_view what) {
    return std::string(what) + ": " + std::strerror(errno);
}


struct AddrInfoDeleter {
    void operator()(addrinfo* ai) const { freeaddrinfo(ai); }
};

Result<std::unique_ptr<addrinfo, AddrInfoDeleter>> Resolve(const HostPort& address,
                                                          bool passive) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    addrinfo* result = nullptr;
    std::string port = std::to_string(address.port);
    int rc = getaddrinfo(address.host.empty() ? nullptr : address.host.c_str(), port.c_str(),
                         &hints, &result);
    if (rc != 0) {
        return Status::Unavailable("cannot resolve '" + address.host + "': " + gai_strerror(rc));
    }
    return std::unique_ptr<addrinfo, AddrInfoDeleter>(result);
}

// Moves past `n` transferred bytes of iov[first..]: partly sent/received entries shrink, whole
// ones are skipped (`first` advances).
void Advance(std::vector<iovec>& iov, size_t& first, size_t n) {
    while (n > 0 && first < iov.size()) {
        const size_t take = std::min(n, iov[first].iov_len);
        iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + take;
        iov[first].iov_len -= take;
        n -= take;
        if (iov[first].iov_len == 0) ++first;
    }
}

}  // namespace

Status IoFailure(std::string_view what) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return Status::Timeout(std::string(what) + ": timed out");
    }
    if (errno == ECONNRESET || errno == EPIPE) {
        return Status::Unavailable(Errno(what));
    }
    return Status::IoError(Errno(what));
}

std::string HostPort::ToString() const {
    if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
    return host + ":" + std::to_string(port);
}

Result<HostPort> ParseHostPort(std::string_view text, bool allow_zero_port) {
    HostPort out;
    std::string_view port_text;
    if (!text.empty() && text.front() == '[') {
        size_t close = text.find(']');
        if (close == std::string_view::npos || close + 1 >= text.size() ||
            text[close + 1] != ':') {
            return Status::InvalidArgument("'" + std::string(text) + "' is not [HOST]:PORT");
        }
        out.host = std::string(text.substr(1, close - 1));
        port_text = text.substr(close + 2);
    } else {
        size_t colon = text.rfind(':');
        if (colon == std::string_view::npos || colon == 0) {
            return Status::InvalidArgument("'" + std::string(text) + "' is not HOST:PORT");
        }
        out.host = std::string(text.substr(0, colon));
        port_text = text.substr(colon + 1);
        if (out.host.find(':') != std::string::npos) {
            return Status::InvalidArgument("bracket an IPv6 address: [" + out.host + "]:PORT");
        }
    }
    unsigned port = 0;
    auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port > 65535 ||
        (port == 0 && !allow_zero_port) || port_text.empty()) {
        return Status::InvalidArgument("bad port in '" + std::string(text) + "'");
    }
    out.port = static_cast<uint16_t>(port);
    return out;
}

bool IsLoopbackHost(std::string_view host) {
    return host == "localhost" || host == "::1" || host.starts_with("127.");
}

void Fd::Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

Status SetTimeouts(int fd, std::chrono::milliseconds timeout) {
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
        return Status::IoError(Errno("setsockopt timeouts"));
    }
    return Status::Ok();
}

Result<Fd> ConnectTcp(const HostPort& address, std::chrono::milliseconds timeout) {
    auto resolved = Resolve(address, false);
    if (!resolved.ok()) return resolved.status();
    Status last = Status::Unavailable("no address for '" + address.host + "'");
    for (addrinfo* ai = resolved->get(); ai != nullptr; ai = ai->ai_next) {
        Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
        if (!fd.valid()) {
            last = Status::IoError(Errno("socket"));
            continue;
        }
        // Non-blocking connect so the timeout bounds it, then back to blocking I/O.
        int flags = fcntl(fd.get(), F_GETFL);
        fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK);
        int rc = ::connect(fd.get(), ai->ai_addr, ai->ai_addrlen);
        if (rc != 0 && errno == EINPROGRESS) {
            pollfd pfd{fd.get(), POLLOUT, 0};
            rc = ::poll(&pfd, 1, static_cast<int>(timeout.count()));
            if (rc == 0) {
                last = Status::Unavailable("connect to " + address.ToString() + " timed out");
                continue;
            }
            int err = 0;
            socklen_t len = sizeof err;
            getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
            rc = err == 0 ? 0 : -1;
            errno = err;
        }
        if (rc != 0) {
            last = Status::Unavailable(Errno("connect to " + address.ToString()));
            continue;
        }
        fcntl(fd.get(), F_SETFL, flags);
        int one = 1;
        setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        MC_RETURN_IF_ERROR(SetTimeouts(fd.get(), timeout));
        return fd;
    }
    return last;
}

Result<Fd> ListenTcp(const HostPort& address, int backlog) {
    auto resolved = Resolve(address, true);
    if (!resolved.ok()) return resolved.status();
    Status last = Status::IoError("no address to listen on");
    for (addrinfo* ai = resolved->get(); ai != nullptr; ai = ai->ai_next) {
        Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
        if (!fd.valid()) {
            last = Status::IoError(Errno("socket"));
            continue;
        }
        int one = 1;
        setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
            last = Status::IoError(Errno("bind " + address.ToString()));
            continue;
        }
        if (::listen(fd.get(), backlog) != 0) {
            last = Status::IoError(Errno("listen " + address.ToString()));
            continue;
        }
        return fd;
    }
    return last;
}

Result<uint16_t> BoundPort(int fd) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
        return Status::IoError(Errno("getsockname"));
    }
    if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
}

Status SendAll(int fd, std::span<const iovec> buffers) {
    std::vector<iovec> iov(buffers.begin(), buffers.end());
    size_t first = 0;
    while (first < iov.size()) {
        if (iov[first].iov_len == 0) {
            ++first;
            continue;
        }
        msghdr msg{};
        msg.msg_iov = &iov[first];
        msg.msg_iovlen = std::min<size_t>(iov.size() - first, IOV_MAX);
        ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            return IoFailure("send");
        }
        Advance(iov, first, static_cast<size_t>(n));
    }
    return Status::Ok();
}

Status SendAll(int fd, const void* data, size_t size) {
    iovec one{const_cast<void*>(data), size};
    return SendAll(fd, std::span<const iovec>(&one, 1));
}

Status RecvAll(int fd, void* data, size_t size) {
    char* p = static_cast<char*>(data);
    size_t got = 0;
    while (got < size) {
        ssize_t n = ::recv(fd, p + got, size - got, 0);
        if (n == 0) {
            return got == 0 ? Status::Unavailable("peer closed the connection")
                            : Status::IoError("peer closed the connection mid-message");
        }
        if (n < 0) {
            if (errno == EINTR) continue;
            return IoFailure("recv");
        }
        got += static_cast<size_t>(n);
    }
    return Status::Ok();
}

Status RecvAll(int fd, std::span<const iovec> buffers) {
    std::vector<iovec> iov(buffers.begin(), buffers.end());
    size_t first = 0;
    bool any = false;  // a close before the first byte is "peer closed", as RecvAll's
    while (first < iov.size()) {
        if (iov[first].iov_len == 0) {
            ++first;
            continue;
        }
        const int count = static_cast<int>(std::min<size_t>(iov.size() - first, IOV_MAX));
        ssize_t n = ::readv(fd, &iov[first], count);
        if (n == 0) {
            return !any ? Status::Unavailable("peer closed the connection")
                        : Status::IoError("peer closed the connection mid-message");
        }
        if (n < 0) {
            if (errno == EINTR) continue;
            return IoFailure("recv");
        }
        any = true;
        Advance(iov, first, static_cast<size_t>(n));
    }
    return Status::Ok();
}

Status Discard(int fd, uint64_t size) {
    char buf[65536];
    while (size > 0) {
        size_t take = std::min<uint64_t>(size, sizeof buf);
        MC_RETURN_IF_ERROR(RecvAll(fd, buf, take));
        size -= take;
    }
    return Status::Ok();
}

}  // namespace mooncake::net
