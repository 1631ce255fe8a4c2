// TCP DataTransport: one request/response exchange per call on a pooled connection.
#include <poll.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "core/base/mutex.h"
#include "net/data_protocol.h"
#include "net/data_transport.h"
#include "net/net.h"
#include "net/pipeline.h"
#include "net/stream_io.h"

namespace mooncake {
namespace {

// What one exchange produced: `transport` not ok means no answer came (the request may be
// retried); otherwise `server` is the node's answer. `reusable`: the stream is still in sync.
struct ExchangeResult {
    Status transport;
    Status server;
    bool reusable = true;
};

class TcpTransport final : public DataTransport {
public:
    explicit TcpTransport(TcpTransportOptions options) : options_(std::move(options)) {}

    Status WriteMemory(std::string_view address, std::string_view key, Generation generation,
                       uint64_t offset, std::span<const std::byte> data) override {
        return WriteMemoryPieces(address, key, generation, offset, ConstPieces(&data, 1));
    }

    Status WriteMemoryPieces(std::string_view address, std::string_view key, Generation generation,
                             uint64_t offset, ConstPieces data) override {
        Payload p;
        p.send = data;
        return Run(address, WriteHeader(key, generation, offset, PiecesSize(data)), key, p);
    }

    Status WriteMemoryFrom(std::string_view address, std::string_view key, Generation generation,
                           uint64_t offset, uint64_t length, ByteSource& source) override {
        Payload p;
        p.source = &source;
        return Run(address, WriteHeader(key, generation, offset, length), key, p);
    }

    Status WriteMemoryEndingPut(std::string_view address, std::string_view key,
                                Generation generation, uint64_t offset,
                                std::span<const std::byte> data, ClientId client,
                                bool* ended) override {
        return WriteMemoryPiecesEndingPut(address, key, generation, offset, ConstPieces(&data, 1),
                                          client, ended);
    }

    Status WriteMemoryPiecesEndingPut(std::string_view address, std::string_view key,
                                      Generation generation, uint64_t offset, ConstPieces data,
                                      ClientId client, bool* ended) override {
        const auto id = EncodeClient(client);
        Payload p;
        p.send = data;
        p.end_put = id;
        Status st =
            Run(address, WriteHeader(key, generation, offset, PiecesSize(data), true), key, p);
        *ended = st.ok();  // the node answers OK only once the put has ended
        return st;
    }

    Status WriteMemoryFromEndingPut(std::string_view address, std::string_view key,
                                    Generation generation, uint64_t offset, uint64_t length,
                                    ByteSource& source, ClientId client, bool* ended) override {
        const auto id = EncodeClient(client);
        Payload p;
        p.source = &source;
        p.end_put = id;
        Status st = Run(address, WriteHeader(key, generation, offset, length, true), key, p);
        *ended = st.ok();
        return st;
    }

    Status Read(std::string_view address, Tier tier, std::string_view key, Generation generation,
                uint64_t offset, std::span<std::byte> out) override {
        return ReadPieces(address, tier, key, generation, offset, MutablePieces(&out, 1));
    }

    Status ReadPieces(std::string_view address, Tier tier, std::string_view key,
                      Generation generation, uint64_t offset, MutablePieces out) override {
        Payload p;
        p.receive = out;
        return Run(address, ReadHeader(tier, key, generation, offset, PiecesSize(out)), key, p);
    }

    Status ReadTo(std::string_view address, Tier tier, std::string_view key,
                  Generation generation, uint64_t offset, uint64_t length,
                  ByteSink& sink) override {
        Payload p;
        p.sink = &sink;
        return Run(address, ReadHeader(tier, key, generation, offset, length), key, p);
    }

    bool HasByKey() const override { return true; }

    Result<uint64_t> ReadByKey(
        std::string_view address, std::string_view key, uint64_t max_size,
        const std::function<std::span<std::byte>(uint64_t)>& buffer_for,
        Tier* served_from) override {
        Payload p;
        p.receive_sized = &buffer_for;
        return RunByKeyRead(address, key, max_size, p, served_from);
    }

    Result<uint64_t> ReadByKeyInto(std::string_view address, std::string_view key,
                                   std::span<std::byte> out, Tier* served_from) override {
        return ReadByKeyIntoPieces(address, key, MutablePieces(&out, 1), served_from);
    }

    Result<uint64_t> ReadByKeyIntoPieces(std::string_view address, std::string_view key,
                                         MutablePieces out, Tier* served_from) override {
        Payload p;
        p.receive = out;
        return RunByKeyRead(address, key, PiecesSize(out), p, served_from);
    }

    Status PutByKey(std::string_view address, std::string_view key, ClientId client,
                    std::span<const std::byte> value, bool* sent) override {
        return PutPiecesByKey(address, key, client, ConstPieces(&value, 1), sent);
    }

    Status PutPiecesByKey(std::string_view address, std::string_view key, ClientId client,
                          ConstPieces value, bool* sent) override {
        data::RequestHeader h;
        h.op = data::Op::kWrite;
        h.flags = data::kFlagByKey;
        h.key_length = static_cast<uint32_t>(key.size());
        h.length = PiecesSize(value);
        const auto id = EncodeClient(client);
        Payload p;
        p.end_put = id;
        p.send = value;
        return Run(address, h, key, p, /*retry=*/false, sent);
    }

    // Pipelined: each window of ops on one pooled connection (net/pipeline.h).
    void RunBatch(std::string_view address, std::span<BatchOp> ops) override {
        std::vector<BatchOp*> live;
        live.reserve(ops.size());
        for (BatchOp& op : ops) {
            op.status = ValidateKey(op.key);
            op.sent = false;
            if (op.status.ok()) live.push_back(&op);
        }
        for (size_t first = 0; first < live.size();) {
            const size_t end = net::WindowEnd(live, first);
            RunWindowWithRetry(address, std::span<BatchOp* const>(live).subspan(first, end - first));
            first = end;
        }
    }

private:
    // As Run: a pooled connection that fails before answering is left for a fresh one, once,
    // with the ops not answered yet that may be sent again (not a by-key put: it may have
    // happened). Those that are not sent again answer the failure.
    void RunWindowWithRetry(std::string_view address, std::span<BatchOp* const> window) {
        std::vector<BatchOp*> rest(window.begin(), window.end());
        for (int attempt = 0; !rest.empty(); ++attempt) {
            const bool puts = std::any_of(rest.begin(), rest.end(), [](const BatchOp* op) {
                return op->kind == BatchOp::Kind::kPutByKey;
            });
            bool pooled = false;
            auto conn = Checkout(address, &pooled, /*fresh=*/attempt > 0, /*verify=*/puts);
            if (!conn.ok()) {
                for (BatchOp* op : rest) op->status = conn.status();
                return;
            }
            net::WindowResult r =
                net::RunWindow(conn->get(), /*greet=*/!pooled, options_.auth_token, rest);
            if (r.broken.ok() && r.reusable) Return(address, std::move(*conn));
            if (r.answered == rest.size()) return;
            const Status why = r.broken.ok() ? Status::Unavailable("data connection lost")
                               : r.broken.Is(StatusCode::kUnavailable) ||
                                       r.broken.Is(StatusCode::kTimeout)
                                   ? r.broken
                                   : Status::Unavailable("data connection failed mid-batch: " +
                                                         r.broken.message());
            std::vector<BatchOp*> again;
            for (size_t i = r.answered; i < rest.size(); ++i) {
                rest[i]->status = why;
                if (rest[i]->kind != BatchOp::Kind::kPutByKey) again.push_back(rest[i]);
            }
            // A timeout is a slow peer, not a dead connection (as Run).
            if (!pooled || attempt > 0 || why.Is(StatusCode::kTimeout)) return;
            DropIdle(address);
            rest = std::move(again);
        }
    }

    // Where a request's payload comes from and a response's payload goes: pieces of memory
    // (net/byte_pieces.h; a span is one piece), or a stream (net/byte_stream.h). At most one
    // of each side is set.
    struct Payload {
        std::span<const std::byte> end_put;  // the client id after the key (kFlagEndPut,
                                             // by-key writes)
        ConstPieces send;
        ByteSource* source = nullptr;
        MutablePieces receive;
        ByteSink* sink = nullptr;
        // The response's payload is given by a call, once its size is known.
        const std::function<std::span<std::byte>(uint64_t)>* receive_sized = nullptr;
        // A by-key read: the answer's size is at most the request's length, not equal to it,
        // and is stored in *received.
        bool up_to = false;
        uint64_t* received = nullptr;
        std::optional<Tier>* served_from = nullptr;  // the tier an OK answer names
    };

    Result<uint64_t> RunByKeyRead(std::string_view address, std::string_view key,
                                  uint64_t max_size, Payload& p, Tier* served_from) {
        data::RequestHeader h;
        h.op = data::Op::kRead;
        h.flags = data::kFlagByKey;
        h.key_length = static_cast<uint32_t>(key.size());
        h.length = max_size;
        uint64_t size = 0;
        std::optional<Tier> tier;
        p.up_to = true;
        p.received = &size;
        p.served_from = &tier;
        MC_RETURN_IF_ERROR(Run(address, h, key, p));
        if (!tier) return Status::IoError("data channel: a by-key answer names no tier");
        if (served_from != nullptr) *served_from = *tier;
        return size;
    }

    // The client id a kFlagEndPut write carries after its key, little-endian.
    static std::array<std::byte, data::kClientIdBytes> EncodeClient(ClientId client) {
        std::array<std::byte, data::kClientIdBytes> out;
        for (size_t i = 0; i < out.size(); ++i) {
            out[i] = static_cast<std::byte>((client >> (8 * i)) & 0xFF);
        }
        return out;
    }

    static data::RequestHeader WriteHeader(std::string_view key, Generation generation,
                                           uint64_t offset, uint64_t length,
                                           bool end_put = false) {
        data::RequestHeader h;
        h.op = data::Op::kWrite;
        h.flags = end_put ? data::kFlagEndPut : 0;
        h.tier = Tier::kMemory;
        h.key_length = static_cast<uint32_t>(key.size());
        h.generation = generation;
        h.offset = offset;
        h.length = length;
        return h;
    }

    static data::RequestHeader ReadHeader(Tier tier, std::string_view key, Generation generation,
                                          uint64_t offset, uint64_t length) {
        data::RequestHeader h;
        h.op = data::Op::kRead;
        h.tier = tier;
        h.key_length = static_cast<uint32_t>(key.size());
        h.generation = generation;
        h.offset = offset;
        h.length = length;
        return h;
    }

    // Before another attempt: a stream must start again from its first byte.
    static bool Rewind(const Payload& p) {
        return (p.source == nullptr || p.source->Rewind()) && (p.sink == nullptr || p.sink->Restart());
    }

    // `retry`: whether the request may be sent again after a pooled connection failed
    // (false when a second send could do it twice: a by-key write). *sent (if given) says
    // whether the request was sent at all.
    Status Run(std::string_view address, const data::RequestHeader& h, std::string_view key,
               const Payload& payload, bool retry = true, bool* sent = nullptr) {
        if (sent != nullptr) *sent = false;
        MC_RETURN_IF_ERROR(ValidateKey(key));
        for (int attempt = 0;; ++attempt) {
            bool pooled = false;
            auto conn = Checkout(address, &pooled, /*fresh=*/attempt > 0, /*verify=*/!retry);
            if (!conn.ok()) return conn.status();
            if (sent != nullptr) *sent = true;
            // A new connection's hello goes in the same send as the request (one round trip
            // less); a pooled one has been greeted.
            ExchangeResult r = Exchange(conn->get(), h, key, payload, /*greet=*/!pooled);
            if (r.transport.ok()) {
                if (r.reusable) Return(address, std::move(*conn));
                return r.server;
            }
            // A pooled connection may have been closed by the peer while idle: retry once, on
            // a new connection. The other idle ones to that peer are dropped too: when it has
            // restarted they are all dead, and a retry on one of them would fail the same way.
            // A timeout is a slow or stalled peer, not a dead connection: asking again would
            // double the caller's deadline.
            if (!retry || !pooled || attempt > 0 || r.transport.Is(StatusCode::kTimeout) ||
                !Rewind(payload)) {
                return r.transport;
            }
            DropIdle(address);
        }
    }

    ExchangeResult Exchange(int fd, const data::RequestHeader& h, std::string_view key,
                            const Payload& payload, bool greet) {
        data::RequestHeader hello;
        hello.op = data::Op::kHello;
        hello.length = options_.auth_token.size();
        data::RequestBytes hello_header = data::SerializeRequest(hello);
        data::RequestBytes header = data::SerializeRequest(h);
        // Headers and the payload's pieces leave in one vectored send, straight from the
        // caller's memory.
        std::vector<iovec> iov = {
            {hello_header.data(), hello_header.size()},
            {const_cast<char*>(options_.auth_token.data()), options_.auth_token.size()},
            {header.data(), header.size()},
            {const_cast<char*>(key.data()), key.size()},
            {const_cast<std::byte*>(payload.end_put.data()), payload.end_put.size()}};
        AppendIovecs(payload.send, 0, UINT64_MAX, iov);
        Status st = net::SendAll(fd, std::span<const iovec>(iov).subspan(greet ? 0 : 2));
        if (st.ok() && payload.source != nullptr) {
            bool source_failed = false;
            st = net::SendStream(fd, *payload.source, h.length, &source_failed);
            if (st.ok()) {
                st = payload.source->Finish();
                source_failed = !st.ok();
            }
            // Our side failed (not the connection): answer that, without a retry. The node
            // waits for bytes that will not come, so the connection is closed, and the
            // uncommitted range stays unreadable.
            if (source_failed) return {Status::Ok(), st, false};
        }
        if (greet) {
            // The hello's answer comes first; a refused hello closes the connection, so the
            // request's send may have failed too: the refusal is the answer.
            ExchangeResult greeted = ReadResponse(fd, {}, 0);
            if (!greeted.transport.ok()) return {st.ok() ? greeted.transport : st, {}, false};
            if (!greeted.server.ok()) return {Status::Ok(), greeted.server, false};
        }
        if (!st.ok()) {
            // The node may have refused the request (oversized, say) and closed before taking
            // the payload: its answer is more useful than our send error.
            ExchangeResult answer = ReadResponse(fd, {}, 0);
            if (answer.transport.ok() && !answer.server.ok()) {
                answer.reusable = false;
                return answer;
            }
            return {st, {}, false};
        }
        return ReadResponse(fd, payload, h.op == data::Op::kRead ? h.length : 0);
    }

    // Receives a response header and, in the same system call, the start of what follows it
    // into `rest` (a small answer whole). Returns how many bytes landed in `rest`.
    static Result<size_t> RecvHeaderAndStart(int fd, data::ResponseBytes& raw,
                                             std::span<std::byte> rest) {
        size_t got = 0;
        while (got < raw.size()) {
            iovec iov[2] = {{raw.data() + got, raw.size() - got}, {rest.data(), rest.size()}};
            ssize_t n = ::readv(fd, iov, rest.empty() ? 1 : 2);
            if (n == 0) {
                return got == 0 ? Status::Unavailable("peer closed the connection")
                                : Status::IoError("peer closed the connection mid-message");
            }
            if (n < 0) {
                if (errno == EINTR) continue;
                return net::IoFailure("recv");
            }
            got += static_cast<size_t>(n);
        }
        return got - raw.size();
    }

    // Reads a response; payload (if any) lands straight in the span or goes to the sink.
    // `expected`: the payload's size (with into.up_to, the most it may be).
    static ExchangeResult ReadResponse(int fd, const Payload& into, uint64_t expected) {
        data::ResponseBytes raw;
        // Only a piece known before the answer can take its start in the header's recv.
        std::span<std::byte> early;
        if (!into.receive.empty() && into.sink == nullptr) {
            early = into.receive[0].first(std::min<uint64_t>(into.receive[0].size(), expected));
        }
        auto started = RecvHeaderAndStart(fd, raw, early);
        if (!started.ok()) return {started.status(), {}, false};
        const size_t early_got = *started;
        auto h = data::ParseResponse(raw);
        if (!h.ok()) {
            return {Status::IoError("data channel: " + h.status().message()), {}, false};
        }
        std::string message(h->message_length, '\0');
        // An error's message may have landed where the payload would have.
        const size_t early_message = std::min<size_t>(early_got, message.size());
        if (early_message > 0) std::memcpy(message.data(), early.data(), early_message);
        Status st = net::RecvAll(fd, message.data() + early_message,
                                 message.size() - early_message);
        if (!st.ok()) return {st, {}, false};
        if (h->status != StatusCode::kOk) return {Status::Ok(), Status(h->status, message)};
        if (into.served_from != nullptr) *into.served_from = h->served_from;
        if (into.up_to && h->length <= expected) expected = h->length;
        if (into.received != nullptr) *into.received = expected;
        if (h->length != expected || early_got > expected) {
            return {Status::IoError("data channel: response of " + std::to_string(h->length) +
                                    " bytes, expected " + std::to_string(expected)),
                    {},
                    false};
        }
        MutablePieces receive = into.receive;
        std::span<std::byte> sized;
        if (into.receive_sized != nullptr) {
            sized = (*into.receive_sized)(expected);
            if (sized.size() < expected) {
                return {Status::Internal("the buffer given for a read is too small"), {}, false};
            }
            receive = MutablePieces(&sized, 1);
        }
        if (into.sink == nullptr && PiecesSize(receive) < expected) {
            return {Status::Internal("the buffers given for a read are too small"), {}, false};
        }
        if (into.sink != nullptr) {
            st = net::RecvStream(fd, *into.sink, expected);
        } else {
            // The rest of the payload lands in the pieces, where the header's recv stopped.
            std::vector<iovec> iov;
            AppendIovecs(receive, early_got, expected - early_got, iov);
            st = net::RecvAll(fd, iov);
        }
        if (!st.ok()) {
            // A sink that refused bytes is our failure, not the connection's; either way the
            // stream is out of sync.
            return {st, {}, false};
        }
        return {Status::Ok(), Status::Ok()};
    }

    // `verify`: check even a connection used a moment ago (for a request that cannot be sent
    // again if the connection turns out dead).
    Result<net::Fd> Checkout(std::string_view address, bool* pooled, bool fresh, bool verify) {
        if (!fresh) {
            const auto now = std::chrono::steady_clock::now();
            MutexLock lock(mu_);
            auto it = idle_.find(address);
            while (it != idle_.end() && !it->second.empty()) {
                Idle idle = std::move(it->second.back());
                it->second.pop_back();
                // An idle connection has nothing to read: readable means the peer closed it.
                // One used a moment ago is taken without asking (a system call per request,
                // as costly as the rest of a small one): the node closes idle connections
                // only after minutes, so it is closed only if the node just went away, and
                // Run then sends the request again on a fresh connection. A by-key write is
                // never sent twice, so its connection is always checked: a node restarted a
                // moment ago has closed it, and the write goes on a fresh one. (One closed
                // between this check and the send still fails the write in transport, as a
                // node dying mid-write does.)
                if (verify || now - idle.since >= kTrustedIdle) {
                    pollfd pfd{idle.fd.get(), POLLIN, 0};
                    if (::poll(&pfd, 1, 0) != 0) continue;
                }
                *pooled = true;
                return std::move(idle.fd);
            }
        }
        *pooled = false;
        auto hp = net::ParseHostPort(address);
        if (!hp.ok()) return hp.status();
        return net::ConnectTcp(*hp, options_.timeout);
    }

    void DropIdle(std::string_view address) {
        MutexLock lock(mu_);
        auto it = idle_.find(address);
        if (it != idle_.end()) it->second.clear();
    }

    void Return(std::string_view address, net::Fd fd) {
        MutexLock lock(mu_);
        auto& list = idle_[std::string(address)];
        if (list.size() < options_.max_idle_per_peer) {
            list.push_back({std::move(fd), std::chrono::steady_clock::now()});
        }
    }

    // A pooled connection idle for less than this is used without checking it is still open.
    static constexpr std::chrono::milliseconds kTrustedIdle{1000};

    struct Idle {
        net::Fd fd;
        std::chrono::steady_clock::time_point since;  // when it was returned
    };

    const TcpTransportOptions options_;
    Mutex mu_;
    std::map<std::string, std::vector<Idle>, std::less<>> idle_ MC_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<DataTransport> NewTcpTransport(const TcpTransportOptions& options) {
    return std::make_unique<TcpTransport>(options);
}

}  // namespace mooncake
