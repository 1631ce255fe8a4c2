#include "net/shm_channel.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mooncake::shm {
namespace {

// sockaddr_un for the abstract name (a leading NUL, no terminator counted).
socklen_t AbstractAddress(uint16_t data_port, sockaddr_un& addr) {
    std::memset(&addr, 0, sizeof(addr));
    addr.sun_family = AF_UNIX;
    const std::string name = SocketName(data_port);
    std::memcpy(addr.sun_path + 1, name.data(), name.size());
    return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
}

Status Errno(std::string_view what) {
    return Status::IoError(std::string(what) + ": " + std::strerror(errno));
}

}  // namespace

std::string SocketName(uint16_t data_port) {
    return "mooncake-tier-shm." + std::to_string(data_port);
}

Result<net::Fd> Listen(uint16_t data_port) {
    net::Fd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    if (!fd.valid()) return Errno("socket(AF_UNIX)");
    sockaddr_un addr;
    socklen_t len = AbstractAddress(data_port, addr);
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0) {
        return Errno("bind @" + SocketName(data_port));
    }
    if (::listen(fd.get(), 64) != 0) return Errno("listen @" + SocketName(data_port));
    return fd;
}

Result<net::Fd> Connect(uint16_t data_port, std::chrono::milliseconds timeout) {
    net::Fd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    if (!fd.valid()) return Errno("socket(AF_UNIX)");
    sockaddr_un addr;
    socklen_t len = AbstractAddress(data_port, addr);
    // A Unix connect does not wait on the network: it succeeds or is refused at once.
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0) {
        return Status::Unavailable("no shared-pool channel at @" + SocketName(data_port) + ": " +
                                   std::strerror(errno));
    }
    MC_RETURN_IF_ERROR(net::SetTimeouts(fd.get(), timeout));
    return fd;
}

Status SendMessage(int fd, std::span<const iovec> parts, int pass_fd) {
    msghdr msg{};
    msg.msg_iov = const_cast<iovec*>(parts.data());
    msg.msg_iovlen = parts.size();
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    if (pass_fd >= 0) {
        std::memset(control, 0, sizeof(control));
        msg.msg_control = control;
        msg.msg_controllen = sizeof(control);
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
    }
    while (true) {
        ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
        if (n >= 0) return Status::Ok();  // a seqpacket message goes whole or not at all
        if (errno == EINTR) continue;
        return net::IoFailure("sendmsg on the shared-pool channel");
    }
}

Status RecvMessage(int fd, std::vector<std::byte>& buffer, size_t max_bytes, net::Fd* received) {
    buffer.resize(max_bytes);
    iovec iov{buffer.data(), buffer.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    ssize_t n;
    do {
        n = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return net::IoFailure("recvmsg on the shared-pool channel");
    // Every descriptor that came is taken, so none leaks whatever the message was.
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; ++i) {
            int got;
            std::memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            net::Fd owned(got);
            if (received != nullptr && !received->valid()) *received = std::move(owned);
        }
    }
    if (n == 0) return Status::Unavailable("peer closed the shared-pool channel");
    if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
        return Status::InvalidArgument("shared-pool message over " + std::to_string(max_bytes) +
                                       " bytes or with too many descriptors");
    }
    buffer.resize(static_cast<size_t>(n));
    return Status::Ok();
}

Result<Request> ParseRequest(std::span<const std::byte> message) {
    Request r;
    if (message.size() < sizeof(RequestHeader)) {
        return Status::InvalidArgument("shared-pool request shorter than its header");
    }
    std::memcpy(&r.header, message.data(), sizeof(RequestHeader));
    const RequestHeader& h = r.header;
    if (h.magic != kMagic) return Status::InvalidArgument("shared-pool request: bad magic");
    if (h.version != kVersion) {
        return Status::InvalidArgument("shared-pool channel version " + std::to_string(h.version) +
                                       " is not supported (this node speaks " +
                                       std::to_string(kVersion) + ")");
    }
    if (h.op < static_cast<uint8_t>(Op::kHello) || h.op > static_cast<uint8_t>(Op::kRead)) {
        return Status::InvalidArgument("shared-pool request: unknown op " + std::to_string(h.op));
    }
    if (h.tier > static_cast<uint8_t>(Tier::kLocalDisk)) {
        return Status::InvalidArgument("shared-pool request: unknown tier");
    }
    if (h.key_length > kMaxKeyBytes || h.piece_count > kMaxPieces) {
        return Status::InvalidArgument("shared-pool request: key or piece list too long");
    }
    const size_t want = sizeof(RequestHeader) + h.key_length + h.piece_count * sizeof(Piece);
    if (message.size() != want) {
        return Status::InvalidArgument("shared-pool request of " + std::to_string(message.size()) +
                                       " bytes where its header says " + std::to_string(want));
    }
    const std::byte* p = message.data() + sizeof(RequestHeader);
    r.key.assign(reinterpret_cast<const char*>(p), h.key_length);
    p += h.key_length;
    r.pieces.resize(h.piece_count);
    if (h.piece_count > 0) std::memcpy(r.pieces.data(), p, h.piece_count * sizeof(Piece));
    return r;
}

Status SendAnswer(int fd, const Status& status) {
    ResponseHeader h;
    h.status = static_cast<uint16_t>(status.code());
    std::string_view message = status.ok() ? std::string_view() : status.message();
    if (message.size() > kMaxResponseBytes - sizeof(ResponseHeader)) {
        message = message.substr(0, kMaxResponseBytes - sizeof(ResponseHeader));
    }
    h.message_length = static_cast<uint32_t>(message.size());
    iovec parts[2] = {{&h, sizeof(h)}, {const_cast<char*>(message.data()), message.size()}};
    return SendMessage(fd, parts);
}

Status RecvAnswer(int fd) {
    std::vector<std::byte> buffer;
    MC_RETURN_IF_ERROR(RecvMessage(fd, buffer, kMaxResponseBytes));
    ResponseHeader h;
    if (buffer.size() < sizeof(h)) return Status::IoError("shared-pool answer too short");
    std::memcpy(&h, buffer.data(), sizeof(h));
    if (h.magic != kMagic || h.version != kVersion ||
        h.status > static_cast<uint16_t>(StatusCode::kNotLeader) ||
        buffer.size() != sizeof(h) + h.message_length) {
        return Status::IoError("malformed shared-pool answer");
    }
    if (h.status == 0) return Status::Ok();
    return Status(static_cast<StatusCode>(h.status),
                  std::string(reinterpret_cast<const char*>(buffer.data() + sizeof(h)),
                              h.message_length));
}

}  // namespace mooncake::shm
