#include "python/src/shared_pool_transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cstring>

#include "net/shm_channel.h"
#include "spdlog/spdlog.h"

namespace mooncake {
namespace {

constexpr auto kChannelTimeout = std::chrono::milliseconds(30000);
constexpr size_t kMaxIdlePerChannel = 64;  // one per batch worker and caller thread

bool SameAddress(const sockaddr* a, const sockaddr* b) {
    if (a == nullptr || b == nullptr || a->sa_family != b->sa_family) return false;
    if (a->sa_family == AF_INET) {
        return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr ==
               reinterpret_cast<const sockaddr_in*>(b)->sin_addr.s_addr;
    }
    if (a->sa_family == AF_INET6) {
        return std::memcmp(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr,
                           &reinterpret_cast<const sockaddr_in6*>(b)->sin6_addr,
                           sizeof(in6_addr)) == 0;
    }
    return false;
}

bool IsLoopback(const sockaddr* a) {
    if (a->sa_family == AF_INET) {
        return (ntohl(reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr) >> 24) == 127;
    }
    if (a->sa_family == AF_INET6) {
        return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr);
    }
    return false;
}

Mutex& LiveMu() {
    static Mutex mu;
    return mu;
}
std::set<SharedPoolTransport*>& Live() MC_REQUIRES(LiveMu()) {
    static auto* live = new std::set<SharedPoolTransport*>;
    return *live;
}

}  // namespace

bool IsLocalHost(const std::string& host) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return false;
    ifaddrs* ifs = nullptr;
    if (::getifaddrs(&ifs) != 0) ifs = nullptr;
    bool local = false;
    for (addrinfo* a = found; a != nullptr && !local; a = a->ai_next) {
        local = IsLoopback(a->ai_addr);
        for (ifaddrs* i = ifs; i != nullptr && !local; i = i->ifa_next) {
            local = SameAddress(a->ai_addr, i->ifa_addr);
        }
    }
    if (ifs != nullptr) ::freeifaddrs(ifs);
    ::freeaddrinfo(found);
    return local;
}

struct SharedPoolTransport::Transfer {
    shm::Op op = shm::Op::kWrite;
    Tier tier = Tier::kMemory;
    std::string_view key;
    Generation generation = 0;
    uint64_t offset = 0;
    uint64_t length = 0;
    std::vector<shm::Piece> pieces;
    std::map<uint64_t, Pool> pools;  // by id: the pools the pieces name
};

SharedPoolTransport::SharedPoolTransport(std::unique_ptr<DataTransport> tcp,
                                         std::string auth_token, bool by_key)
    : tcp_(std::move(tcp)), auth_token_(std::move(auth_token)), by_key_(by_key) {
    MutexLock lock(LiveMu());
    Live().insert(this);
}

SharedPoolTransport::~SharedPoolTransport() {
    MutexLock lock(LiveMu());
    Live().erase(this);
}

void ForgetSharedPool(uintptr_t base) {
    MutexLock lock(LiveMu());
    for (SharedPoolTransport* t : Live()) t->DropPool(base);
}

void SharedPoolTransport::AddPool(uintptr_t base, uint64_t length, int fd) {
    auto dup = std::make_shared<net::Fd>(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
    if (!dup->valid()) {
        spdlog::error("shared pool at {:#x}: cannot keep its descriptor ({}); its transfers go "
                      "over TCP", base, std::strerror(errno));
        return;
    }
    Pool pool{0, length, std::move(dup)};
    {
        MutexLock lock(mu_);
        if (pools_.count(base) != 0) return;
        pool.id = next_pool_id_++;
        pools_[base] = pool;
    }
    // Handed at once to the nodes already reached, so the node maps it before the first
    // transfer (and an operator sees it in the daemon's maps as soon as it is registered).
    Offer(pool.id, pool);
}

void SharedPoolTransport::DropPool(uintptr_t base) {
    std::vector<Conn> closing;  // closed outside the lock
    {
        MutexLock lock(mu_);
        auto it = pools_.find(base);
        if (it == pools_.end()) return;
        const uint64_t id = it->second.id;
        pools_.erase(it);
        for (auto& [address, channel] : channels_) {
            auto& idle = channel.idle;
            for (auto c = idle.begin(); c != idle.end();) {
                if (c->pools.count(id) != 0) {
                    closing.push_back(std::move(*c));
                    c = idle.erase(c);
                } else {
                    ++c;
                }
            }
        }
    }
    if (!closing.empty()) {
        spdlog::info("shared pool at {:#x} dropped: {} connection(s) that handed it closed, the "
                     "node unmaps it", base, closing.size());
    }
}

uint64_t SharedPoolTransport::shm_transfers() const { return shm_transfers_.load(); }

SharedPoolTransport::Channel& SharedPoolTransport::ChannelLocked(const std::string& address) {
    auto it = channels_.find(address);
    if (it != channels_.end()) return it->second;
    Channel& c = channels_[address];
    auto hp = net::ParseHostPort(address);
    if (!hp.ok()) {
        spdlog::warn("shared pools: node data address '{}' unreadable ({}): its transfers go "
                     "over TCP", address, hp.status().message());
    } else if (!IsLocalHost(hp->host)) {
        spdlog::warn("shared pools: node {} runs on another host, so it cannot map this "
                     "process's pools: its transfers go over TCP", address);
    } else {
        c.port = hp->port;
        c.usable = true;  // until a connection says otherwise
    }
    return c;
}

Result<SharedPoolTransport::Conn> SharedPoolTransport::Open(uint16_t port) {
    auto fd = shm::Connect(port, kChannelTimeout);
    if (!fd.ok()) return fd.status();
    shm::RequestHeader h;
    h.op = static_cast<uint8_t>(shm::Op::kHello);
    h.key_length = static_cast<uint32_t>(auth_token_.size());
    iovec parts[2] = {{&h, sizeof(h)},
                      {const_cast<char*>(auth_token_.data()), auth_token_.size()}};
    MC_RETURN_IF_ERROR(shm::SendMessage(fd->get(), parts));
    MC_RETURN_IF_ERROR(shm::RecvAnswer(fd->get()));
    return Conn{std::move(*fd), {}};
}

bool SharedPoolTransport::IsNear(std::string_view address) {
    const std::string a(address);
    {
        MutexLock lock(mu_);
        if (auto it = channels_.find(a); it != channels_.end()) return it->second.usable;
        if (auto it = near_.find(a); it != near_.end()) return it->second;
    }
    // Asked for every copy a reader is handed: looked up once, outside the lock, unlogged.
    auto hp = net::ParseHostPort(a);
    if (!hp.ok()) return false;  // not cached: such an address is not worth remembering
    const bool near = IsLocalHost(hp->host);
    MutexLock lock(mu_);
    near_.emplace(a, near);
    return near;
}

bool SharedPoolTransport::Reaches(const std::string& address) {
    uint16_t port = 0;
    {
        MutexLock lock(mu_);
        Channel& c = ChannelLocked(address);
        if (!c.usable) return false;
        if (!c.idle.empty()) return true;
        port = c.port;
    }
    auto conn = Open(port);
    MutexLock lock(mu_);
    Channel& c = ChannelLocked(address);
    if (!conn.ok()) {
        if (c.usable) {
            spdlog::warn("shared pools: node {} is on this host but its channel does not "
                         "answer ({}): its transfers go over TCP", address,
                         conn.status().message());
        }
        c.usable = false;
        return false;
    }
    c.idle.push_back(std::move(*conn));
    return true;
}

bool SharedPoolTransport::ToPoolPieces(const std::vector<std::pair<uintptr_t, uint64_t>>& spans,
                                       Transfer& out) {
    if (spans.empty() || spans.size() > shm::kMaxPieces) return false;
    MutexLock lock(mu_);
    if (pools_.empty()) return false;
    for (const auto& [at, length] : spans) {
        auto it = pools_.upper_bound(at);
        if (it == pools_.begin()) return false;
        --it;
        const uint64_t offset = at - it->first;
        if (offset >= it->second.length || length > it->second.length - offset) return false;
        out.pieces.push_back({it->second.id, offset, length});
        out.pools.emplace(it->second.id, it->second);
    }
    return true;
}

std::optional<SharedPoolTransport::Conn> SharedPoolTransport::Acquire(
    const std::string& address) {
    uint16_t port = 0;
    {
        MutexLock lock(mu_);
        Channel& c = ChannelLocked(address);
        if (!c.usable) return std::nullopt;
        port = c.port;
        if (!c.idle.empty()) {
            Conn conn = std::move(c.idle.back());
            c.idle.pop_back();
            return conn;
        }
    }
    auto opened = Open(port);
    if (opened.ok()) return std::move(*opened);
    MutexLock lock(mu_);
    Channel& c = ChannelLocked(address);
    if (c.usable) {
        spdlog::warn("shared pools: node {} is on this host but its channel does not answer "
                     "({}): its transfers go over TCP", address, opened.status().message());
    }
    c.usable = false;
    return std::nullopt;
}

void SharedPoolTransport::Release(const std::string& address, Conn conn) {
    MutexLock lock(mu_);
    // Back to the idle list unless a pool it holds was dropped meanwhile (closing it is how
    // the node learns to unmap that pool).
    for (uint64_t id : conn.pools) {
        bool live = false;
        for (const auto& [base, pool] : pools_) live = live || pool.id == id;
        if (!live) return;
    }
    Channel& c = ChannelLocked(address);
    if (c.idle.size() < kMaxIdlePerChannel) c.idle.push_back(std::move(conn));
}

Status SharedPoolTransport::Hand(const std::string& address, Conn& conn, uint64_t id,
                                 const Pool& pool) {
    if (conn.pools.count(id) != 0) return Status::Ok();
    shm::RequestHeader h;
    h.op = static_cast<uint8_t>(shm::Op::kAddPool);
    h.pool = id;
    h.length = pool.length;
    iovec part{&h, sizeof(h)};
    Status st = shm::SendMessage(conn.fd.get(), std::span(&part, 1), pool.fd->get());
    if (st.ok()) st = shm::RecvAnswer(conn.fd.get());
    if (!st.ok()) {
        spdlog::warn("shared pools: node {} did not take a pool of {} bytes ({}): transfers "
                     "with it go over TCP", address, pool.length, st.message());
        return st;
    }
    conn.pools.insert(id);
    return Status::Ok();
}

void SharedPoolTransport::Offer(uint64_t id, const Pool& pool) {
    std::vector<std::string> usable;
    {
        MutexLock lock(mu_);
        for (const auto& [address, channel] : channels_) {
            if (channel.usable) usable.push_back(address);
        }
    }
    for (const std::string& address : usable) {
        std::optional<Conn> conn = Acquire(address);
        if (!conn) continue;
        if (Hand(address, *conn, id, pool).ok()) Release(address, std::move(*conn));
    }
}

std::optional<Status> SharedPoolTransport::Run(std::string_view address_view,
                                               const Transfer& t) {
    const std::string address(address_view);
    std::optional<Conn> conn = Acquire(address);
    if (!conn) return std::nullopt;
    // Hand the pools this connection has not seen. A node that refuses one (an unsealed
    // memfd) this transfer goes over TCP; the connection is dropped (it may be out of step).
    for (const auto& [id, pool] : t.pools) {
        if (!Hand(address, *conn, id, pool).ok()) return std::nullopt;
    }
    const int fd = conn->fd.get();
    shm::RequestHeader h;
    h.op = static_cast<uint8_t>(t.op);
    h.tier = static_cast<uint8_t>(t.tier);
    h.key_length = static_cast<uint32_t>(t.key.size());
    h.piece_count = static_cast<uint32_t>(t.pieces.size());
    h.generation = t.generation;
    h.offset = t.offset;
    h.length = t.length;
    iovec parts[3] = {{&h, sizeof(h)},
                      {const_cast<char*>(t.key.data()), t.key.size()},
                      {const_cast<shm::Piece*>(t.pieces.data()),
                       t.pieces.size() * sizeof(shm::Piece)}};
    // The node closed or restarted: nothing was asked of it; TCP asks the node again.
    if (!shm::SendMessage(fd, parts).ok()) return std::nullopt;
    Status st = shm::RecvAnswer(fd);
    if (st.Is(StatusCode::kIoError) || st.Is(StatusCode::kTimeout) ||
        (st.Is(StatusCode::kUnavailable) && st.message().find("peer closed") != std::string::npos)) {
        // Lost mid-request: the connection is out of step and dropped. Reads and writes of a
        // (key, generation) range are idempotent, so the TCP path may do it again.
        return std::nullopt;
    }
    shm_transfers_.fetch_add(1);
    Release(address, std::move(*conn));
    return st;
}

std::optional<Status> SharedPoolTransport::TryWrite(std::string_view address,
                                                    std::string_view key, Generation generation,
                                                    uint64_t offset, ConstPieces data) {
    std::vector<std::pair<uintptr_t, uint64_t>> spans;
    for (const auto& p : data) spans.emplace_back(reinterpret_cast<uintptr_t>(p.data()), p.size());
    Transfer t;
    if (!ToPoolPieces(spans, t)) return std::nullopt;
    t.op = shm::Op::kWrite;
    t.key = key;
    t.generation = generation;
    t.offset = offset;
    t.length = PiecesSize(data);
    return Run(address, t);
}

std::optional<Status> SharedPoolTransport::TryRead(std::string_view address, Tier tier,
                                                   std::string_view key, Generation generation,
                                                   uint64_t offset, MutablePieces out) {
    std::vector<std::pair<uintptr_t, uint64_t>> spans;
    for (const auto& p : out) spans.emplace_back(reinterpret_cast<uintptr_t>(p.data()), p.size());
    Transfer t;
    if (!ToPoolPieces(spans, t)) return std::nullopt;
    t.op = shm::Op::kRead;
    t.tier = tier;
    t.key = key;
    t.generation = generation;
    t.offset = offset;
    t.length = PiecesSize(out);
    return Run(address, t);
}

Status SharedPoolTransport::WriteMemory(std::string_view address, std::string_view key,
                                        Generation generation, uint64_t offset,
                                        std::span<const std::byte> data) {
    return WriteMemoryPieces(address, key, generation, offset, ConstPieces(&data, 1));
}

Status SharedPoolTransport::WriteMemoryPieces(std::string_view address, std::string_view key,
                                              Generation generation, uint64_t offset,
                                              ConstPieces data) {
    if (auto st = TryWrite(address, key, generation, offset, data)) return *st;
    return tcp_->WriteMemoryPieces(address, key, generation, offset, data);
}

Status SharedPoolTransport::WriteMemoryEndingPut(std::string_view address, std::string_view key,
                                                 Generation generation, uint64_t offset,
                                                 std::span<const std::byte> data,
                                                 ClientId client, bool* ended) {
    return WriteMemoryPiecesEndingPut(address, key, generation, offset, ConstPieces(&data, 1),
                                      client, ended);
}

Status SharedPoolTransport::WriteMemoryPiecesEndingPut(std::string_view address,
                                                       std::string_view key,
                                                       Generation generation, uint64_t offset,
                                                       ConstPieces data, ClientId client,
                                                       bool* ended) {
    if (auto st = TryWrite(address, key, generation, offset, data)) {
        *ended = false;  // the channel writes only: the client ends the put
        return *st;
    }
    return tcp_->WriteMemoryPiecesEndingPut(address, key, generation, offset, data, client, ended);
}

Status SharedPoolTransport::Read(std::string_view address, Tier tier, std::string_view key,
                                 Generation generation, uint64_t offset,
                                 std::span<std::byte> out) {
    return ReadPieces(address, tier, key, generation, offset, MutablePieces(&out, 1));
}

Status SharedPoolTransport::ReadPieces(std::string_view address, Tier tier, std::string_view key,
                                       Generation generation, uint64_t offset,
                                       MutablePieces out) {
    if (auto st = TryRead(address, tier, key, generation, offset, out)) return *st;
    return tcp_->ReadPieces(address, tier, key, generation, offset, out);
}

Status SharedPoolTransport::WriteMemoryFrom(std::string_view address, std::string_view key,
                                            Generation generation, uint64_t offset,
                                            uint64_t length, ByteSource& source) {
    return tcp_->WriteMemoryFrom(address, key, generation, offset, length, source);
}

Status SharedPoolTransport::WriteMemoryFromEndingPut(std::string_view address,
                                                     std::string_view key, Generation generation,
                                                     uint64_t offset, uint64_t length,
                                                     ByteSource& source, ClientId client,
                                                     bool* ended) {
    return tcp_->WriteMemoryFromEndingPut(address, key, generation, offset, length, source,
                                          client, ended);
}

Status SharedPoolTransport::ReadTo(std::string_view address, Tier tier, std::string_view key,
                                   Generation generation, uint64_t offset, uint64_t length,
                                   ByteSink& sink) {
    return tcp_->ReadTo(address, tier, key, generation, offset, length, sink);
}

Result<uint64_t> SharedPoolTransport::ReadByKey(
    std::string_view address, std::string_view key, uint64_t max_size,
    const std::function<std::span<std::byte>(uint64_t size)>& buffer_for, Tier* served_from) {
    return tcp_->ReadByKey(address, key, max_size, buffer_for, served_from);
}

Result<uint64_t> SharedPoolTransport::ReadByKeyInto(std::string_view address,
                                                    std::string_view key,
                                                    std::span<std::byte> out, Tier* served_from) {
    return tcp_->ReadByKeyInto(address, key, out, served_from);
}

Status SharedPoolTransport::PutByKey(std::string_view address, std::string_view key,
                                     ClientId client, std::span<const std::byte> value,
                                     bool* sent) {
    return tcp_->PutByKey(address, key, client, value, sent);
}

Status SharedPoolTransport::PutPiecesByKey(std::string_view address, std::string_view key,
                                           ClientId client, ConstPieces value, bool* sent) {
    return tcp_->PutPiecesByKey(address, key, client, value, sent);
}

Result<uint64_t> SharedPoolTransport::ReadByKeyIntoPieces(std::string_view address,
                                                          std::string_view key,
                                                          MutablePieces out, Tier* served_from) {
    return tcp_->ReadByKeyIntoPieces(address, key, out, served_from);
}

}  // namespace mooncake
