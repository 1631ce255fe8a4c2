// Small blocking-socket helpers shared by the data channel's client and server and by the
// daemon: address parsing, connect with a timeout, whole-buffer send and receive.
//
// Every socket here is blocking with SO_SNDTIMEO/SO_RCVTIMEO set, so a stuck peer turns into a
// kTimeout/kIoError Status rather than a hung thread. Functions are thread-safe (no state).
#pragma once

#include <sys/uio.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace mooncake::net {

struct HostPort {
    std::string host;  // name or IPv4/IPv6 literal, without brackets
    uint16_t port = 0;
    std::string ToString() const;  // brackets an IPv6 literal
};

// "host:port", "[v6]:port". Port 0 is allowed only when `allow_zero_port`.
Result<HostPort> ParseHostPort(std::string_view text, bool allow_zero_port = false);

// True for 127.0.0.0/8, ::1 and "localhost".
bool IsLoopbackHost(std::string_view host);

// An owned file descriptor.
class Fd {
public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd() { Reset(); }
    Fd(Fd&& other) noexcept : fd_(other.Release()) {}
    Fd& operator=(Fd&& other) noexcept {
        if (this != &other) {
            Reset();
            fd_ = other.Release();
        }
        return *this;
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;

    int get() const { return fd_; }
    bool valid() const { return fd_ >= 0; }
    int Release() {
        int fd = fd_;
        fd_ = -1;
        return fd;
    }
    void Reset();

private:
    int fd_ = -1;
};

// Connects with TCP_NODELAY; `timeout` bounds the connect and then every send/recv.
// Unreachable or refused -> kUnavailable.
Result<Fd> ConnectTcp(const HostPort& address, std::chrono::milliseconds timeout);

// Binds and listens (SO_REUSEADDR). Port 0 picks a free port; BoundPort() tells which.
Result<Fd> ListenTcp(const HostPort& address, int backlog = 128);
Result<uint16_t> BoundPort(int fd);

Status SetTimeouts(int fd, std::chrono::milliseconds timeout);

// Sends every byte of every buffer (writev, retried on short writes and EINTR).
Status SendAll(int fd, std::span<const iovec> buffers);
Status SendAll(int fd, const void* data, size_t size);
// Receives exactly `size` bytes. A clean close before the first byte -> kUnavailable
// ("peer closed"); mid-buffer -> kIoError; a timeout -> kTimeout.
Status RecvAll(int fd, void* data, size_t size);
// The same into every byte of every buffer in order (readv: scattered destinations, no copy).
Status RecvAll(int fd, std::span<const iovec> buffers);
// Reads and drops `size` bytes (to resynchronise after refusing a payload).
Status Discard(int fd, uint64_t size);
// The Status for a socket call `what` that failed with errno: a timeout -> kTimeout, a reset
// or broken connection -> kUnavailable, else kIoError.
Status IoFailure(std::string_view what);

}  // namespace mooncake::net
