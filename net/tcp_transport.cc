// TCP DataTransport: one request/response exchange per call on a pooled connection.
#include <poll.h>
#include <sys/uio.h>

#include <array>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "net/data_protocol.h"
#include "net/data_transport.h"
#include "net/net.h"
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
        Payload p;
        p.send = data;
        return Run(address, WriteHeader(key, generation, offset, data.size()), key, p);
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
        const auto id = EncodeClient(client);
        Payload p;
        p.send = data;
        p.end_put = id;
        Status st = Run(address, WriteHeader(key, generation, offset, data.size(), true), key, p);
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
        Payload p;
        p.receive = out;
        return Run(address, ReadHeader(tier, key, generation, offset, out.size()), key, p);
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
        data::RequestHeader h;
        h.op = data::Op::kRead;
        h.flags = data::kFlagByKey;
        h.key_length = static_cast<uint32_t>(key.size());
        h.length = max_size;
        uint64_t size = 0;
        Payload p;
        p.receive_sized = &buffer_for;
        p.received = &size;
        std::optional<Tier> tier;
        p.served_from = &tier;
        MC_RETURN_IF_ERROR(Run(address, h, key, p));
        if (!tier) return Status::IoError("data channel: a by-key answer names no tier");
        if (served_from != nullptr) *served_from = *tier;
        return size;
    }

    Status PutByKey(std::string_view address, std::string_view key, ClientId client,
                    std::span<const std::byte> value) override {
        data::RequestHeader h;
        h.op = data::Op::kWrite;
        h.flags = data::kFlagByKey;
        h.key_length = static_cast<uint32_t>(key.size());
        h.length = value.size();
        const auto id = EncodeClient(client);
        Payload p;
        p.end_put = id;
        p.send = value;
        return Run(address, h, key, p, /*retry=*/false);
    }

private:
    // Where a request's payload comes from and a response's payload goes: a span, or a
    // stream (net/byte_stream.h). At most one of each side is set.
    struct Payload {
        std::span<const std::byte> end_put;  // the client id after the key (kFlagEndPut,
                                             // by-key writes)
        std::span<const std::byte> send;
        ByteSource* source = nullptr;
        std::span<std::byte> receive;
        ByteSink* sink = nullptr;
        // A by-key read: the size comes with the answer (at most the request's length), and
        // the buffer is asked for then; the size is stored in *received.
        const std::function<std::span<std::byte>(uint64_t)>* receive_sized = nullptr;
        uint64_t* received = nullptr;
        std::optional<Tier>* served_from = nullptr;  // the tier an OK answer names
    };

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
    // (false when a second send could do it twice: a by-key write).
    Status Run(std::string_view address, const data::RequestHeader& h, std::string_view key,
               const Payload& payload, bool retry = true) {
        MC_RETURN_IF_ERROR(ValidateKey(key));
        for (int attempt = 0;; ++attempt) {
            bool pooled = false;
            auto conn = Checkout(address, &pooled, /*fresh=*/attempt > 0);
            if (!conn.ok()) return conn.status();
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
        iovec iov[6] = {{hello_header.data(), hello_header.size()},
                        {const_cast<char*>(options_.auth_token.data()), options_.auth_token.size()},
                        {header.data(), header.size()},
                        {const_cast<char*>(key.data()), key.size()},
                        {const_cast<std::byte*>(payload.end_put.data()), payload.end_put.size()},
                        {const_cast<std::byte*>(payload.send.data()), payload.send.size()}};
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

    // Reads a response; payload (if any) lands straight in the span or goes to the sink.
    static ExchangeResult ReadResponse(int fd, const Payload& into, uint64_t expected) {
        data::ResponseBytes raw;
        Status st = net::RecvAll(fd, raw.data(), raw.size());
        if (!st.ok()) return {st, {}, false};
        auto h = data::ParseResponse(raw);
        if (!h.ok()) {
            return {Status::IoError("data channel: " + h.status().message()), {}, false};
        }
        std::string message(h->message_length, '\0');
        st = net::RecvAll(fd, message.data(), message.size());
        if (!st.ok()) return {st, {}, false};
        if (h->status != StatusCode::kOk) return {Status::Ok(), Status(h->status, message)};
        if (into.served_from != nullptr) *into.served_from = h->served_from;
        std::span<std::byte> receive = into.receive;
        if (into.receive_sized != nullptr && h->length <= expected) {
            // A by-key read: `expected` was the most the reader takes.
            expected = h->length;
            receive = (*into.receive_sized)(expected);
            *into.received = expected;
            if (receive.size() < expected) {
                return {Status::Internal("by-key read: the buffer given is too small"), {}, false};
            }
        }
        if (h->length != expected) {
            return {Status::IoError("data channel: response of " + std::to_string(h->length) +
                                    " bytes, expected " + std::to_string(expected)),
                    {},
                    false};
        }
        st = into.sink != nullptr ? net::RecvStream(fd, *into.sink, expected)
                                  : net::RecvAll(fd, receive.data(), expected);
        if (!st.ok()) {
            // A sink that refused bytes is our failure, not the connection's; either way the
            // stream is out of sync.
            return {st, {}, false};
        }
        return {Status::Ok(), Status::Ok()};
    }

    Result<net::Fd> Checkout(std::string_view address, bool* pooled, bool fresh) {
        if (!fresh) {
            std::lock_guard lock(mu_);
            auto it = idle_.find(address);
            while (it != idle_.end() && !it->second.empty()) {
                net::Fd fd = std::move(it->second.back());
                it->second.pop_back();
                // An idle connection has nothing to read: readable means the peer closed it.
                pollfd pfd{fd.get(), POLLIN, 0};
                if (::poll(&pfd, 1, 0) != 0) continue;
                *pooled = true;
                return fd;
            }
        }
        *pooled = false;
        auto hp = net::ParseHostPort(address);
        if (!hp.ok()) return hp.status();
        return net::ConnectTcp(*hp, options_.timeout);
    }

    void DropIdle(std::string_view address) {
        std::lock_guard lock(mu_);
        auto it = idle_.find(address);
        if (it != idle_.end()) it->second.clear();
    }

    void Return(std::string_view address, net::Fd fd) {
        std::lock_guard lock(mu_);
        auto& list = idle_[std::string(address)];
        if (list.size() < options_.max_idle_per_peer) list.push_back(std::move(fd));
    }

    const TcpTransportOptions options_;
    std::mutex mu_;
    std::map<std::string, std::vector<net::Fd>, std::less<>> idle_;  // GUARDED_BY(mu_)
};

}  // namespace

std::unique_ptr<DataTransport> NewTcpTransport(const TcpTransportOptions& options) {
    return std::make_unique<TcpTransport>(options);
}

}  // namespace mooncake
