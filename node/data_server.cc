#include "node/data_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>

#include "core/disk/disk_store.h"
#include "core/base/master_link.h"
#include "core/master/master_store.h"
#include "core/base/metrics.h"
#include "node/access.h"
#include "node/disk_read_sink.h"
#include "node/fault_injection.h"
#include "node/replies.h"
#include "node/segment.h"
#include "spdlog/spdlog.h"
#include "net/buffered_reader.h"
#include "net/data_protocol.h"
#include "net/read_rounds.h"

namespace mooncake {
namespace {

using WallTimer = std::chrono::steady_clock;

// A refused write's payload is read and dropped (keeping the connection) up to this size;
// beyond it the connection is closed instead of reading gigabytes for nothing.
constexpr uint64_t kDiscardLimit = 16ull << 20;

double SecondsSince(WallTimer::time_point start) {
    return std::chrono::duration<double>(WallTimer::now() - start).count();
}

}  // namespace

struct DataServer::Conn {
    net::Fd fd;
    std::thread thread;
    std::atomic<bool> done{false};
};

DataServer::DataServer(DataServerOptions options, Segment& segment, DiskStore* disk,
                       const Config& config, MetricsRegistry& metrics)
    : options_(std::move(options)),
      segment_(segment),
      disk_(disk),
      config_(config),
      reads_memory_(metrics.GetCounter("data_reads_total", "data channel reads served, by tier",
                                       {{"tier", "MEMORY"}})),
      reads_disk_(metrics.GetCounter("data_reads_total", "data channel reads served, by tier",
                                     {{"tier", "LOCAL_DISK"}})),
      read_bytes_memory_(metrics.GetCounter("data_read_bytes_total",
                                            "bytes served by data channel reads, by tier",
                                            {{"tier", "MEMORY"}})),
      read_bytes_disk_(metrics.GetCounter("data_read_bytes_total",
                                          "bytes served by data channel reads, by tier",
                                          {{"tier", "LOCAL_DISK"}})),
      writes_(metrics.GetCounter("data_writes_total", "data channel writes into the segment")),
      put_ends_(metrics.GetCounter("data_put_ends_total",
                                   "puts ended at the master by this node after their write")),
      put_ends_refused_(metrics.GetCounter(
          "data_put_ends_refused_total",
          "end-put writes whose bytes landed but whose PutEnd the master refused or missed")),
      write_bytes_(metrics.GetCounter("data_write_bytes_total",
                                      "bytes written into the segment over the data channel")),
      by_key_reads_(metrics.GetCounter(
          "data_by_key_total", "one-exchange by-key requests served (standalone), by op",
          {{"op", "read"}})),
      by_key_writes_(metrics.GetCounter(
          "data_by_key_total", "one-exchange by-key requests served (standalone), by op",
          {{"op", "write"}})),
      errors_(metrics.GetCounter("data_errors_total",
                                 "data channel requests refused or failed (a by-key miss or a "
                                 "by-key put of an existing key is the master's answer, not "
                                 "counted here)")),
      refused_connections_(metrics.GetCounter("data_connections_refused_total",
                                              "data connections closed at the connection limit")),
      reply_writes_(metrics.GetCounter(
          "data_reply_writes_total",
          "sends of answers on data connections (a pipelined batch's window of answers "
          "goes in one)")),
      read_seconds_(metrics.GetHistogram("data_request_seconds",
                                         "data channel request latency in seconds",
                                         LatencyBucketsSeconds(), {{"op", "read"}})),
      write_seconds_(metrics.GetHistogram("data_request_seconds",
                                          "data channel request latency in seconds",
                                          LatencyBucketsSeconds(), {{"op", "write"}})) {}

DataServer::~DataServer() { Stop(); }

void DataServer::SetLocalMaster(MasterStore* store, std::function<NodeId()> self) {
    if (local_master_owner_ != nullptr) return;  // once: readers hold the published pointer
    local_master_owner_ = std::make_unique<const LocalMaster>(LocalMaster{store, std::move(self)});
    {
        MutexLock lock(local_master_mu_);
        local_master_.store(local_master_owner_.get());
    }
    local_master_set_.NotifyAll();
}

const DataServer::LocalMaster* DataServer::AwaitLocalMaster() {
    const LocalMaster* local = local_master_.load();
    if (local != nullptr || !options_.local_master_follows) return local;
    MutexLock lock(local_master_mu_);
    const auto deadline = std::chrono::steady_clock::now() + options_.io_timeout;
    while (local_master_.load() == nullptr && !stopping_.load()) {
        if (!local_master_set_.WaitUntil(local_master_mu_, deadline)) break;
    }
    return local_master_.load();
}

Status DataServer::Start() {
    auto fd = net::ListenTcp(options_.listen);
    if (!fd.ok()) return fd.status();
    listener_ = std::move(*fd);
    auto port = net::BoundPort(listener_.get());
    if (!port.ok()) return port.status();
    port_ = *port;
    if (::pipe2(wake_pipe_, O_CLOEXEC) != 0) return Status::IoError("pipe2 failed");
    acceptor_ = std::thread([this] { AcceptLoop(); });
    return Status::Ok();
}

void DataServer::Stop() {
    if (stopping_.exchange(true)) return;
    {
        MutexLock lock(local_master_mu_);  // a by-key request waiting for it gives up
    }
    local_master_set_.NotifyAll();
    if (acceptor_.joinable()) {
        char b = 1;
        (void)!::write(wake_pipe_[1], &b, 1);
        acceptor_.join();
    }
    // Joined outside mu_, which a connection's thread takes as it ends. The nodes move, not
    // the Conns: the threads keep their pointers.
    std::list<Conn> conns;
    {
        MutexLock lock(mu_);
        for (Conn& c : conns_) ::shutdown(c.fd.get(), SHUT_RDWR);
        conns.splice(conns.end(), conns_);
    }
    for (Conn& c : conns) {
        if (c.thread.joinable()) c.thread.join();
    }
    conns.clear();
    listener_.Reset();
    for (int& fd : wake_pipe_) {
        if (fd >= 0) ::close(fd);
        fd = -1;
    }
}

void DataServer::AcceptLoop() {
    while (!stopping_.load()) {
        pollfd pfds[2] = {{listener_.get(), POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
        int rc = ::poll(pfds, 2, 1000);
        {
            // Reap finished connections (their threads have returned).
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
            refused_connections_.Inc();
            continue;  // closed by fd's destructor
        }
        int one = 1;
        setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        (void)net::SetTimeouts(fd.get(), options_.io_timeout);
        ++active_;
        Conn& conn = conns_.emplace_back();
        conn.fd = std::move(fd);
        conn.thread = std::thread([this, &conn] { Serve(&conn); });
    }
}

void DataServer::Serve(Conn* conn) {
    const int fd = conn->fd.get();
    net::BufferedReader in(fd);
    Replies out(fd, reply_writes_);
    Credentials creds;
    Window window;
    while (!stopping_.load()) {
        if (!in.WaitForData(options_.idle_timeout).ok()) break;  // idle too long, or closed
        if (!HandleRequest(out, in, creds, window)) break;
    }
    // The answers given before the connection ends still reach the client (a refusal that
    // closes it, the requests of a batch answered before a broken one).
    (void)out.Flush();
    ::shutdown(fd, SHUT_RDWR);
    MutexLock lock(mu_);
    --active_;
    conn->done.store(true);
}

bool DataServer::RefusePayload(Replies& out, net::BufferedReader& in, const Status& why,
                               uint64_t length, bool count_error) {
    if (count_error) errors_.Inc();
    if (!out.Send(why).ok()) return false;
    if (length <= kDiscardLimit) return in.Discard(length).ok();
    // Too much to drain: say so, stop sending, and let the close tell the peer the rest.
    (void)out.Flush();
    ::shutdown(out.fd(), SHUT_WR);
    return false;
}

bool DataServer::HandleRequest(Replies& out, net::BufferedReader& in, Credentials& creds,
                               Window& window) {
    data::RequestBytes raw;
    if (!in.RecvAll(raw.data(), raw.size()).ok()) return false;
    auto h = data::ParseRequest(raw);
    // A request of a pipelined batch that is not its window's last: its answer may wait for
    // the next ones (one send for the window). Anything else is answered at once.
    out.set_hold(h.ok() && (h->flags & data::kFlagMore) != 0);
    if (!h.ok()) {
        errors_.Inc();
        spdlog::debug("data channel: malformed request: {}", h.status().ToString());
        (void)out.Send(h.status());
        return false;  // the stream cannot be resynchronised
    }
    if (window.ended) {
        window.writes.Reset();
        window.reads.clear();
    }
    window.ended = (h->flags & data::kFlagMore) == 0;
    if (!creds.greeted && h->op != data::Op::kHello) {
        errors_.Inc();
        (void)out.Send(Status::IllegalClient(
                                   "the first request on a data connection must be hello"));
        return false;
    }
    if (h->op == data::Op::kHello) {
        std::string token(h->length, '\0');
        if (!in.RecvAll(token.data(), token.size()).ok()) return false;
        auto accepted = Authenticate(options_.auth_token, token, options_.tenant_tokens);
        if (!accepted.ok()) {
            errors_.Inc();
            (void)out.Send(accepted.status());
            return false;
        }
        creds = *accepted;
        // A client sends its hello in the same write as its first request: when that is
        // here already, the hello's answer goes out with the request's.
        out.set_hold(in.buffered() > 0);
        return out.Send(Status::Ok()).ok();
    }
    // The access table (node/access.cc) decides; a refused request leaves the stream in
    // sync (its key and payload are drained), so the connection stays usable.
    const char* op_name = h->op == data::Op::kPing   ? "ping"
                          : h->op == data::Op::kRead ? "read"
                                                     : "write";
    // A by-key request also does a master call in this process: the master's rule for that
    // call applies first, so its refusal reads as the master's would; then the byte op's.
    const bool by_key = (h->flags & data::kFlagByKey) != 0;
    Status allowed =
        by_key ? CheckAccess(MasterMethodPermissions(),
                             h->op == data::Op::kRead ? "GetReplicaList" : "PutStart", creds)
               : Status::Ok();
    if (allowed.ok()) allowed = CheckAccess(DataOpPermissions(), op_name, creds);
    if (Status st = allowed; !st.ok()) {
        if (h->op == data::Op::kPing) {
            errors_.Inc();
            return out.Send(st).ok();
        }
        if (!in.Discard(h->key_length + data::ExtraRequestBytes(*h)).ok()) return false;
        if (h->op == data::Op::kWrite) return RefusePayload(out, in, st, h->length);
        errors_.Inc();
        return out.Send(st).ok();
    }
    switch (h->op) {
        case data::Op::kHello: break;  // handled above
        case data::Op::kPing: return out.Send(Status::Ok()).ok();
        case data::Op::kWrite:
        case data::Op::kRead: break;
    }
    std::string key(h->key_length, '\0');
    if (!in.RecvAll(key.data(), key.size()).ok()) return false;
    std::optional<ClientId> writer;  // the client a kFlagEndPut or by-key write is for
    if (data::ExtraRequestBytes(*h) != 0) {
        std::array<std::byte, data::kClientIdBytes> raw_client;
        if (!in.RecvAll(raw_client.data(), raw_client.size()).ok()) return false;
        ClientId client = 0;
        for (size_t i = 0; i < raw_client.size(); ++i) {
            client |= static_cast<ClientId>(std::to_integer<uint8_t>(raw_client[i])) << (8 * i);
        }
        writer = client;
    }
    Status valid = ValidateKey(key);
    if (valid.ok() && !creds.tenant.empty() && TenantOfKey(key) != creds.tenant) {
        valid = Status::IllegalClient("the token of tenant '" + creds.tenant + "' does not grant " +
                                      QuoteKey(key));
    }
    if (Status st = valid; !st.ok()) {
        if (h->op == data::Op::kWrite) return RefusePayload(out, in, st, h->length);
        errors_.Inc();
        return out.Send(st).ok();
    }
    if (h->op == data::Op::kWrite) {
        if (by_key) {
            window.writes.Add(h->length);
            return HandleWriteByKey(out, in, key, *writer, h->length,
                                    window.ended && window.writes.LastIsPartialTail());
        }
        return HandleWrite(out, in, key, h->generation, h->offset, h->length, writer);
    }
    if (by_key) {
        const bool served = HandleReadByKey(out, key, h->length);
        window.reads.push_back(std::move(key));
        if (window.ended && window.reads.size() > 1) {
            if (const LocalMaster* local = AwaitLocalMaster()) {
                local->store->CoverPrefixWithSoftPins(window.reads);
            }
        }
        return served;
    }
    return HandleRead(out, static_cast<int>(h->tier), key, h->generation, h->offset, h->length);
}

bool DataServer::HandleWrite(Replies& out, net::BufferedReader& in, const std::string& key,
                             uint64_t generation, uint64_t offset, uint64_t length,
                             std::optional<ClientId> end_put_for) {
    auto start = WallTimer::now();
    // Read once: the link named here is the one the put is ended at.
    MasterLink* const link = end_put_for ? put_end_link_.load() : nullptr;
    if (end_put_for && link == nullptr) {
        return RefusePayload(out, in,
                             Status::Unavailable("this node cannot end puts (it has no master "
                                                 "link yet): write without the end-put flag "
                                                 "and call PutEnd"),
                             length);
    }
    uint64_t max = config_.max_value_size();
    if (length == 0 || length > max) {
        return RefusePayload(out, in,
                             Status::InvalidArgument("a write of " + std::to_string(length) +
                                                     " bytes is outside 1..max_value_size (" +
                                                     FormatSize(max) + ")"),
                             length);
    }
    {
        auto lease = segment_.BeginWrite(key, generation, offset, length);
        if (!lease.ok()) return RefusePayload(out, in, lease.status(), length);
        // Into the segment (a large payload straight from the socket, a small one out of the
        // reader's buffer); an incomplete write leaves nothing readable (and with the end-put
        // flag, the put is not ended).
        if (!in.RecvPayload(lease->data(), length).ok()) {
            errors_.Inc();
            return false;
        }
        lease->Commit();
    }  // the range's write lock is released before the master hears of it
    writes_.Inc();
    write_bytes_.Inc(static_cast<double>(length));
    Status answer = Status::Ok();
    if (end_put_for) {
        // The master checks client, generation and that the put is still there (a put
        // removed or revoked meanwhile is refused: the writer revokes, nothing is readable).
        // Idempotent: a retried write of a put already ended answers OK again.
        answer = link->PutEnd(*end_put_for, key, generation);
        if (answer.ok()) {
            put_ends_.Inc();
        } else {
            put_ends_refused_.Inc();
            errors_.Inc();
            answer = Status(answer.code(), "bytes written, but ending the put of " +
                                               QuoteKey(key) + " failed: " + answer.message());
        }
    }
    write_seconds_.Observe(SecondsSince(start));
    return out.Send(answer).ok();
}

bool DataServer::HandleRead(Replies& out, int tier, const std::string& key, uint64_t generation,
                            uint64_t offset, uint64_t length) {
    if (length == 0) {
        errors_.Inc();
        return out.Send(Status::InvalidArgument("empty read")).ok();
    }
    bool connection_ok = false;
    Status st = SendReplica(out, static_cast<Tier>(tier), key, generation, offset, length,
                            /*name_tier=*/false, &connection_ok);
    if (st.ok()) return connection_ok;
    errors_.Inc();
    return out.Send(st).ok();
}

Status DataServer::SendReplica(Replies& out, Tier tier, const std::string& key, uint64_t generation,
                               uint64_t offset, uint64_t length, bool name_tier,
                               bool* connection_ok) {
    auto start = WallTimer::now();
    const std::optional<Tier> served = name_tier ? std::optional(tier) : std::nullopt;
    // A by-key read (the only one that names its tier) is counted, as every read here, before
    // its answer goes: a reader holding its bytes finds it counted.
    auto count_by_key = [&] {
        if (name_tier) by_key_reads_.Inc();
    };
    if (tier == Tier::kMemory) {
        auto lease = segment_.BeginRead(key, generation, offset, length);
        if (!lease.ok()) return lease.status();
        // Counted before it is sent, so a reader that has its bytes finds the read counted.
        reads_memory_.Inc();
        count_by_key();
        read_bytes_memory_.Inc(static_cast<double>(length));
        read_seconds_.Observe(SecondsSince(start));
        // Sent straight from the segment while the range's read lock is held.
        *connection_ok =
            out.Send(Status::Ok(), {lease->data(), lease->size()}, served).ok();
        return Status::Ok();
    }
    if (disk_ == nullptr) return Status::NotFound("this node has no LOCAL_DISK tier");
    auto size = disk_->SizeOf(key, generation);
    if (!size.ok()) return size.status();
    if (offset > *size || length > *size - offset) {
        return Status::InvalidArgument("read past the end of " + QuoteKey(key) + " (" +
                                       std::to_string(*size) + " bytes)");
    }
    // Aligned, so the disk store reads into it directly.
    AlignedBuffer buffer(AlignUp(*size));
    Status st = MOONCAKE_FAULT_POINT("disk.read");
    if (st.ok()) {
        st = disk_->Read(key, generation, buffer.span().first(*size), IoPriority::kForeground);
    }
    if (!st.ok()) return st;
    reads_disk_.Inc();  // before it is sent, as above
    count_by_key();
    read_bytes_disk_.Inc(static_cast<double>(length));
    read_seconds_.Observe(SecondsSince(start));
    *connection_ok =
        out.Send(Status::Ok(), {buffer.data() + offset, length}, served).ok();
    if (DiskReadSink* sink = disk_read_sink_.load()) {
        sink->TakeDiskRead(key, generation, buffer, *size);
    }
    return Status::Ok();
}

namespace {

// The master's answer about the key itself (it does not exist; it exists already) is what the
// two-step path hears from the master, not a data channel failure: the master counts misses
// (get_misses_total), and data_errors_total stays a signal an operator can alert on (a replica
// the master lists but the node cannot send still counts).
bool AnswerAboutTheKey(const Status& st) {
    return st.Is(StatusCode::kNotFound) || st.Is(StatusCode::kAlreadyExists);
}

Status NotStandalone(std::string_view what) {
    return Status::Unavailable("by-key " + std::string(what) +
                               " are served by a standalone daemon only: ask the master for "
                               "the range and name it");
}

}  // namespace

bool DataServer::HandleReadByKey(Replies& out, const std::string& key, uint64_t max_length) {
    const LocalMaster* local = AwaitLocalMaster();
    if (local == nullptr) {
        errors_.Inc();
        return out.Send(NotStandalone("reads")).ok();
    }
    bool sent = false;  // a replica's bytes went out: the answer is given
    bool connection_ok = false;
    bool master_answered = false;  // the refusal is the master's (no such key), not the data's
    Status st = net::ReadWithOneRelook([&](int, bool& stop) {
        auto view = local->store->GetReplicaList(key);  // a read: lease, recency, promotion
        stop = true;
        master_answered = !view.ok();
        if (!view.ok()) return view.status();
        if (view->size > max_length) {
            return Status::InvalidArgument("buffer of " + std::to_string(max_length) +
                                           " bytes is too small for " + QuoteKey(key) + " (" +
                                           std::to_string(view->size) + " bytes)");
        }
        stop = false;
        const NodeId self = local->self();
        // The replica read rule (core/base/master_types.h), over this node's copies.
        ReplicaReads reads(
            Status::NotFound("key " + QuoteKey(key) + " has no complete replica here"));
        for (const ReplicaDesc& r : view->replicas) {
            if (r.state != ReplicaState::kComplete || r.node != self) continue;
            if (reads.Add(SendReplica(out, r.tier, key, view->generation, r.ReadOffset(),
                                      view->size, /*name_tier=*/true, &connection_ok))) {
                sent = true;
                break;
            }
        }
        return reads.Answer();
    });
    if (sent) return connection_ok;  // counted in SendReplica
    if (!(master_answered && AnswerAboutTheKey(st))) errors_.Inc();
    return out.Send(st).ok();
}

bool DataServer::HandleWriteByKey(Replies& out, net::BufferedReader& in, const std::string& key,
                                  ClientId client, uint64_t length, bool partial_tail) {
    auto start = WallTimer::now();
    const LocalMaster* local = AwaitLocalMaster();
    if (local == nullptr) return RefusePayload(out, in, NotStandalone("writes"), length);
    MasterStore& store = *local->store;
    const NodeId self = local->self();
    // Checks the key, the size against max_value_size and DRAM, and that the key is new.
    PutHint tail;
    tail.last_partial = true;
    auto started = store.PutStart(client, key, length, self, partial_tail ? &tail : nullptr);
    if (!started.ok()) {
        return RefusePayload(out, in, started.status(), length,
                             /*count_error=*/!AnswerAboutTheKey(started.status()));
    }
    const Generation generation = started->generation;
    auto revoke = [&] { (void)store.PutRevoke(client, key, generation); };
    if (started->replica.node != self) {
        // Only when another node has joined this daemon's master: the range is not ours.
        revoke();
        return RefusePayload(out, in,
                             Status::Unavailable("the master placed " + QuoteKey(key) +
                                                 " on another node: put it in two steps"),
                             length);
    }
    {
        auto lease = segment_.BeginWrite(key, generation, started->replica.offset, length);
        if (!lease.ok()) {
            revoke();
            return RefusePayload(out, in, lease.status(), length);
        }
        if (!in.RecvPayload(lease->data(), length).ok()) {
            revoke();  // nothing readable is left of a write that ended short
            errors_.Inc();
            return false;
        }
        lease->Commit();
    }
    writes_.Inc();
    write_bytes_.Inc(static_cast<double>(length));
    // Refused only if the put was removed or revoked meanwhile: then nothing is readable.
    Status answer = store.PutEnd(client, key, generation);
    if (answer.ok()) {
        put_ends_.Inc();
        by_key_writes_.Inc();
    } else {
        revoke();
        put_ends_refused_.Inc();
        errors_.Inc();
    }
    write_seconds_.Observe(SecondsSince(start));
    return out.Send(answer).ok();
}

}  // namespace mooncake
