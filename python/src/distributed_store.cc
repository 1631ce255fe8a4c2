#include "python/src/distributed_store.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <limits>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <unordered_map>

#include "core/base/tenant.h"
#include "node/embedded_node.h"
#include "net/net.h"
#include "python/src/error_codes.h"
#include "python/src/host_mem_allocator.h"
#include "python/src/local_transport.h"
#include "python/src/range_sessions.h"
#include "python/src/shared_pool_transport.h"
#include "thrift/rpc_limits.h"
#include "spdlog/spdlog.h"
#include "thrift/auth_token.h"
#include "thrift/client.h"

namespace mooncake::py {
namespace {

// Mooncake picks the port of a hostname given without one in this range; callers check it.
constexpr uint16_t kPortLow = 12300;
constexpr uint16_t kPortHigh = 14300;  // the data channel takes port + 1, still in range
constexpr int kPortAttempts = 32;
constexpr int kDiskSlots = 64;  // embedded nodes sharing one ssd_offload_path

uint16_t RandomPort() {
    static Mutex mu;
    static std::mt19937 rng MC_GUARDED_BY(mu){std::random_device{}()};
    MutexLock lock(mu);
    return static_cast<uint16_t>(
        std::uniform_int_distribution<int>(kPortLow, kPortHigh - 1)(rng));
}

// True when HOST:port and HOST:port+1 (node service, data channel) can be bound now.
bool PortsFree(const std::string& host, uint16_t port) {
    for (uint16_t p : {port, static_cast<uint16_t>(port + 1)}) {
        if (!net::ListenTcp({host, p}).ok()) return false;
    }
    return true;
}

std::string EnvOr(const char* name, const std::string& fallback) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

// One multi-buffer value's buffers as pieces, in order; buffers that lie end to end in memory
// (a pool's adjacent pages) become one piece: fewer iovecs, one memcpy.
template <typename Byte>
std::vector<std::span<Byte>> PiecesOf(const std::vector<uintptr_t>& buffers,
                                      const std::vector<size_t>& sizes) {
    std::vector<std::span<Byte>> out;
    out.reserve(buffers.size());
    for (size_t j = 0; j < buffers.size(); ++j) {
        if (sizes[j] == 0) continue;
        auto* at = reinterpret_cast<Byte*>(buffers[j]);
        if (!out.empty() && out.back().data() + out.back().size() == at) {
            out.back() = std::span<Byte>(out.back().data(), out.back().size() + sizes[j]);
        } else {
            out.emplace_back(at, sizes[j]);
        }
    }
    return out;
}

}  // namespace

Result<uint64_t> ParseHumanSize(std::string_view text) {
    size_t i = 0;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    size_t start = i;
    while (i < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
        ++i;
    }
    std::string number(text.substr(start, i - start));
    std::string unit;
    for (; i < text.size(); ++i) {
        if (!std::isspace(static_cast<unsigned char>(text[i]))) {
            unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
        }
    }
    char* end = nullptr;
    double value = number.empty() ? -1 : std::strtod(number.c_str(), &end);
    if (number.empty() || end != number.c_str() + number.size() || value < 0) {
        return Status::InvalidArgument("'" + std::string(text) +
                                       "' is not a size (examples: 4096, 16MB, 1.5GB)");
    }
    int shift = -1;
    if (unit.empty() || unit == "b") shift = 0;
    else if (unit == "k" || unit == "kb" || unit == "kib") shift = 10;
    else if (unit == "m" || unit == "mb" || unit == "mib") shift = 20;
    else if (unit == "g" || unit == "gb" || unit == "gib") shift = 30;
    else if (unit == "t" || unit == "tb" || unit == "tib") shift = 40;
    if (shift < 0) {
        return Status::InvalidArgument("unknown size unit in '" + std::string(text) +
                                       "' (use B, KB, MB, GB or TB)");
    }
    double bytes = std::ldexp(value, shift);
    if (bytes >= 18446744073709551615.0) return Status::InvalidArgument("size is too large");
    return static_cast<uint64_t>(bytes);
}

struct DistributedStore::Session {
    SetupOptions options;
    // Node name -> id for ReplicateConfig's preferred segment (PreferredNodeLocked).
    Mutex node_ids_mu;
    std::unordered_map<std::string, NodeId> node_ids MC_GUARDED_BY(node_ids_mu);
    std::chrono::steady_clock::time_point node_ids_at MC_GUARDED_BY(node_ids_mu){};
    std::unique_ptr<EmbeddedNode> node;           // outlives the client's transport
    std::shared_ptr<LocalFirstTransport> transport;
    // The shared-pool layer under `transport` (owned by it), when set up with shared_pools.
    SharedPoolTransport* pools = nullptr;
    std::unique_ptr<Client> client;
    std::unique_ptr<RangeSessions> ranges;  // Mooncake's session API, over `client`
};

namespace {
Mutex live_mu;
std::set<DistributedStore*> live MC_GUARDED_BY(live_mu);  // every store not yet destroyed
}  // namespace

DistributedStore::DistributedStore() {
    MutexLock lock(live_mu);
    live.insert(this);
}

DistributedStore::~DistributedStore() {
    {
        MutexLock lock(live_mu);  // waits for a CloseAll that may be closing this one
        live.erase(this);
    }
    Close();
}

void DistributedStore::CloseAll() {
    MutexLock lock(live_mu);
    for (DistributedStore* store : live) store->Close();
}

bool DistributedStore::is_setup() const {
    ReaderLock lock(mu_);
    return session_ != nullptr;
}

int DistributedStore::Setup(const SetupOptions& options) {
    WriterLock lock(mu_);
    if (session_ != nullptr) {
        spdlog::error("MooncakeDistributedStore.setup: already set up (close() first)");
        return kInvalidParams;
    }
    auto session = std::make_unique<Session>();
    session->options = options;

    // HOST[:PORT]: without a port one is picked, as Mooncake does.
    std::string host = options.local_hostname.empty() ? "localhost" : options.local_hostname;
    std::optional<uint16_t> fixed_port;
    if (auto colon = host.rfind(':'); colon != std::string::npos && host.find(']') == std::string::npos) {
        auto hp = net::ParseHostPort(host);
        if (!hp.ok()) {
            spdlog::error("setup: local_hostname: {}", hp.status().message());
            return kInvalidParams;
        }
        host = hp->host;
        fixed_port = hp->port;
    }

    std::string token;
    if (auto t = ResolveClientToken(""); t.ok()) token = *t;

    uint16_t port = fixed_port.value_or(RandomPort());
    if (options.global_segment_size > 0) {
        EmbeddedNodeOptions node;
        node.master = options.master_server_addr;
        node.host = host;
        node.dram_size = options.global_segment_size;
        node.auth_token = token;
        node.disk_size = options.ssd_offload_size;
        if (options.enable_ssd_offload) {
            node.disk_dir =
                options.ssd_offload_path.empty()
                    ? EnvOr("MOONCAKE_OFFLOAD_FILE_STORAGE_PATH", "")
                    : options.ssd_offload_path;
            if (node.disk_dir.empty()) {
                spdlog::error("setup: enable_ssd_offload needs ssd_offload_path or "
                              "$MOONCAKE_OFFLOAD_FILE_STORAGE_PATH");
                return kInvalidParams;
            }
        }
        // Each embedded node keeps its LOCAL_DISK in a slot of the directory, <dir>/node-<i>:
        // the first slot no other node (of this process or another) holds. A process that
        // starts again on the same directory takes slot 0 again and recovers its objects.
        const std::string base_dir = node.disk_dir;
        int slot = 0;
        auto use_slot = [&](int i) -> Status {
            node.disk_dir = base_dir + "/node-" + std::to_string(i);
            std::error_code ec;
            std::filesystem::create_directories(node.disk_dir, ec);
            if (ec) return Status::IoError("cannot create " + node.disk_dir + ": " + ec.message());
            return Status::Ok();
        };
        Status last = base_dir.empty() ? Status::Ok() : use_slot(slot);
        if (!last.ok()) {
            spdlog::error("setup: {}", last.message());
            return ToMooncakeError(last);
        }
        for (int attempt = 0; attempt < (fixed_port ? 1 : kPortAttempts); ++attempt) {
            if (!fixed_port && !PortsFree(host, port)) {
                port = RandomPort();
                continue;
            }
            node.port = port;
            auto started = EmbeddedNode::Start(node);
            if (started.ok()) {
                session->node = std::move(*started);
                break;
            }
            last = started.status();
            if (last.Is(StatusCode::kBusy) && !base_dir.empty() && slot + 1 < kDiskSlots) {
                last = use_slot(++slot);  // that slot is held: the next one, same port
                if (!last.ok()) break;
                --attempt;
                continue;
            }
            if (last.Is(StatusCode::kUnavailable) || last.Is(StatusCode::kInvalidArgument) ||
                last.Is(StatusCode::kIllegalClient) || last.Is(StatusCode::kBusy) || fixed_port) {
                break;  // not a taken port
            }
            port = RandomPort();
        }
        if (session->node == nullptr && last.ok()) {
            last = Status::IoError("no free port pair in 12300..14300");
        }
        if (session->node == nullptr) {
            spdlog::error("setup: embedded node: {}", last.message());
            return ToMooncakeError(last) != 0 ? ToMooncakeError(last) : kInternalError;
        }
    }

    // With shared pools and a daemon on this host, the one-exchange by-key ops (bytes on the
    // data channel) are left out so every transfer can go through a pool; a daemon elsewhere
    // keeps them (its transfers go over TCP anyway).
    bool pools_by_key = true;
    if (options.shared_pools) {
        auto master = net::ParseHostPort(options.master_server_addr);
        pools_by_key = !(master.ok() && IsLocalHost(master->host));
        if (pools_by_key) {
            spdlog::warn("setup_dummy: {} is not on this host, so the store process cannot map "
                         "this process's pools: bytes go over TCP", options.master_server_addr);
        }
    }
    Result<std::unique_ptr<Client>> client = Status::Internal("not connected");
    for (int attempt = 0; attempt < 2; ++attempt) {
        TcpTransportOptions tcp;
        tcp.auth_token = token;
        std::unique_ptr<DataTransport> remote = NewTcpTransport(tcp);
        session->pools = nullptr;
        if (options.shared_pools) {
            auto pools = std::make_unique<SharedPoolTransport>(std::move(remote), token,
                                                               pools_by_key);
            session->pools = pools.get();
            remote = std::move(pools);
        }
        session->transport = std::make_shared<LocalFirstTransport>(
            std::move(remote), session->node ? &session->node->segment() : nullptr,
            session->node ? session->node->data_address() : "");
        ClientOptions client_options;
        client_options.auth_token = token;
        client_options.client_name = "python " + host + ":" + std::to_string(port);
        client_options.transport = session->transport;
        client_options.tenant = options.tenant_id;
        client = Client::Connect(options.master_server_addr, client_options);
        if (!client.ok()) {
            spdlog::error("setup: master {}: {}", options.master_server_addr,
                          client.status().message());
            return ToMooncakeError(client.status());
        }
        // A local standalone whose channel does not answer (an older daemon, another network
        // namespace) is better served with the by-key ops: connect again with them.
        const std::string& data = (*client)->standalone_data_address();
        if (pools_by_key || session->pools == nullptr || data.empty() ||
            session->pools->Reaches(data)) {
            break;
        }
        pools_by_key = true;
    }
    session->client = std::move(*client);
    session->ranges = std::make_unique<RangeSessions>(*session->client);
    if (session->pools != nullptr) {
        // Buffers registered before setup hand their pools now.
        MutexLock buffers(buffers_mu_);
        for (const auto& [address, size] : buffers_) {
            if (auto a = HostMemAllocator::Find(address)) {
                session->pools->AddPool(a->base, a->length, a->fd);
            }
        }
    }
    hostname_ = session->node ? session->node->name() : host + ":" + std::to_string(port);
    tenant_ = std::string(session->client->tenant());
    session_ = std::move(session);
    return kOK;
}

int DistributedStore::Close() {
    WriterLock lock(mu_);
    if (session_ == nullptr) return kOK;
    session_->ranges->AbandonAll();  // puts left open give their DRAM back now
    session_->ranges.reset();
    session_->client.reset();  // no call uses the node's segment any more
    if (session_->node) session_->node->Stop();  // leaves the master: its replicas are dropped
    session_.reset();
    return kOK;
}

#define MC_SESSION_OR(fail)               \
    ReaderLock lock(mu_);                 \
    if (session_ == nullptr) return fail; \
    Client& client = *session_->client

int DistributedStore::PutResult(const Status& st) {
    if (st.Is(StatusCode::kAlreadyExists)) return kOK;
    if (!st.ok()) spdlog::debug("put: {}", st.message());
    return ToMooncakeError(st);
}

int DistributedStore::Put(const std::string& key, const void* data, size_t size, bool staged,
                          const WritePlacement& preferred) {
    MC_SESSION_OR(kInvalidParams);
    (void)client;
    if (staged && size > session_->options.local_buffer_size) {
        // Mooncake stages such a put through its local buffer; a value that cannot fit fails.
        return kBufferOverflow;
    }
    if (!staged) {
        if (int rc = CheckCallerRange(reinterpret_cast<uintptr_t>(data), size, "put_from")) {
            return rc;
        }
    }
    const std::span<const std::byte> value(static_cast<const std::byte*>(data), size);
    return PutItemsLocked({{key, ConstPieces(&value, 1), preferred.GroupFor(0)}}, /*upsert=*/false,
                          preferred)[0];
}

int DistributedStore::Upsert(const std::string& key, const void* data, size_t size, bool staged,
                             const WritePlacement& preferred) {
    MC_SESSION_OR(kInvalidParams);
    (void)client;
    if (staged && size > session_->options.local_buffer_size) return kBufferOverflow;
    if (!staged) {
        if (int rc = CheckCallerRange(reinterpret_cast<uintptr_t>(data), size, "upsert_from")) {
            return rc;
        }
    }
    const std::span<const std::byte> value(static_cast<const std::byte*>(data), size);
    return PutItemsLocked({{key, ConstPieces(&value, 1), preferred.GroupFor(0)}}, /*upsert=*/true,
                          preferred)[0];
}

std::vector<int> DistributedStore::BatchPut(const std::vector<std::string>& keys,
                                            const std::vector<const void*>& data,
                                            const std::vector<size_t>& sizes, bool staged,
                                            const WritePlacement& preferred) {
    return BatchWrite(keys, data, sizes, staged, preferred, /*upsert=*/false);
}

std::vector<int> DistributedStore::BatchUpsert(const std::vector<std::string>& keys,
                                               const std::vector<const void*>& data,
                                               const std::vector<size_t>& sizes, bool staged,
                                               const WritePlacement& preferred) {
    return BatchWrite(keys, data, sizes, staged, preferred, /*upsert=*/true);
}

std::vector<int> DistributedStore::BatchWrite(const std::vector<std::string>& keys,
                                              const std::vector<const void*>& data,
                                              const std::vector<size_t>& sizes, bool staged,
                                              const WritePlacement& preferred, bool upsert) {
    const char* what = upsert ? "batch_upsert_from" : "batch_put_from";
    ReaderLock lock(mu_);
    if (session_ == nullptr) return std::vector<int>(keys.size(), kInvalidParams);
    if (data.size() != keys.size() || sizes.size() != keys.size()) {
        spdlog::error("{}: {} keys, {} buffers, {} sizes: the lists must match", what,
                      keys.size(), data.size(), sizes.size());
        return std::vector<int>(keys.size(), kInvalidParams);
    }
    if (!preferred.groups.empty() && preferred.groups.size() != keys.size()) {
        spdlog::error("{}: {} keys, {} group_ids: one group id per key", what, keys.size(),
                      preferred.groups.size());
        return std::vector<int>(keys.size(), kInvalidParams);
    }
    std::vector<int> out(keys.size(), kOK);
    std::vector<std::span<const std::byte>> values(keys.size());  // each value one piece
    std::vector<PiecesItem> items;
    std::vector<size_t> index;
    for (size_t i = 0; i < keys.size(); ++i) {
        if (staged && sizes[i] > session_->options.local_buffer_size) {
            out[i] = kBufferOverflow;
            continue;
        }
        if (!staged) {
            out[i] = CheckCallerRange(reinterpret_cast<uintptr_t>(data[i]), sizes[i], what);
            if (out[i] != kOK) continue;
        }
        values[i] = std::span(static_cast<const std::byte*>(data[i]), sizes[i]);
        items.push_back({keys[i], ConstPieces(&values[i], 1), preferred.GroupFor(i)});
        index.push_back(i);
    }
    std::vector<int> results = PutItemsLocked(items, upsert, preferred);
    for (size_t j = 0; j < results.size(); ++j) out[index[j]] = results[j];
    return out;
}

int DistributedStore::PutParts(const std::string& key,
                               const std::vector<std::span<const std::byte>>& parts,
                               const WritePlacement& preferred) {
    MC_SESSION_OR(kInvalidParams);
    (void)client;
    uint64_t total = 0;
    for (const auto& p : parts) total += p.size();
    if (total > session_->options.local_buffer_size) return kBufferOverflow;
    // The parts go as pieces of one value, with no join (Mooncake copies them into its local
    // buffer first; the bound above is kept as Mooncake's).
    return PutItemsLocked({{key, ConstPieces(parts), preferred.GroupFor(0)}}, /*upsert=*/false,
                          preferred)[0];
}

int DistributedStore::CheckPieces(const std::vector<uintptr_t>& buffers,
                                  const std::vector<size_t>& sizes, const char* op) const {
    if (buffers.empty() || buffers.size() != sizes.size()) {
        spdlog::error("{}: a key has {} buffers and {} sizes (at least one, and as many of each)",
                      op, buffers.size(), sizes.size());
        return kInvalidParams;
    }
    for (size_t j = 0; j < buffers.size(); ++j) {
        if (int rc = CheckCallerRange(buffers[j], sizes[j], op); rc != kOK) return rc;
    }
    return kOK;
}

std::vector<int> DistributedStore::BatchPutMulti(const std::vector<std::string>& keys,
                                                 const std::vector<std::vector<uintptr_t>>& buffers,
                                                 const std::vector<std::vector<size_t>>& sizes,
                                                 bool upsert, const WritePlacement& preferred) {
    const char* op = upsert ? "batch_upsert_from_multi_buffers" : "batch_put_from_multi_buffers";
    std::vector<int> out(keys.size(), kInvalidParams);
    if (buffers.size() != keys.size() || sizes.size() != keys.size()) {
        spdlog::error("{}: {} keys, {} buffer lists, {} size lists: the lists must match", op,
                      keys.size(), buffers.size(), sizes.size());
        return out;
    }
    if (!preferred.groups.empty() && preferred.groups.size() != keys.size()) {
        spdlog::error("{}: {} keys, {} group_ids: one group id per key", op, keys.size(),
                      preferred.groups.size());
        return out;
    }
    ReaderLock lock(mu_);
    if (session_ == nullptr) return out;
    // Every key's buffers are checked before a byte moves, then go to the node as they lie.
    std::vector<std::vector<std::span<const std::byte>>> pieces(keys.size());
    std::vector<PiecesItem> items;
    std::vector<size_t> index;
    for (size_t i = 0; i < keys.size(); ++i) {
        if ((out[i] = CheckPieces(buffers[i], sizes[i], op)) != kOK) continue;
        pieces[i] = PiecesOf<const std::byte>(buffers[i], sizes[i]);
        items.push_back({keys[i], ConstPieces(pieces[i]), preferred.GroupFor(i)});
        index.push_back(i);
    }
    std::vector<int> results = PutItemsLocked(items, upsert, preferred);
    for (size_t j = 0; j < results.size(); ++j) out[index[j]] = results[j];
    return out;
}

std::vector<int> DistributedStore::PutItemsLocked(const std::vector<PiecesItem>& items, bool upsert,
                                                  const WritePlacement& preferred) {
    std::vector<int> out(items.size(), kOK);
    if (items.empty()) return out;
    if (!WritesInOwnTenantLocked(preferred)) {
        std::fill(out.begin(), out.end(), kInvalidParams);
        return out;
    }
    Client& client = *session_->client;
    const NodeId node = PreferredNodeLocked(preferred.segment);
    const PutConfig config = ConfigLocked(preferred);
    if (!upsert && items.size() == 1) {  // one write that the node ends: no PutEnd round trip
        PutConfig pin = config;
        pin.group = std::string(items[0].group);
        out[0] = PutResult(client.PutPieces(items[0].key, items[0].value, node, pin));
        return out;
    }
    if (!upsert) {
        std::vector<Status> results = client.BatchPutPieces(items, node, config);
        for (size_t i = 0; i < out.size(); ++i) {
            out[i] = i < results.size() ? PutResult(results[i]) : kInternalError;
        }
        return out;
    }
    // Upsert: remove what is there (a missing key is fine), then put; a put that meets
    // AlreadyExists lost a race with another writer and goes round again, a bounded number
    // of times.
    constexpr int kUpsertRounds = 3;
    std::vector<size_t> pending(items.size());
    for (size_t i = 0; i < pending.size(); ++i) pending[i] = i;
    for (int round = 0; round < kUpsertRounds && !pending.empty(); ++round) {
        std::vector<std::string> keys;
        for (size_t i : pending) keys.emplace_back(items[i].key);
        std::vector<Status> removed = client.BatchRemove(keys, /*force=*/false);
        std::vector<PiecesItem> puts;
        std::vector<size_t> put_index;
        for (size_t j = 0; j < pending.size(); ++j) {
            const Status& st = j < removed.size() ? removed[j] : Status::Internal("no answer");
            if (!st.ok() && !st.Is(StatusCode::kNotFound)) {
                spdlog::debug("upsert {}: {}", items[pending[j]].key, st.message());
                out[pending[j]] = ToMooncakeError(st);
                continue;
            }
            puts.push_back(items[pending[j]]);
            put_index.push_back(pending[j]);
        }
        std::vector<Status> put =
            puts.empty() ? std::vector<Status>{} : client.BatchPutPieces(puts, node, config);
        pending.clear();
        for (size_t j = 0; j < put_index.size(); ++j) {
            const Status& st = j < put.size() ? put[j] : Status::Internal("no answer");
            if (st.Is(StatusCode::kAlreadyExists) && round + 1 < kUpsertRounds) {
                pending.push_back(put_index[j]);
                continue;
            }
            if (!st.ok()) spdlog::debug("upsert {}: {}", items[put_index[j]].key, st.message());
            out[put_index[j]] = ToMooncakeError(st);
        }
    }
    return out;
}

Result<std::string> DistributedStore::Get(const std::string& key) {
    MC_SESSION_OR(Status::InvalidArgument("the store is not set up"));
    return client.Get(key);
}

std::vector<Result<std::string>> DistributedStore::BatchGet(
    const std::vector<std::string>& keys) {
    ReaderLock lock(mu_);
    if (session_ == nullptr) {
        return std::vector<Result<std::string>>(keys.size(),
                                                Status::InvalidArgument("not set up"));
    }
    if (keys.empty()) return {};
    return session_->client->BatchGet(keys);
}

bool DistributedStore::WritesInOwnTenantLocked(const WritePlacement& preferred) const {
    if (preferred.tenant.empty() || preferred.tenant == tenant_) return true;
    spdlog::error("ReplicateConfig.tenant_id '{}' is not this store's tenant '{}': a store "
                  "writes only in the tenant it was set up in (setup's tenant_id)",
                  preferred.tenant, tenant_);
    return false;
}

PutConfig DistributedStore::ConfigLocked(const WritePlacement& preferred) {
    PutConfig config = preferred.pin;
    if (config.replicas > 1) {
        for (const std::string& segment : preferred.copy_segments) {
            config.copy_nodes.push_back(PreferredNodeLocked(segment));
        }
    }
    return config;
}

NodeId DistributedStore::PreferredNodeLocked(const std::string& name) {
    if (name.empty()) return kNoNode;
    Session& s = *session_;
    MutexLock lock(s.node_ids_mu);
    const auto now = std::chrono::steady_clock::now();
    auto it = s.node_ids.find(name);
    // A node that restarted registers under a new id: names are asked again every 30 s (and
    // on a miss, at most once a second). A stale id is only a hint the master ignores.
    if (it != s.node_ids.end() && now - s.node_ids_at < std::chrono::seconds(30)) {
        return it->second;
    }
    if (now - s.node_ids_at < std::chrono::seconds(1)) {
        return it != s.node_ids.end() ? it->second : kNoNode;
    }
    s.node_ids_at = now;
    auto nodes = s.client->Nodes();
    if (!nodes.ok()) {
        spdlog::debug("preferred segment {}: {}", name, nodes.status().message());
        return kNoNode;
    }
    s.node_ids.clear();
    for (const NodeInfo& n : *nodes) s.node_ids[n.spec.name] = n.id;
    it = s.node_ids.find(name);
    if (it == s.node_ids.end()) {
        spdlog::debug("preferred segment {} is no live node: the master allocates", name);
        return kNoNode;
    }
    return it->second;
}

int64_t DistributedStore::GetInto(const std::string& key, void* buffer, size_t size) {
    MC_SESSION_OR(kInvalidParams);
    (void)client;
    if (int rc = CheckCallerRange(reinterpret_cast<uintptr_t>(buffer), size, "get_into")) {
        return rc;
    }
    const std::span<std::byte> out(static_cast<std::byte*>(buffer), size);
    return GetIntoLocked({key}, {MutablePieces(&out, 1)})[0];
}

std::vector<int64_t> DistributedStore::BatchGetInto(const std::vector<std::string>& keys,
                                                    const std::vector<uintptr_t>& buffers,
                                                    const std::vector<size_t>& sizes) {
    std::vector<int64_t> out(keys.size(), kInvalidParams);
    if (buffers.size() != keys.size() || sizes.size() != keys.size()) {
        spdlog::error("batch_get_into: {} keys, {} buffers, {} sizes: the lists must match",
                      keys.size(), buffers.size(), sizes.size());
        return out;
    }
    MC_SESSION_OR(out);
    (void)client;
    std::vector<std::string> read_keys;
    std::vector<std::span<std::byte>> spans(keys.size());  // each buffer one piece
    std::vector<MutablePieces> outs;
    std::vector<size_t> index;
    for (size_t i = 0; i < keys.size(); ++i) {
        if ((out[i] = CheckCallerRange(buffers[i], sizes[i], "batch_get_into")) != kOK) continue;
        read_keys.push_back(keys[i]);
        spans[i] = std::span(reinterpret_cast<std::byte*>(buffers[i]), sizes[i]);
        outs.emplace_back(&spans[i], 1);
        index.push_back(i);
    }
    std::vector<int64_t> got = GetIntoLocked(read_keys, outs);
    for (size_t j = 0; j < got.size(); ++j) out[index[j]] = got[j];
    return out;
}

std::vector<int64_t> DistributedStore::BatchGetIntoMulti(
    const std::vector<std::string>& keys, const std::vector<std::vector<uintptr_t>>& buffers,
    const std::vector<std::vector<size_t>>& sizes) {
    constexpr const char* op = "batch_get_into_multi_buffers";
    std::vector<int64_t> out(keys.size(), kInvalidParams);
    if (buffers.size() != keys.size() || sizes.size() != keys.size()) {
        spdlog::error("{}: {} keys, {} buffer lists, {} size lists: the lists must match", op,
                      keys.size(), buffers.size(), sizes.size());
        return out;
    }
    MC_SESSION_OR(out);
    (void)client;
    // Every key's buffers are checked before a byte moves; the value then lands in them.
    std::vector<std::string> read_keys;
    std::vector<std::vector<std::span<std::byte>>> pieces(keys.size());
    std::vector<MutablePieces> outs;
    std::vector<size_t> index;
    for (size_t i = 0; i < keys.size(); ++i) {
        if ((out[i] = CheckPieces(buffers[i], sizes[i], op)) != kOK) continue;
        pieces[i] = PiecesOf<std::byte>(buffers[i], sizes[i]);
        read_keys.push_back(keys[i]);
        outs.emplace_back(pieces[i]);
        index.push_back(i);
    }
    std::vector<int64_t> got = GetIntoLocked(read_keys, outs);
    for (size_t j = 0; j < got.size(); ++j) out[index[j]] = got[j];
    return out;
}

std::vector<int64_t> DistributedStore::GetIntoLocked(const std::vector<std::string>& keys,
                                                     const std::vector<MutablePieces>& outs) {
    std::vector<int64_t> out(keys.size(), kInternalError);
    if (keys.empty()) return out;
    Client& client = *session_->client;
    if (keys.size() == 1) {
        auto n = client.GetIntoPieces(keys[0], outs[0]);
        out[0] = n.ok() ? static_cast<int64_t>(*n) : ToMooncakeError(n.status());
        return out;
    }
    std::vector<Result<uint64_t>> got = client.BatchGetIntoPieces(keys, outs);
    for (size_t i = 0; i < got.size() && i < out.size(); ++i) {
        out[i] = got[i].ok() ? static_cast<int64_t>(*got[i]) : ToMooncakeError(got[i].status());
    }
    return out;
}

// ---------------- Mooncake's session API (python/src/range_sessions.h) ----------------

namespace {

// Shapes of a key-major range call: one list of buffers, sizes and offsets per key, each
// list as long as its siblings. kOK or why not (logged).
int CheckRangeShapes(const char* op, size_t keys, const std::vector<std::vector<uintptr_t>>& buffers,
                     const std::vector<std::vector<size_t>>& sizes,
                     const std::vector<std::vector<uint64_t>>& offsets) {
    if (buffers.size() != keys || sizes.size() != keys || offsets.size() != keys) {
        spdlog::error("{}: {} keys, {} buffer lists, {} size lists, {} offset lists: one of each "
                      "per key",
                      op, keys, buffers.size(), sizes.size(), offsets.size());
        return kInvalidParams;
    }
    return kOK;
}

}  // namespace

std::vector<int> DistributedStore::BatchPutSessionStart(const std::vector<std::string>& keys,
                                                        const std::vector<uint64_t>& sizes,
                                                        const WritePlacement& preferred) {
    MC_SESSION_OR(std::vector<int>(keys.size(), kInvalidParams));
    (void)client;
    if (!WritesInOwnTenantLocked(preferred)) return std::vector<int>(keys.size(), kInvalidParams);
    if (!preferred.groups.empty() && preferred.groups.size() != keys.size()) {
        spdlog::error("batch_put_session_start: {} keys, {} group_ids: one group id per key",
                      keys.size(), preferred.groups.size());
        return std::vector<int>(keys.size(), kInvalidParams);
    }
    std::vector<std::string_view> groups(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) groups[i] = preferred.GroupFor(i);
    return session_->ranges->PutStart(keys, sizes, groups, PreferredNodeLocked(preferred.segment),
                                      ConfigLocked(preferred));
}

std::vector<int64_t> DistributedStore::BatchPutFromMultiBufferRanges(
    const std::vector<std::string>& keys, const std::vector<std::vector<uintptr_t>>& buffers,
    const std::vector<std::vector<size_t>>& sizes,
    const std::vector<std::vector<uint64_t>>& offsets) {
    constexpr const char* op = "batch_put_from_multi_buffer_ranges";
    std::vector<int64_t> out(keys.size(), kInvalidParams);
    if (CheckRangeShapes(op, keys.size(), buffers, sizes, offsets) != kOK) return out;
    MC_SESSION_OR(out);
    (void)client;
    // Every key's buffers checked before a byte is taken; a key with a bad one takes nothing.
    std::vector<std::string> taking;
    std::vector<std::vector<RangeSessions::PutRange>> ranges;
    std::vector<size_t> index;
    for (size_t i = 0; i < keys.size(); ++i) {
        if (offsets[i].size() != buffers[i].size()) continue;  // -600
        if ((out[i] = CheckPieces(buffers[i], sizes[i], op)) != kOK) continue;
        std::vector<RangeSessions::PutRange> key_ranges(buffers[i].size());
        for (size_t r = 0; r < buffers[i].size(); ++r) {
            key_ranges[r] = {offsets[i][r],
                             {reinterpret_cast<const std::byte*>(buffers[i][r]), sizes[i][r]}};
        }
        taking.push_back(keys[i]);
        ranges.push_back(std::move(key_ranges));
        index.push_back(i);
    }
    std::vector<int64_t> taken = session_->ranges->PutRanges(taking, ranges);
    for (size_t j = 0; j < index.size(); ++j) out[index[j]] = taken[j];
    return out;
}

std::vector<int> DistributedStore::BatchPutSessionEnd(const std::vector<std::string>& keys) {
    MC_SESSION_OR(std::vector<int>(keys.size(), kInvalidParams));
    (void)client;
    return session_->ranges->PutEnd(keys);
}

std::vector<int> DistributedStore::BatchPutSessionRevoke(const std::vector<std::string>& keys) {
    MC_SESSION_OR(std::vector<int>(keys.size(), kInvalidParams));
    (void)client;
    return session_->ranges->PutRevoke(keys);
}

std::vector<int> DistributedStore::BatchGetSessionStart(const std::vector<std::string>& keys,
                                                        std::vector<std::optional<Tier>>* sources) {
    if (sources != nullptr) sources->assign(keys.size(), std::nullopt);
    MC_SESSION_OR(std::vector<int>(keys.size(), kInvalidParams));
    (void)client;
    return session_->ranges->GetStart(keys, sources);
}

std::vector<int64_t> DistributedStore::BatchGetIntoMultiBufferRanges(
    const std::vector<std::string>& keys, const std::vector<std::vector<uintptr_t>>& buffers,
    const std::vector<std::vector<size_t>>& sizes,
    const std::vector<std::vector<uint64_t>>& offsets) {
    constexpr const char* op = "batch_get_into_multi_buffer_ranges";
    std::vector<int64_t> out(keys.size(), kInvalidParams);
    if (CheckRangeShapes(op, keys.size(), buffers, sizes, offsets) != kOK) return out;
    MC_SESSION_OR(out);
    (void)client;
    // Every key's buffers checked before a byte lands; the ranges then land in them directly.
    std::vector<std::string> reading;
    std::vector<std::vector<Client::ValueRange>> ranges;
    std::vector<size_t> index;
    for (size_t i = 0; i < keys.size(); ++i) {
        if (offsets[i].size() != buffers[i].size()) continue;  // -600
        if ((out[i] = CheckPieces(buffers[i], sizes[i], op)) != kOK) continue;
        std::vector<Client::ValueRange> key_ranges(buffers[i].size());
        for (size_t r = 0; r < buffers[i].size(); ++r) {
            key_ranges[r] = {offsets[i][r],
                             {reinterpret_cast<std::byte*>(buffers[i][r]), sizes[i][r]}};
        }
        reading.push_back(keys[i]);
        ranges.push_back(std::move(key_ranges));
        index.push_back(i);
    }
    std::vector<int64_t> got = session_->ranges->GetRanges(reading, ranges);
    for (size_t j = 0; j < index.size(); ++j) out[index[j]] = got[j];
    return out;
}

int DistributedStore::BatchGetSessionEnd(const std::vector<std::string>& keys) {
    MC_SESSION_OR(kInvalidParams);
    (void)client;
    return session_->ranges->GetEnd(keys);
}

std::vector<std::vector<std::vector<int64_t>>> DistributedStore::GetIntoRanges(
    const std::vector<uintptr_t>& buffers, const std::vector<std::vector<std::string>>& keys,
    const std::vector<std::vector<std::vector<uint64_t>>>& dst,
    const std::vector<std::vector<std::vector<uint64_t>>>& src,
    const std::vector<std::vector<std::vector<uint64_t>>>& sizes) {
    std::vector<std::vector<std::vector<int64_t>>> out(buffers.size());
    ReaderLock lock(mu_);
    // Every (buffer, key) entry whose ranges fit its registered buffer becomes one item of a
    // single Client::BatchGetRanges: each range read from its replica straight into the
    // buffer (no copy of the value here), the ranges of all entries pipelined together.
    std::vector<std::string> read_keys;
    std::vector<std::vector<Client::ValueRange>> read_ranges;
    std::vector<std::pair<size_t, size_t>> entry_of;  // read_keys[e] is keys[b][k]
    for (size_t b = 0; b < buffers.size(); ++b) {
        bool shape_ok = b < keys.size() && b < dst.size() && b < src.size() && b < sizes.size() &&
                        keys[b].size() == dst[b].size() && keys[b].size() == src[b].size() &&
                        keys[b].size() == sizes[b].size();
        size_t nkeys = b < keys.size() ? keys[b].size() : 0;
        out[b].resize(nkeys);
        std::optional<uintptr_t> end = RegisteredEnd(buffers[b]);
        for (size_t k = 0; k < nkeys; ++k) {
            std::vector<int64_t>& result = out[b][k];
            if (!shape_ok || dst[b][k].size() != src[b][k].size() ||
                dst[b][k].size() != sizes[b][k].size()) {
                result.push_back(kInvalidParams);
                continue;
            }
            size_t nranges = dst[b][k].size();
            if (nranges == 0) continue;
            if (session_ == nullptr || !end) {  // not set up, or not a registered buffer
                result.assign(nranges, kInvalidParams);
                continue;
            }
            const uint64_t capacity = *end - buffers[b];
            result.assign(nranges, 0);
            std::vector<Client::ValueRange> ranges(nranges);
            for (size_t r = 0; r < nranges; ++r) {
                uint64_t d = dst[b][k][r], n = sizes[b][k][r];
                if (d > capacity || n > capacity - d) {
                    result[r] = kInvalidParams;  // left empty below: nothing read for it
                    continue;
                }
                ranges[r].offset = src[b][k][r];
                ranges[r].out = std::span(reinterpret_cast<std::byte*>(buffers[b] + d), n);
            }
            read_keys.push_back(keys[b][k]);
            read_ranges.push_back(std::move(ranges));
            entry_of.emplace_back(b, k);
        }
    }
    if (read_keys.empty()) return out;
    std::vector<std::vector<Status>> got = session_->client->BatchGetRanges(read_keys, read_ranges);
    for (size_t e = 0; e < got.size(); ++e) {
        std::vector<int64_t>& result = out[entry_of[e].first][entry_of[e].second];
        for (size_t r = 0; r < got[e].size() && r < result.size(); ++r) {
            if (result[r] == kInvalidParams) continue;
            result[r] = got[e][r].ok() ? static_cast<int64_t>(read_ranges[e][r].out.size())
                                       : ToMooncakeError(got[e][r]);
        }
    }
    return out;
}

int64_t DistributedStore::GetSize(const std::string& key) {
    MC_SESSION_OR(kInvalidParams);
    auto info = client.Stat(key);
    if (!info.ok()) return ToMooncakeError(info.status());
    if (!info->object.HasComplete(Tier::kMemory) && !info->object.HasComplete(Tier::kLocalDisk)) {
        return kReplicaIsNotReady;
    }
    return static_cast<int64_t>(info->object.size);
}

int DistributedStore::IsExist(const std::string& key, bool prefetch) {
    MC_SESSION_OR(kInvalidParams);
    // ExistOptions.prefetch_to_memory: the master reads a LOCAL_DISK-only key as a Get
    // would, so its promotion trigger (admission gate included) decides, as for a read.
    auto e = client.Exists(key, prefetch);
    if (!e.ok()) return ToMooncakeError(e.status());
    return *e ? 1 : 0;
}

std::vector<int> DistributedStore::BatchIsExist(const std::vector<std::string>& keys,
                                                bool prefetch) {
    ReaderLock lock(mu_);
    if (session_ == nullptr) return std::vector<int>(keys.size(), kInvalidParams);
    if (keys.empty()) return {};
    std::vector<Result<bool>> found = session_->client->BatchExists(keys, prefetch);
    std::vector<int> out(keys.size(), kInternalError);
    for (size_t i = 0; i < keys.size() && i < found.size(); ++i) {
        out[i] = found[i].ok() ? (*found[i] ? 1 : 0) : ToMooncakeError(found[i].status());
    }
    return out;
}

namespace {

std::vector<ReplicaInfo> ReplicaInfos(const ObjectInfo& info) {
    std::vector<ReplicaInfo> out;
    for (size_t i = 0; i < info.object.replicas.size(); ++i) {
        const ReplicaDesc& r = info.object.replicas[i];
        ReplicaInfo d;
        d.tier = r.tier;
        d.state = r.state;
        d.size = info.object.size;
        if (i < info.locations.size()) d.node = info.locations[i].node_name;
        out.push_back(std::move(d));
    }
    return out;
}

}  // namespace

Result<std::vector<ReplicaInfo>> DistributedStore::GetReplicaDesc(const std::string& key) {
    MC_SESSION_OR(Status::InvalidArgument("the store is not set up"));
    auto info = client.GetReplicaList(key);
    if (!info.ok()) return info.status();
    return ReplicaInfos(*info);
}

std::vector<Result<std::vector<ReplicaInfo>>> DistributedStore::BatchGetReplicaDesc(
    const std::vector<std::string>& keys) {
    using Descs = Result<std::vector<ReplicaInfo>>;
    ReaderLock lock(mu_);
    if (session_ == nullptr) {
        return std::vector<Descs>(keys.size(), Status::InvalidArgument("the store is not set up"));
    }
    std::vector<Descs> out;
    out.reserve(keys.size());
    if (keys.empty()) return out;
    // One round trip per rpc::kMaxBatchKeys keys (the most one call may carry).
    for (size_t i = 0; i < keys.size(); i += rpc::kMaxBatchKeys) {
        std::span<const std::string> chunk(keys.data() + i,
                                           std::min(rpc::kMaxBatchKeys, keys.size() - i));
        for (Result<ObjectInfo>& info : session_->client->BatchGetReplicaList(chunk)) {
            out.push_back(info.ok() ? Descs(ReplicaInfos(*info)) : Descs(info.status()));
        }
    }
    return out;
}

int DistributedStore::Remove(const std::string& key, bool force) {
    MC_SESSION_OR(kInvalidParams);
    return ToMooncakeError(client.Remove(key, force));
}

std::vector<int> DistributedStore::BatchRemove(const std::vector<std::string>& keys, bool force) {
    ReaderLock lock(mu_);
    if (session_ == nullptr) return std::vector<int>(keys.size(), kInvalidParams);
    if (keys.empty()) return {};
    std::vector<Status> removed = session_->client->BatchRemove(keys, force);
    std::vector<int> out(keys.size(), kInternalError);
    for (size_t i = 0; i < out.size() && i < removed.size(); ++i) {
        out[i] = ToMooncakeError(removed[i]);
    }
    return out;
}

int64_t DistributedStore::RemoveByRegex(const std::string& pattern, bool force) {
    MC_SESSION_OR(kInvalidParams);
    std::regex re;
    try {
        re = std::regex(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
        spdlog::error("remove_by_regex: bad pattern '{}': {}", pattern, e.what());
        return kInvalidParams;
    }
    ListOptions list;
    auto all = client.ListAll(list);
    if (!all.ok()) return ToMooncakeError(all.status());
    std::vector<std::string> matched;
    for (const ObjectInfo& o : *all) {
        if (std::regex_search(o.object.key, re)) matched.push_back(o.object.key);
    }
    int64_t removed = 0;
    constexpr size_t kChunk = 1000;
    for (size_t i = 0; i < matched.size(); i += kChunk) {
        std::span<const std::string> chunk(matched.data() + i,
                                           std::min(kChunk, matched.size() - i));
        for (const Status& st : client.BatchRemove(chunk, force)) removed += st.ok() ? 1 : 0;
    }
    return removed;
}

int64_t DistributedStore::RemoveAll(bool force) {
    MC_SESSION_OR(kInvalidParams);
    auto r = client.RemoveByPrefix("", force);
    if (!r.ok()) return ToMooncakeError(r.status());
    return static_cast<int64_t>(r->removed);
}

uintptr_t DistributedStore::CoveredTo(uintptr_t at) const {
    uintptr_t reach = 0;
    for (auto it = buffers_.upper_bound(at); it != buffers_.begin();) {
        --it;
        if (at - it->first >= longest_buffer_) break;  // this one and all before end by `at`
        reach = std::max<uintptr_t>(reach, it->first + it->second);
    }
    return reach > at ? reach : 0;
}

std::optional<uintptr_t> DistributedStore::RegisteredEndLocked(uintptr_t address,
                                                               uintptr_t need) const {
    uintptr_t reach = CoveredTo(address);
    if (reach == 0) return std::nullopt;
    // Buffers registered end to end (or overlapping, or nested) count as one region.
    while (reach < need) {
        uintptr_t more = CoveredTo(reach);
        if (more == 0) break;
        reach = more;
    }
    return reach;
}

std::optional<uintptr_t> DistributedStore::RegisteredEnd(uintptr_t address) const {
    MutexLock lock(buffers_mu_);
    return RegisteredEndLocked(address, std::numeric_limits<uintptr_t>::max());
}

int DistributedStore::CheckCallerRange(uintptr_t address, size_t size, const char* op) const {
    if (size == 0) return kOK;  // nothing moves
    if (address == 0) {
        spdlog::error("{}: a null buffer pointer for {} bytes", op, size);
        return kInvalidParams;
    }
    if (size > std::numeric_limits<uintptr_t>::max() - address) {
        spdlog::error("{}: {} bytes at {:#x} wrap around the address space", op, size, address);
        return kInvalidParams;
    }
    const uintptr_t end = address + size;
    MutexLock lock(buffers_mu_);
    if (std::optional<uintptr_t> reach = RegisteredEndLocked(address, end)) {
        if (end <= *reach) return kOK;
        spdlog::error(
            "{}: {} bytes at {:#x} run {} bytes past the registered memory, which "
            "ends at {:#x} (register_buffer)",
            op, size, address, end - *reach, *reach);
        return kInvalidParams;
    }
    auto next = buffers_.upper_bound(address);  // the first buffer starting after address
    if (next != buffers_.end() && next->first < end) {
        spdlog::error("{}: {} bytes at {:#x} run into the registered buffer {:#x} of {} bytes", op,
                      size, address, next->first, next->second);
        return kInvalidParams;
    }
    return kOK;  // no registered buffer: the caller vouches for this memory
}

int DistributedStore::RegisterBuffer(uintptr_t address, size_t size) {
    if (address == 0 || size == 0) return kInvalidParams;
    ReaderLock session(mu_);
    MutexLock lock(buffers_mu_);
    buffers_[address] = size;
    longest_buffer_ = std::max(longest_buffer_, size);
    if (session_ != nullptr && session_->pools != nullptr) {
        if (auto a = HostMemAllocator::Find(address)) {
            session_->pools->AddPool(a->base, a->length, a->fd);
        }
    }
    return kOK;
}

int DistributedStore::UnregisterBuffer(uintptr_t address) {
    ReaderLock session(mu_);
    MutexLock lock(buffers_mu_);
    if (buffers_.erase(address) == 0) return kInvalidParams;
    if (session_ != nullptr && session_->pools != nullptr) {
        // The pool goes back when no registered buffer is left inside it.
        if (auto a = HostMemAllocator::Find(address)) {
            auto next = buffers_.lower_bound(a->base);
            if (next == buffers_.end() || next->first >= a->base + a->length) {
                session_->pools->DropPool(a->base);
            }
        }
    }
    return kOK;
}

uint64_t DistributedStore::shared_pool_transfers() const {
    ReaderLock lock(mu_);
    return session_ && session_->pools ? session_->pools->shm_transfers() : 0;
}

std::string DistributedStore::hostname() const {
    ReaderLock lock(mu_);
    return hostname_;
}

int DistributedStore::HealthCheck() {
    MC_SESSION_OR(kInvalidParams);
    auto nodes = client.Nodes();
    if (!nodes.ok()) return ToMooncakeError(nodes.status());
    return kOK;
}

uint64_t DistributedStore::offload_rpc_read_count() const {
    ReaderLock lock(mu_);
    return session_ ? session_->transport->local_disk_reads() : 0;
}

}  // namespace mooncake::py
