// SharedPoolTransport: the data transport of a store set up with setup_dummy. For a transfer
// whose bytes all lie in host pools this process handed to the node (MooncakeHostMemAllocator
// memory given to register_buffer), it asks the node, over the shared-pool channel
// (net/shm_channel.h), to copy between its segment or disk and the pool itself: the request
// names (pool, offset, length), not the bytes. Anything else goes to the wrapped transport
// (the data channel, TCP) unchanged.
//
// A node is reached this way only when its data address is on this host (a loopback address
// or one of this host's interface addresses) and its channel answers; otherwise that node is
// served over TCP, said once in the log per address. A pool is handed to the node on each
// channel connection that first needs it (the node maps it per connection: a pool is usable
// only by the connections of the process that handed it). Forgetting a pool (unregister_buffer,
// free) closes the connections that handed it, and the node unmaps it; so do close() and the
// process's end.
//
// Writes over the channel do not end the put (*ended false): the client sends PutEnd itself.
// By-key exchanges (one-exchange Get and small Put) carry bytes on the data channel, so a
// transport made with by_key false tells the client it has none, and the client takes the
// two-step path, whose bytes this transport can move through the pool.
//
// Thread-safety: safe from many threads at once; each transfer holds a connection of its own.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/base/mutex.h"
#include "net/data_transport.h"
#include "net/net.h"

namespace mooncake {

namespace shm {
struct Piece;
}

// True when `host` names this machine: loopback, or an address of one of its interfaces
// (a name is resolved first). What decides whether a node can map this process's pools.
bool IsLocalHost(const std::string& host);

class SharedPoolTransport final : public DataTransport {
public:
    SharedPoolTransport(std::unique_ptr<DataTransport> tcp, std::string auth_token, bool by_key);
    ~SharedPoolTransport() override;

    // The pool [base, base + length) with memfd `fd` (duplicated; the caller keeps its own).
    // Idempotent for a base already known.
    void AddPool(uintptr_t base, uint64_t length, int fd) MC_EXCLUDES(mu_);
    // Stops using the pool at `base`: the connections that handed it are closed (now, or when
    // the transfer on them ends), so the node unmaps it.
    void DropPool(uintptr_t base) MC_EXCLUDES(mu_);
    // Whether transfers to the node at data `address` can go through pools (local and its
    // channel answers a hello). Logs why not, once per address.
    bool Reaches(const std::string& address) MC_EXCLUDES(mu_);
    uint64_t shm_transfers() const;

    bool HasByKey() const override { return by_key_ && tcp_->HasByKey(); }
    // A node on this host whose channel has not failed (Reaches without its hello); the
    // host looked up once per address, never logged.
    bool IsNear(std::string_view address) override MC_EXCLUDES(mu_);

    Status WriteMemory(std::string_view address, std::string_view key, Generation generation,
                       uint64_t offset, std::span<const std::byte> data) override;
    Status WriteMemoryPieces(std::string_view address, std::string_view key, Generation generation,
                             uint64_t offset, ConstPieces data) override;
    Status WriteMemoryEndingPut(std::string_view address, std::string_view key,
                                Generation generation, uint64_t offset,
                                std::span<const std::byte> data, ClientId client,
                                bool* ended) override;
    Status WriteMemoryPiecesEndingPut(std::string_view address, std::string_view key,
                                      Generation generation, uint64_t offset, ConstPieces data,
                                      ClientId client, bool* ended) override;
    Status Read(std::string_view address, Tier tier, std::string_view key, Generation generation,
                uint64_t offset, std::span<std::byte> out) override;
    Status ReadPieces(std::string_view address, Tier tier, std::string_view key,
                      Generation generation, uint64_t offset, MutablePieces out) override;

    // Streams and by-key exchanges carry bytes on the data channel: the wrapped transport's.
    Status WriteMemoryFrom(std::string_view address, std::string_view key, Generation generation,
                           uint64_t offset, uint64_t length, ByteSource& source) override;
    Status WriteMemoryFromEndingPut(std::string_view address, std::string_view key,
                                    Generation generation, uint64_t offset, uint64_t length,
                                    ByteSource& source, ClientId client, bool* ended) override;
    Status ReadTo(std::string_view address, Tier tier, std::string_view key,
                  Generation generation, uint64_t offset, uint64_t length,
                  ByteSink& sink) override;
    Result<uint64_t> ReadByKey(
        std::string_view address, std::string_view key, uint64_t max_size,
        const std::function<std::span<std::byte>(uint64_t size)>& buffer_for,
        Tier* served_from) override;
    Result<uint64_t> ReadByKeyInto(std::string_view address, std::string_view key,
                                   std::span<std::byte> out, Tier* served_from) override;
    Status PutByKey(std::string_view address, std::string_view key, ClientId client,
                    std::span<const std::byte> value, bool* sent) override;
    Status PutPiecesByKey(std::string_view address, std::string_view key, ClientId client,
                          ConstPieces value, bool* sent) override;
    Result<uint64_t> ReadByKeyIntoPieces(std::string_view address, std::string_view key,
                                         MutablePieces out, Tier* served_from) override;

private:
    struct Pool {
        uint64_t id;  // unique in this transport: a base reused after free is another pool
        uint64_t length;
        std::shared_ptr<net::Fd> fd;
    };
    struct Conn {
        net::Fd fd;
        std::set<uint64_t> pools;  // the pool ids handed on it
    };
    struct Channel {
        bool usable = false;  // decided once: local and its channel answered
        uint16_t port = 0;
        std::vector<Conn> idle;
    };
    struct Transfer;  // one request's pools and pieces

    // The pieces as pool pieces, or false when one is not wholly inside a known pool.
    bool ToPoolPieces(const std::vector<std::pair<uintptr_t, uint64_t>>& spans, Transfer& out)
        MC_EXCLUDES(mu_);
    // Runs `t` on a connection to `address`; nullopt when that node is not reached through
    // pools (the caller sends over TCP).
    std::optional<Status> Run(std::string_view address, const Transfer& t) MC_EXCLUDES(mu_);
    std::optional<Status> TryWrite(std::string_view address, std::string_view key,
                                   Generation generation, uint64_t offset, ConstPieces data);
    std::optional<Status> TryRead(std::string_view address, Tier tier, std::string_view key,
                                  Generation generation, uint64_t offset, MutablePieces out);
    Channel& ChannelLocked(const std::string& address) MC_REQUIRES(mu_);
    // A connection to `address` (idle or new), or nullopt when that node is not reached
    // through pools; Release gives it back.
    std::optional<Conn> Acquire(const std::string& address) MC_EXCLUDES(mu_);
    void Release(const std::string& address, Conn conn) MC_EXCLUDES(mu_);
    // Hands pool `id` on `conn` unless it was already.
    Status Hand(const std::string& address, Conn& conn, uint64_t id, const Pool& pool);
    // Hands pool `id` to every node reached so far.
    void Offer(uint64_t id, const Pool& pool) MC_EXCLUDES(mu_);
    Result<Conn> Open(uint16_t port);

    const std::unique_ptr<DataTransport> tcp_;
    const std::string auth_token_;
    const bool by_key_;
    Mutex mu_;
    std::map<uintptr_t, Pool> pools_ MC_GUARDED_BY(mu_);  // by base address
    uint64_t next_pool_id_ MC_GUARDED_BY(mu_) = 1;
    std::map<std::string, Channel, std::less<>> channels_ MC_GUARDED_BY(mu_);
    // IsNear's answers for addresses with no channel yet: on this host or not.
    std::map<std::string, bool, std::less<>> near_ MC_GUARDED_BY(mu_);
    std::atomic<uint64_t> shm_transfers_{0};
};

// Every live SharedPoolTransport drops the pool at `base` (MooncakeHostMemAllocator.free).
void ForgetSharedPool(uintptr_t base);

}  // namespace mooncake
