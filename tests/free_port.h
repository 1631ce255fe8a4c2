// A loopback TCP port for a daemon a test is about to start.
//
// The kernel's bind(0) is not good enough under `ctest -j`: it hands out ports from the
// ephemeral range, where any outgoing connection of a parallel test may take the port between
// this check and the daemon's bind, and it may return a port it just returned (a test with
// three daemons then starts two on one port). Either way a daemon fails to start and an
// unrelated test fails. So ports come from below the ephemeral range, at random, and never
// twice in one process.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <mutex>
#include <random>
#include <set>

namespace mooncake::test {

namespace free_port_detail {

// 0: the port is bound now; else the port the kernel chose (for `port` 0) or 0 on failure.
inline uint16_t TryBind(uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return 0;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    socklen_t len = sizeof addr;
    uint16_t got = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
        got = ntohs(addr.sin_port);
    }
    ::close(fd);
    return got;
}

// The lowest port of the kernel's ephemeral range.
inline int EphemeralLow() {
    std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
    int low = 0;
    return (in >> low) ? low : 0;
}

}  // namespace free_port_detail

inline uint16_t FreePort() {
    static std::mutex mu;
    static std::set<uint16_t> issued;
    static std::mt19937 rng(static_cast<uint32_t>(
        ::getpid() ^ std::chrono::steady_clock::now().time_since_epoch().count()));
    std::lock_guard<std::mutex> lock(mu);
    constexpr int kLow = 10000;
    const int high = free_port_detail::EphemeralLow();  // exclusive
    if (high > kLow + 1000) {
        std::uniform_int_distribution<int> pick(kLow, high - 1);
        for (int attempt = 0; attempt < 1000; ++attempt) {
            const auto port = static_cast<uint16_t>(pick(rng));
            if (issued.count(port) != 0 || free_port_detail::TryBind(port) != port) continue;
            issued.insert(port);
            return port;
        }
    }
    // An odd port range (or everything taken): the kernel's choice, still never twice.
    for (int attempt = 0; attempt < 1000; ++attempt) {
        const uint16_t port = free_port_detail::TryBind(0);
        if (port != 0 && issued.insert(port).second) return port;
    }
    return 0;
}

}  // namespace mooncake::test
