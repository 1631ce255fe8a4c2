// ShmServer: the node's side of the shared-pool channel (net/shm_channel.h). An engine process
// on this host hands the node its host KV pool (a sealed memfd); the node maps it and copies
// object bytes between its segment (or disk) and the pool, so put_from / get_into of pool
// memory move no byte over a socket.
//
// Safety rules, each enforced here and not by the client:
//  - a pool is usable on a connection only once that connection handed its descriptor;
//    requests name only that connection's pools, so one client cannot reach another's pool
//    (connections that hand the same memfd share one mapping: each holds the file already);
//  - the memfd must be sealed against shrinking (F_SEAL_SHRINK): a pool the client could cut
//    short under the mapping would fault the daemon (SIGBUS) instead of failing a request;
//  - every piece (pool offset, length) is checked against the pool's size before a byte moves;
//  - a closed connection (unregister, close, or the engine process dying) drops its mappings;
//    a pool is unmapped when no connection holds it. Mapped pools and their bytes are gauges,
//    and each map and unmap is logged with the client's pid.
// Writes take the segment's write lease exactly as data-channel writes do; the writer ends
// the put at the master itself.
//
// Thread-safety: Start/Stop from one thread; one thread per connection inside.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <map>
#include <utility>
#include <memory>
#include <string>
#include <thread>

#include "core/base/knobs.h"
#include "core/base/mutex.h"
#include "core/base/status.h"
#include "net/net.h"
#include "net/shm_channel.h"

namespace mooncake {

class Counter;
class DiskReadSink;
class DiskStore;
class Gauge;
class MetricsRegistry;
class Segment;
struct Credentials;

struct ShmServerOptions {
    uint16_t data_port = 0;  // names the socket (net/shm_channel.h SocketName)
    std::string auth_token;  // as the data channel's: empty accepts any Hello
    int max_connections = 256;
    std::chrono::milliseconds io_timeout{30000};
};

class ShmServer {
public:
    ShmServer(ShmServerOptions options, Segment& segment, DiskStore* disk, const Config& config,
              MetricsRegistry& metrics);
    ~ShmServer();

    Status Start();
    void Stop();
    // As DataServer::SetDiskReadSink: a LOCAL_DISK object read whole is offered there.
    void SetDiskReadSink(DiskReadSink* sink) { disk_read_sink_.store(sink); }

private:
    struct Pool;
    struct Conn;
    using Pools = std::map<uint64_t, std::shared_ptr<Pool>>;  // this connection's, by id

    void AcceptLoop();
    void Serve(Conn* conn);
    // One request; false when the connection must close.
    bool Handle(int fd, pid_t peer, std::vector<std::byte>& buffer, Credentials& creds,
                Pools& pools);
    Status AddPool(pid_t peer, uint64_t id, uint64_t length, net::Fd memfd, Pools& pools);
    // The pool bytes each piece names, checked against its pool's size; kInvalidArgument
    // naming the first that is not inside one of `pools`, or when they do not add up to
    // `length`.
    Status Resolve(const std::vector<shm::Piece>& pieces, uint64_t length, const Pools& pools,
                   std::vector<std::span<std::byte>>& out) const;
    Status Write(const shm::Request& r, const Pools& pools);
    Status Read(const shm::Request& r, const Pools& pools);

    const ShmServerOptions options_;
    Segment& segment_;
    DiskStore* const disk_;
    const Config& config_;
    Counter& writes_;
    Counter& reads_;
    Counter& write_bytes_;
    Counter& read_bytes_;
    Counter& refused_;
    Counter& pools_mapped_total_;
    Gauge& pools_mapped_;
    Gauge& pool_bytes_mapped_;

    net::Fd listener_;
    int wake_pipe_[2] = {-1, -1};
    std::thread acceptor_;
    std::atomic<bool> stopping_{false};
    std::atomic<DiskReadSink*> disk_read_sink_{nullptr};
    // Every mapping by the memfd's (device, inode): a client's connections that hand the same
    // pool share one mapping (one set of page tables to fill), unmapped with the last of them.
    Mutex mappings_mu_;
    std::map<std::pair<uint64_t, uint64_t>, std::weak_ptr<Pool>> mappings_
        MC_GUARDED_BY(mappings_mu_);
    Mutex mu_;
    std::list<Conn> conns_ MC_GUARDED_BY(mu_);
    int active_ MC_GUARDED_BY(mu_) = 0;
};

}  // namespace mooncake
