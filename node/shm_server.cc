#include "node/shm_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "core/base/metrics.h"
#include "core/disk/device.h"
#include "core/disk/disk_store.h"
#include "node/access.h"
#include "node/disk_read_sink.h"
#include "node/segment.h"
#include "spdlog/spdlog.h"

namespace mooncake {

// One mapping of a client's pool, unmapped when the last request using it is done and its
// connection has closed (the shared_ptr's end).
struct ShmServer::Pool {
    std::byte* base = nullptr;
    uint64_t length = 0;
    pid_t owner = 0;
    Gauge* mapped = nullptr;
    Gauge* mapped_bytes = nullptr;
    ~Pool() {
        ::munmap(base, length);
        mapped->Dec();
        mapped_bytes->Dec(static_cast<double>(length));
        spdlog::info("shared pool of {} from pid {} unmapped (its connection closed: the "
                     "buffer was unregistered, the store closed, or the process ended)",
                     FormatSize(length), owner);
    }
};

struct ShmServer::Conn {
    net::Fd fd;
    std::thread thread;
    std::atomic<bool> done{false};
};

ShmServer::ShmServer(ShmServerOptions options, Segment& segment, DiskStore* disk,
                     const Config& config, MetricsRegistry& metrics)
    : options_(std::move(options)),
      segment_(segment),
      disk_(disk),
      config_(config),
      writes_(metrics.GetCounter("shm_requests_total",
                                 "shared-pool requests served (bytes copied from or to an "
                                 "engine's mapped pool), by op",
                                 {{"op", "write"}})),
      reads_(metrics.GetCounter("shm_requests_total",
                                "shared-pool requests served (bytes copied from or to an "
                                "engine's mapped pool), by op",
                                {{"op", "read"}})),
      write_bytes_(metrics.GetCounter("shm_bytes_total", "bytes copied through shared pools, by op",
                                      {{"op", "write"}})),
      read_bytes_(metrics.GetCounter("shm_bytes_total", "bytes copied through shared pools, by op",
                                     {{"op", "read"}})),
      refused_(metrics.GetCounter("shm_refused_total",
                                  "shared-pool requests or pools refused (bad range, unsealed "
                                  "pool, no such pool, stale range, wrong token)")),
      pools_mapped_total_(metrics.GetCounter("shm_pools_mapped_total",
                                             "engine pools mapped by this node since start")),
      pools_mapped_(metrics.GetGauge("shm_pools_mapped", "engine pool mappings held now")),
      pool_bytes_mapped_(
          metrics.GetGauge("shm_pool_bytes_mapped", "bytes of engine pools mapped now")) {}

ShmServer::~ShmServer() { Stop(); }

Status ShmServer::Start() {
    auto fd = shm::Listen(options_.data_port);
    if (!fd.ok()) return fd.status();
    listener_ = std::move(*fd);
    if (::pipe2(wake_pipe_, O_CLOEXEC) != 0) return Status::IoError("pipe2 failed");
    acceptor_ = std::thread([this] { AcceptLoop(); });
    spdlog::info("shared-pool channel on @{} (engines on this host hand their host pools here)",
                 shm::SocketName(options_.data_port));
    return Status::Ok();
}

void ShmServer::Stop() {
    if (stopping_.exchange(true)) return;
    if (acceptor_.joinable()) {
        char b = 1;
        (void)!::write(wake_pipe_[1], &b, 1);
        acceptor_.join();
    }
    std::list<Conn> conns;  // joined outside mu_, which a connection's thread takes as it ends
    {
        MutexLock lock(mu_);
        for (Conn& c : conns_) ::shutdown(c.fd.get(), SHUT_RDWR);
        conns.splice(conns.end(), conns_);
    }
    for (Conn& c : conns) {
        if (c.thread.joinable()) c.thread.join();
    }
    listener_.Reset();
    for (int& fd : wake_pipe_) {
        if (fd >= 0) ::close(fd);
        fd = -1;
    }
}

void ShmServer::AcceptLoop() {
    while (!stopping_.load()) {
        pollfd pfds[2] = {{listener_.get(), POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
        int rc = ::poll(pfds, 2, 1000);
        {
            MutexLock lock(mu_);
            for (auto it = conns_.begin(); it != conns_.end();) {
                if (it->done.load()) {
                    it->thread.join();
                    it = conns_.erase(it);
                } else {
                    ++it;
                }
            }
        }
        if (rc <= 0 || (pfds[1].revents & POLLIN) || !(pfds[0].revents & POLLIN)) continue;
        net::Fd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (!fd.valid()) continue;
        MutexLock lock(mu_);
        if (active_ >= options_.max_connections) {
            refused_.Inc();
            spdlog::warn("shared-pool channel: {} connections already; one refused",
                         options_.max_connections);
            continue;
        }
        ++active_;
        Conn& conn = conns_.emplace_back();
        conn.fd = std::move(fd);
        conn.thread = std::thread([this, &conn] { Serve(&conn); });
    }
}

void ShmServer::Serve(Conn* conn) {
    const int fd = conn->fd.get();
    ucred cred{};
    socklen_t len = sizeof(cred);
    pid_t peer = ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 ? cred.pid : 0;
    std::vector<std::byte> buffer;
    Credentials creds;
    {
        Pools pools;  // dropped (and unmapped when last held) as the connection ends
        while (!stopping_.load() && Handle(fd, peer, buffer, creds, pools)) {
        }
    }
    ::shutdown(fd, SHUT_RDWR);
    MutexLock lock(mu_);
    --active_;
    conn->done.store(true);
}

bool ShmServer::Handle(int fd, pid_t peer, std::vector<std::byte>& buffer, Credentials& creds,
                       Pools& pools) {
    net::Fd memfd;
    Status st = shm::RecvMessage(fd, buffer, shm::kMaxRequestBytes, &memfd);
    if (st.Is(StatusCode::kUnavailable)) return false;  // the client closed
    if (st.Is(StatusCode::kTimeout)) return true;        // idle: wait on (Stop shuts it down)
    if (!st.ok()) {
        refused_.Inc();
        (void)shm::SendAnswer(fd, st);
        return false;
    }
    auto request = shm::ParseRequest(buffer);
    if (!request.ok()) {
        refused_.Inc();
        spdlog::warn("shared-pool channel: malformed request from pid {}: {}", peer,
                     request.status().message());
        (void)shm::SendAnswer(fd, request.status());
        return false;
    }
    const auto op = static_cast<shm::Op>(request->header.op);
    if (op == shm::Op::kHello) {
        auto accepted = Authenticate(options_.auth_token, request->key);
        if (!accepted.ok()) {
            refused_.Inc();
            (void)shm::SendAnswer(fd, accepted.status());
            return false;
        }
        creds = *accepted;
        return shm::SendAnswer(fd, Status::Ok()).ok();
    }
    if (!creds.greeted) {
        refused_.Inc();
        (void)shm::SendAnswer(fd, Status::IllegalClient("the first shared-pool request must be "
                                                        "hello"));
        return false;
    }
    Status answer;
    switch (op) {
        case shm::Op::kAddPool:
            // Handing a pool is the start of writing: the data channel's write permission.
            answer = CheckAccess(DataOpPermissions(), "write", creds);
            if (answer.ok()) {
                answer = AddPool(peer, request->header.pool, request->header.length,
                                 std::move(memfd), pools);
            }
            break;
        case shm::Op::kWrite:
            answer = CheckAccess(DataOpPermissions(), "write", creds);
            if (answer.ok()) answer = Write(*request, pools);
            break;
        case shm::Op::kRead:
            answer = CheckAccess(DataOpPermissions(), "read", creds);
            if (answer.ok()) answer = Read(*request, pools);
            break;
        case shm::Op::kHello: break;
    }
    if (!answer.ok()) refused_.Inc();
    return shm::SendAnswer(fd, answer).ok();
}

Status ShmServer::AddPool(pid_t peer, uint64_t id, uint64_t length, net::Fd memfd,
                          Pools& pools) {
    if (!memfd.valid()) return Status::InvalidArgument("add-pool carried no descriptor");
    if (pools.count(id) != 0) {
        return Status::AlreadyExists("pool " + std::to_string(id) + " is already mapped here");
    }
    // Sealed against shrinking, or the client could cut the file under our mapping and turn
    // our next copy into a SIGBUS.
    int seals = ::fcntl(memfd.get(), F_GET_SEALS);
    if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
        return Status::InvalidArgument("a shared pool must be a memfd sealed with F_SEAL_SHRINK "
                                       "(MooncakeHostMemAllocator's are)");
    }
    struct stat st {};
    if (::fstat(memfd.get(), &st) != 0 || static_cast<uint64_t>(st.st_size) < length ||
        length == 0) {
        return Status::InvalidArgument("pool of " + std::to_string(length) +
                                       " bytes is not inside its memfd");
    }
    MutexLock lock(mappings_mu_);
    std::erase_if(mappings_, [](const auto& m) { return m.second.expired(); });
    const std::pair<uint64_t, uint64_t> file{st.st_dev, st.st_ino};
    if (auto held = mappings_[file].lock(); held != nullptr && held->length >= length) {
        pools[id] = std::move(held);
        return Status::Ok();
    }
    // Populated now, once: a copy into a fresh mapping would otherwise take a page fault per
    // 4 KiB, which costs more than the copy itself. The pool is the engine's memory, allocated
    // to be filled, so this commits nothing it did not mean to use.
    void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                     memfd.get(), 0);
    if (p == MAP_FAILED) {
        return Status::IoError(std::string("mmap of a shared pool: ") + std::strerror(errno));
    }
    auto pool = std::make_shared<Pool>();
    pool->base = static_cast<std::byte*>(p);
    pool->length = length;
    pool->owner = peer;
    pool->mapped = &pools_mapped_;
    pool->mapped_bytes = &pool_bytes_mapped_;
    pools_mapped_.Inc();
    pool_bytes_mapped_.Inc(static_cast<double>(length));
    pools_mapped_total_.Inc();
    mappings_[file] = pool;
    pools[id] = std::move(pool);
    spdlog::info("shared pool of {} from pid {} mapped", FormatSize(length), peer);
    return Status::Ok();
}

Status ShmServer::Resolve(const std::vector<shm::Piece>& pieces, uint64_t length,
                          const Pools& pools, std::vector<std::span<std::byte>>& out) const {
    out.clear();
    uint64_t total = 0;
    for (const shm::Piece& piece : pieces) {
        auto it = pools.find(piece.pool);
        if (it == pools.end()) {
            return Status::InvalidArgument("no pool " + std::to_string(piece.pool) +
                                           " was handed on this connection");
        }
        const Pool& pool = *it->second;
        if (piece.length == 0 || piece.offset > pool.length ||
            piece.length > pool.length - piece.offset) {
            return Status::InvalidArgument(
                std::to_string(piece.length) + " bytes at offset " +
                std::to_string(piece.offset) + " are outside the pool of " +
                std::to_string(pool.length) + " bytes");
        }
        total += piece.length;  // no overflow: each is under a pool's size, at most kMaxPieces
        out.emplace_back(pool.base + piece.offset, piece.length);
    }
    if (total != length) {
        return Status::InvalidArgument("pieces of " + std::to_string(total) + " bytes for a " +
                                       std::to_string(length) + "-byte transfer");
    }
    return Status::Ok();
}

Status ShmServer::Write(const shm::Request& r, const Pools& pools) {
    MC_RETURN_IF_ERROR(ValidateKey(r.key));
    const uint64_t length = r.header.length;
    const uint64_t max = config_.max_value_size();
    if (length == 0 || length > max) {
        return Status::InvalidArgument("a write of " + std::to_string(length) +
                                       " bytes is outside 1..max_value_size (" +
                                       FormatSize(max) + ")");
    }
    std::vector<std::span<std::byte>> from;
    MC_RETURN_IF_ERROR(Resolve(r.pieces, length, pools, from));
    auto lease = segment_.BeginWrite(r.key, r.header.generation, r.header.offset, length);
    if (!lease.ok()) return lease.status();
    std::byte* to = lease->data();
    for (std::span<std::byte> piece : from) {
        std::memcpy(to, piece.data(), piece.size());
        to += piece.size();
    }
    lease->Commit();
    writes_.Inc();
    write_bytes_.Inc(static_cast<double>(length));
    return Status::Ok();
}

Status ShmServer::Read(const shm::Request& r, const Pools& pools) {
    MC_RETURN_IF_ERROR(ValidateKey(r.key));
    const uint64_t length = r.header.length;
    if (length == 0) return Status::InvalidArgument("empty read");
    std::vector<std::span<std::byte>> to;
    MC_RETURN_IF_ERROR(Resolve(r.pieces, length, pools, to));
    auto scatter = [&](const std::byte* from) {
        for (std::span<std::byte> piece : to) {
            std::memcpy(piece.data(), from, piece.size());
            from += piece.size();
        }
    };
    if (static_cast<Tier>(r.header.tier) == Tier::kMemory) {
        auto lease = segment_.BeginRead(r.key, r.header.generation, r.header.offset, length);
        if (!lease.ok()) return lease.status();
        scatter(lease->data());
    } else {
        // As the data channel reads a LOCAL_DISK replica: the disk store verifies whole objects.
        if (disk_ == nullptr) return Status::NotFound("this node has no LOCAL_DISK tier");
        auto size = disk_->SizeOf(r.key, r.header.generation);
        if (!size.ok()) return size.status();
        if (r.header.offset > *size || length > *size - r.header.offset) {
            return Status::InvalidArgument("read past the end of " + QuoteKey(r.key) + " (" +
                                           std::to_string(*size) + " bytes)");
        }
        AlignedBuffer buffer(AlignUp(*size));
        MC_RETURN_IF_ERROR(disk_->Read(r.key, r.header.generation, buffer.span().first(*size),
                                       IoPriority::kForeground));
        scatter(buffer.data() + r.header.offset);
        if (DiskReadSink* sink = disk_read_sink_.load()) {
            sink->TakeDiskRead(r.key, r.header.generation, buffer, *size);
        }
    }
    reads_.Inc();
    read_bytes_.Inc(static_cast<double>(length));
    return Status::Ok();
}

}  // namespace mooncake
