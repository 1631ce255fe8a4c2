// TCP DataTransport: one request/response exchange per call on a pooled connection.
#include <poll.h>
#include <sys/uio.h>

#include <map>
#include <mutex>
#include <vector>

#include "net/data_protocol.h"
#include "net/data_transport.h"
#include "net/net.h"

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
        data::RequestHeader h;
        h.op = data::Op::kWrite;
        h.tier = Tier::kMemory;
        h.key_length = static_cast<uint32_t>(key.size());
        h.generation = generation;
        h.offset = offset;
        h.length = data.size();
        return Run(address, h, key, data, {});
    }

    Status Read(std::string_view address, Tier tier, std::string_view key, Generation generation,
                uint64_t offset, std::span<std::byte> out) override {
        data::RequestHeader h;
        h.op = data::Op::kRead;
        h.tier = tier;
        h.key_length = static_cast<uint32_t>(key.size());
        h.generation = generation;
        h.offset = offset;
        h.length = out.size();
        return Run(address, h, key, {}, out);
    }

private:
    Status Run(std::string_view address, const data::RequestHeader& h, std::string_view key,
               std::span<const std::byte> payload, std::span<std::byte> out) {
        MC_RETURN_IF_ERROR(ValidateKey(key));
        for (int attempt = 0;; ++attempt) {
            bool pooled = false;
            auto conn = Checkout(address, &pooled, /*fresh=*/attempt > 0);
            if (!conn.ok()) return conn.status();
            ExchangeResult r = Exchange(conn->get(), h, key, payload, out);
            if (r.transport.ok()) {
                if (r.reusable) Return(address, std::move(*conn));
                return r.server;
            }
            // A pooled connection may have been closed by the peer while idle: retry once, on
            // a new connection. The other idle ones to that peer are dropped too: when it has
            // restarted they are all dead, and a retry on one of them would fail the same way.
            // A timeout is a slow or stalled peer, not a dead connection: asking again would
            // double the caller's deadline.
            if (!pooled || attempt > 0 || r.transport.Is(StatusCode::kTimeout)) {
                return r.transport;
            }
            DropIdle(address);
        }
    }

    ExchangeResult Exchange(int fd, const data::RequestHeader& h, std::string_view key,
                            std::span<const std::byte> payload, std::span<std::byte> out) {
        data::RequestBytes header = data::SerializeRequest(h);
        iovec iov[3] = {{header.data(), header.size()},
                        {const_cast<char*>(key.data()), key.size()},
                        {const_cast<std::byte*>(payload.data()), payload.size()}};
        Status st = net::SendAll(fd, iov);
        if (!st.ok()) {
            // The node may have refused the request (oversized, say) and closed before taking
            // the payload: its answer is more useful than our send error.
            ExchangeResult answer = ReadResponse(fd, {});
            if (answer.transport.ok() && !answer.server.ok()) {
                answer.reusable = false;
                return answer;
            }
            return {st, {}, false};
        }
        return ReadResponse(fd, out);
    }

    // Reads a response; payload (if any) lands straight in `out`.
    static ExchangeResult ReadResponse(int fd, std::span<std::byte> out) {
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
        if (h->length != out.size()) {
            return {Status::IoError("data channel: response of " + std::to_string(h->length) +
                                    " bytes, expected " + std::to_string(out.size())),
                    {},
                    false};
        }
        st = net::RecvAll(fd, out.data(), out.size());
        if (!st.ok()) return {st, {}, false};
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
        auto fd = net::ConnectTcp(*hp, options_.timeout);
        if (!fd.ok()) return fd.status();
        data::RequestHeader hello;
        hello.op = data::Op::kHello;
        hello.length = options_.auth_token.size();
        ExchangeResult r = Exchange(fd->get(), hello, {},
                                    std::as_bytes(std::span(options_.auth_token)), {});
        if (!r.transport.ok()) return r.transport;
        if (!r.server.ok()) return r.server;
        return std::move(*fd);
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
