// DataServer: the TCP side of the data channel (thrift/data_protocol.h). Serves a node's
// segment (MEMORY reads and writes) and its disk store (LOCAL_DISK reads).
//
// One thread per connection, at most `max_connections` at once (more are closed on accept).
// Bytes go straight between the socket and segment memory (no intermediate copy); a LOCAL_DISK
// read goes through one buffer the size of the object (the disk store verifies whole objects).
// A malformed header gets an error response and the connection is closed (the stream cannot
// be trusted to be in sync); a well-formed request that is refused gets an error response and
// the connection stays usable.
//
// A write with kFlagEndPut (net/data_protocol.h) ends the put at the master once its bytes are
// committed, through the MasterLink given to SetPutEndLink (the in-process store in standalone,
// the RPC link in node role), and answers with that outcome. Before a link is set such a write
// is refused (nothing is written).
//
// A standalone daemon also serves by-key requests (net/data_protocol.h kFlagByKey): given the
// in-process master (SetLocalMaster), a read or a write names a key and the server does the
// master's part itself, so a small Put or a Get is one exchange. In node role (the master is
// remote) they are refused; in a standalone still starting they wait for it.
//
// Thread-safety: Start/Stop from one thread; SetPutEndLink and SetLocalMaster from any; the
// rest is internal.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/base/knobs.h"
#include "core/base/mutex.h"
#include "core/base/status.h"
#include "core/base/types.h"
#include "core/master/put_hint.h"
#include "node/access.h"
#include "net/net.h"

namespace mooncake {

class Counter;
class Replies;
class DiskReadSink;
class DiskStore;
class Gauge;
class Histogram;
class MasterLink;
class MasterStore;
class MetricsRegistry;
class Segment;
namespace net {
class BufferedReader;
}

struct DataServerOptions {
    net::HostPort listen;
    std::string auth_token;  // empty: any Hello is accepted (see node/access.h)
    // Tenants' own tokens: a connection that says Hello with one reads and writes only the
    // keys of that tenant (core/base/tenant.h).
    std::vector<TenantToken> tenant_tokens;
    int max_connections = 512;
    std::chrono::milliseconds io_timeout{30000};    // per socket call within a request
    std::chrono::milliseconds idle_timeout{600000}; // an idle pooled connection is closed after
    // Standalone: SetLocalMaster follows Start once the node has joined the in-process master.
    // A by-key request that comes first (a client that kept its connections across a restart)
    // waits for it, up to io_timeout, instead of being told this is not a standalone daemon.
    bool local_master_follows = false;
};

class DataServer {
public:
    // `config` supplies max_value_size at request time (it is runtime-tunable). `disk` may be
    // null (no LOCAL_DISK tier). All must outlive the server.
    DataServer(DataServerOptions options, Segment& segment, DiskStore* disk,
               const Config& config, MetricsRegistry& metrics);
    ~DataServer();

    Status Start();  // binds and starts accepting
    void Stop();     // closes the listener and every connection, joins all threads
    uint16_t port() const { return port_; }
    // The master that end-put writes are ended at; it must outlive the server (or be reset to
    // null first). Null: such writes are refused.
    void SetPutEndLink(MasterLink* link) { put_end_link_.store(link); }
    // The master in this process (standalone), and this node's id in it (read per request: a
    // node that rejoins gets a new one). Called once; `store` must outlive the server.
    void SetLocalMaster(MasterStore* store, std::function<NodeId()> self);
    // Where a LOCAL_DISK object read whole for a reader is offered once sent (a promotion of it
    // waiting on this node takes the bytes; node/disk_read_sink.h). Null: nowhere. `sink`
    // must outlive the server's connection threads (Stop).
    void SetDiskReadSink(DiskReadSink* sink) { disk_read_sink_.store(sink); }

private:
    struct Conn;
    // A connection's pipelined window being read (net/pipeline.h cuts one batch into windows):
    // its by-key writes are one batched put's values in order, so the window's last may be
    // told to the store as the batch's partial tail (core/master/put_hint.h).
    struct Window {
        BatchShape writes;
        // Its by-key reads, in order: an engine's batch read of a request's prefix, which the
        // master's soft pins cover when the window ends (MasterStore::CoverPrefixWithSoftPins).
        std::vector<std::string> reads;
        bool ended = true;  // the request read last was its window's last
    };
    void AcceptLoop();
    void Serve(Conn* conn);
    // One request; false when the connection must close.
    // `in` reads the connection, `out` sends its answers (held while a pipelined batch goes on).
    bool HandleRequest(Replies& out, net::BufferedReader& in, Credentials& creds, Window& window);
    // `end_put_for`: the client whose put a kFlagEndPut write ends (nullopt: a plain write).
    bool HandleWrite(Replies& out, net::BufferedReader& in, const std::string& key,
                     uint64_t generation, uint64_t offset, uint64_t length,
                     std::optional<ClientId> end_put_for);
    bool HandleRead(Replies& out, int tier, const std::string& key, uint64_t generation,
                    uint64_t offset, uint64_t length);
    // By-key requests (kFlagByKey): `max_length` is the most bytes the reader takes.
    bool HandleReadByKey(Replies& out, const std::string& key, uint64_t max_length);
    // `partial_tail`: the last value of a batch inferred a partial tail (Window).
    bool HandleWriteByKey(Replies& out, net::BufferedReader& in, const std::string& key,
                          ClientId client, uint64_t length, bool partial_tail);
    // Sends bytes [offset, offset + length) of replica (key, generation) in `tier` as an OK
    // response (naming the tier if `name_tier`, as by-key answers do). A refusal is returned
    // with nothing sent (the caller answers it or tries another replica); otherwise Ok, and
    // *connection_ok says whether the send went through.
    Status SendReplica(Replies& out, Tier tier, const std::string& key, uint64_t generation,
                       uint64_t offset, uint64_t length, bool name_tier, bool* connection_ok);
    // Answers `why` and drains (or, when too long, refuses) the request's payload; counted in
    // data_errors_total unless `count_error` is false.
    bool RefusePayload(Replies& out, net::BufferedReader& in, const Status& why, uint64_t length,
                       bool count_error = true);

    const DataServerOptions options_;
    Segment& segment_;
    DiskStore* const disk_;
    const Config& config_;
    Counter& reads_memory_;
    Counter& reads_disk_;
    Counter& read_bytes_memory_;
    Counter& read_bytes_disk_;
    Counter& writes_;
    Counter& put_ends_;
    Counter& put_ends_refused_;
    Counter& write_bytes_;
    Counter& by_key_reads_;
    Counter& by_key_writes_;
    Counter& errors_;
    Counter& refused_connections_;
    Counter& reply_writes_;
    Histogram& read_seconds_;
    Histogram& write_seconds_;

    net::Fd listener_;
    int wake_pipe_[2] = {-1, -1};
    uint16_t port_ = 0;
    std::thread acceptor_;
    std::atomic<bool> stopping_{false};
    std::atomic<MasterLink*> put_end_link_{nullptr};
    std::atomic<DiskReadSink*> disk_read_sink_{nullptr};
    struct LocalMaster {
        MasterStore* store;
        std::function<NodeId()> self;
    };
    // The local master, or null; waits for it while the daemon starts (local_master_follows).
    const LocalMaster* AwaitLocalMaster() MC_EXCLUDES(local_master_mu_);
    std::unique_ptr<const LocalMaster> local_master_owner_;  // set once, before publishing
    std::atomic<const LocalMaster*> local_master_{nullptr};
    Mutex local_master_mu_;  // with the cv: wakes AwaitLocalMaster on set and on Stop
    CondVar local_master_set_;
    Mutex mu_;
    std::list<Conn> conns_ MC_GUARDED_BY(mu_);
    int active_ MC_GUARDED_BY(mu_) = 0;
};

}  // namespace mooncake
