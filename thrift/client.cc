#include "thrift/client.h"

#include <algorithm>
#include <deque>
#include <thread>

#include "MasterService.h"
#include "core/base/tenant.h"
#include "net/read_rounds.h"
#include "thrift/convert.h"
#include "thrift/fan_out.h"
#include "thrift/master_channel.h"
#include "thrift/rpc_limits.h"
#include "thrift/scoped_transport.h"

namespace mooncake {

size_t FirstReachableReplica(const ObjectInfo& info) {
    const ObjectView& v = info.object;
    size_t r = 0;
    while (r < v.replicas.size() && (v.replicas[r].state != ReplicaState::kComplete ||
                                     info.locations[r].data_address.empty())) {
        ++r;
    }
    return r;
}

namespace {

ObjectInfo FromWireInfo(const rpc::ObjectInfo& wire) {
    ObjectInfo out;
    out.object = rpc::FromWire(wire);
    out.locations.reserve(wire.replicas.size());
    for (const rpc::Replica& r : wire.replicas) {
        out.locations.push_back({r.node_name, r.data_address});
    }
    return out;
}

// A read's replica list, in the order a reader with `transport` tries it (PreferNearMemoryCopy).
ObjectInfo ForReading(const rpc::ObjectInfo& wire, DataTransport& transport) {
    ObjectInfo info = FromWireInfo(wire);
    PreferNearMemoryCopy(info.object.replicas, info.locations, [&](const ReplicaLocation& l) {
        return transport.IsNear(l.data_address);
    });
    return info;
}

std::vector<KnobInfo> FromWireKnobs(const std::vector<rpc::KnobInfo>& wire) {
    std::vector<KnobInfo> out;
    out.reserve(wire.size());
    for (const rpc::KnobInfo& k : wire) {
        out.push_back({k.name, k.value, k.default_value, k.range, k.type, k.tunable, k.doc});
    }
    return out;
}

std::vector<KeyOutcome> FromWireManual(const std::vector<rpc::ManualResult>& wire) {
    std::vector<KeyOutcome> out;
    out.reserve(wire.size());
    for (const rpc::ManualResult& r : wire) {
        KeyOutcome o{r.key, rpc::FromOutcome(r.outcome), std::nullopt};
        if (o.status.ok() && r.__isset.result) o.outcome = rpc::FromWire(r.result);
        out.push_back(std::move(o));
    }
    return out;
}

Status CheckBatch(size_t n) {
    if (n > rpc::kMaxBatchKeys) {
        return Status::InvalidArgument("a batch holds at most " +
                                       std::to_string(rpc::kMaxBatchKeys) + " keys");
    }
    return Status::Ok();
}

// A batch of by-key ops: each item is one exchange already, so the batch is those singles,
// `width` at a time. `placeholder` fills the results first (a Result has no default value).
template <typename R, typename Single>
std::vector<R> EachByKey(FanOut& fan_out, size_t width, size_t n, R placeholder, Single single) {
    std::vector<R> out(n, std::move(placeholder));
    if (Status st = CheckBatch(n); !st.ok()) {
        std::fill(out.begin(), out.end(), R(st));
        return out;
    }
    fan_out.Run(n, width, [&](size_t i) { out[i] = single(i); });
    return out;
}

// A by-key put (one exchange) is refused only after its bytes were sent, so it is used for
// values up to this size; a larger one asks the master first (PutStart checks size and room
// before a byte moves), and the saved round trip would be a small share of its time anyway.
constexpr uint64_t kByKeyPutMaxBytes = 1ull << 20;

// A by-key read that could not be served there (the daemon's data channel unreachable, or not
// serving by-key ops any more): the two-step path asks the master, which knows where to read.
bool ByKeyUnreachable(const Status& st) { return st.Is(StatusCode::kUnavailable); }

// A pipelined batch to one node moves on one connection up to this many bytes; a larger one
// is cut into parts (run batch_parallelism at a time) on connections of their own, so that the node's
// connection threads copy in parallel. Measured on the 2-core VM (bench/results/
// batch-exchange.md): with 4 MiB per stream a 32 x 64 KiB put went on one connection and lost
// to the earlier 4-wide single puts (one server thread copies and does the master's part per
// key); with 512 KiB it goes as 4 pipelined streams of 8. Small values (a 32 x 4 KiB batch)
// stay one stream, where the saved round trips are worth more than a second core.
constexpr uint64_t kBytesPerPipeline = 512ull << 10;

uint64_t OpBytes(const BatchOp& op) {
    return std::max(PiecesSize(op.send), PiecesSize(op.receive));
}

}  // namespace

Client::Client(std::unique_ptr<MasterChannel> channel, std::shared_ptr<DataTransport> transport,
               size_t batch_parallelism)
    : channel_(std::move(channel)),
      transport_(std::move(transport)),
      by_key_address_(transport_->HasByKey() ? channel_->by_key_data_address() : std::string()),
      batch_width_(std::max<size_t>(1, batch_parallelism)),
      fan_out_(std::make_unique<FanOut>(batch_width_ - 1)) {}

Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::Connect(std::string_view master,
                                                const ClientOptions& options) {
    RpcOptions rpc;
    rpc.connect_timeout = options.connect_timeout;
    rpc.rpc_timeout = options.rpc_timeout;
    rpc.retries = options.retries;
    rpc.auth_token = options.auth_token;
    rpc.client_name = options.client_name;
    rpc.cluster_id = options.cluster_id;
    rpc.tenant = options.tenant;
    if (Status st = KeyScope::Make(options.tenant).status(); !st.ok()) return st;
    auto channel = MasterChannel::Connect(master, rpc);
    if (!channel.ok()) return channel.status();
    // The data channel names keys as stored: in the tenant the master says the session is in
    // (a tenant's token implies its tenant when none was asked for).
    Result<KeyScope> scope = KeyScope::Make((*channel)->tenant());
    if (!scope.ok()) return scope.status();
    std::shared_ptr<DataTransport> transport = options.transport;
    if (transport == nullptr) {
        TcpTransportOptions tcp;
        tcp.timeout = options.data_timeout;
        tcp.auth_token = options.auth_token;
        // Every caller thread and batch worker holds a connection per node while it transfers;
        // keeping fewer idle than that closes and reopens connections (a connect and a Hello
        // round trip each) whenever the load dips, as it does between two batches of 16 threads.
        tcp.max_idle_per_peer = std::max<size_t>(tcp.max_idle_per_peer, 64);
        transport = NewTcpTransport(tcp);
    }
    transport = ScopeTransport(std::move(transport), *scope);
    return std::unique_ptr<Client>(
        new Client(std::move(*channel), std::move(transport), options.batch_parallelism));
}

const std::string& Client::master() const { return channel_->address(); }
const std::string& Client::server_role() const { return channel_->server_role(); }
std::string_view Client::tenant() const {
    return channel_->tenant().empty() ? kDefaultTenant : std::string_view(channel_->tenant());
}
const std::string& Client::standalone_data_address() const {
    return channel_->by_key_data_address();
}
int64_t Client::client_id() const { return channel_->client_id(); }

// ---------------- objects ----------------

Status Client::Put(std::string_view key, std::span<const std::byte> value, NodeId preferred,
                   const PutConfig& pin) {
    return PutPieces(key, ConstPieces(&value, 1), preferred, pin);
}

Status Client::PutPieces(std::string_view key, ConstPieces value, NodeId preferred,
                         const PutConfig& pin) {
    const uint64_t size = PiecesSize(value);
    if (!by_key_address_.empty() && !pin.any() && size > 0 && size <= kByKeyPutMaxBytes) {
        MC_RETURN_IF_ERROR(ValidateUserKey(key));
        bool sent = false;
        Status st = transport_->PutPiecesByKey(by_key_address_, key,
                                               static_cast<ClientId>(client_id()), value, &sent);
        // Not sent (the daemon's data channel cannot be reached, say it restarted on another
        // port): nothing happened, and the two-step path asks the master where to write.
        if (st.ok() || sent) return st;
    }
    return PutWith(
        key, size,
        [&](const std::string& address, Generation generation, uint64_t offset, bool* ended) {
            // The id the put was started under (read after PutStart, as PutEnd's).
            const auto client = static_cast<ClientId>(client_id());
            return transport_->WriteMemoryPiecesEndingPut(address, key, generation, offset, value,
                                                          client, ended);
        },
        preferred, pin,
        [&](const std::string& address, Generation generation, uint64_t offset) {
            return transport_->WriteMemoryPieces(address, key, generation, offset, value);
        });
}

Status Client::PutFrom(std::string_view key, uint64_t size, ByteSource& source) {
    return PutWith(key, size,
                   [&](const std::string& address, Generation generation, uint64_t offset,
                       bool* ended) {
                       const auto client = static_cast<ClientId>(client_id());
                       return transport_->WriteMemoryFromEndingPut(address, key, generation,
                                                                   offset, size, source, client,
                                                                   ended);
                   });
}

Status Client::PutWith(std::string_view key, uint64_t size,
                       const std::function<Status(const std::string& address,
                                                  Generation generation, uint64_t offset,
                                                  bool* ended)>& write,
                       NodeId preferred, const PutConfig& pin, const CopyWriter& write_copy) {
    MC_RETURN_IF_ERROR(ValidateUserKey(key));
    if (size == 0) return Status::InvalidArgument("a value must be at least 1 byte");
    if (size > static_cast<uint64_t>(INT64_MAX)) {
        return Status::InvalidArgument("size " + std::to_string(size) + " is too large");
    }
    const std::string k(key);
    rpc::PutStartReply started;
    MC_RETURN_IF_ERROR(channel_->Call(
        [&](rpc::MasterServiceClient& c) {
            c.PutStart(started, client_id(), k, static_cast<int64_t>(size),
                       static_cast<int64_t>(preferred), rpc::ToWire(pin));
        },
        Idempotent::kNo));
    const rpc::Replica& range = started.replica;
    const auto generation = static_cast<Generation>(started.generation);
    // The copies first: the node that ends the put holds the first range, so every copy has
    // its bytes before a reader can be handed one.
    Status st = Status::Ok();
    for (const rpc::Replica& copy : started.copies) {
        st = copy.data_address.empty()
                 ? Status::Unavailable("the node holding a copy's allocated range is gone")
             : !write_copy ? Status::Internal("the master placed copies this put cannot write")
                           : write_copy(copy.data_address, generation,
                                        static_cast<uint64_t>(copy.offset));
        if (!st.ok()) break;
    }
    // The node normally ends the put itself once the bytes have landed (one round trip to
    // the master less); a transport that cannot ask it (a local memcpy) leaves it to us.
    bool ended = false;
    if (st.ok()) {
        st = range.data_address.empty()
                 ? Status::Unavailable("the node holding the allocated range is gone")
                 : write(range.data_address, generation, static_cast<uint64_t>(range.offset),
                         &ended);
    }
    if (st.ok() && ended) return st;
    if (st.ok()) {
        st = channel_->Call(
            [&](rpc::MasterServiceClient& c) { c.PutEnd(client_id(), k, started.generation); },
            Idempotent::kNo);
        if (st.ok()) return st;
    }
    // Give the range back now rather than at put_timeout_sec. Best effort: the error that
    // matters to the caller is the one that failed the put.
    (void)channel_->Call(
        [&](rpc::MasterServiceClient& c) { c.PutRevoke(client_id(), k, started.generation); },
        Idempotent::kYes);
    return st;
}

void Client::RunPipelined(std::span<const std::string> addresses, std::span<BatchOp> ops) {
    // Stable order by address: each address's ops stay in the caller's order.
    std::vector<size_t> order(ops.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return addresses[a] < addresses[b]; });
    std::vector<BatchOp> sorted;
    sorted.reserve(ops.size());
    for (size_t i : order) sorted.push_back(std::move(ops[i]));
    struct Part {
        size_t first, end;
    };
    std::vector<Part> parts;
    for (size_t first = 0; first < order.size();) {
        size_t end = first;
        uint64_t bytes = 0;
        while (end < order.size() && addresses[order[end]] == addresses[order[first]]) {
            bytes += OpBytes(sorted[end++]);
        }
        // Up to 4 parts per worker: fan_out_ hands them out as workers free up, so one
        // descheduled connection thread does not hold the whole batch (fixed quarters did,
        // on the loaded 2-core VM, at 512 KiB).
        const size_t cuts = std::clamp<size_t>(bytes / kBytesPerPipeline, 1, 4 * batch_width_);
        const uint64_t share = (bytes + cuts - 1) / cuts;
        for (size_t at = first; at < end;) {
            size_t stop = at;
            uint64_t taken = 0;
            while (stop < end && (stop == at || taken < share)) taken += OpBytes(sorted[stop++]);
            parts.push_back({at, stop});
            at = stop;
        }
        first = end;
    }
    fan_out_->Run(parts.size(), batch_width_, [&](size_t p) {
        const Part& part = parts[p];
        transport_->RunBatch(addresses[order[part.first]],
                             std::span<BatchOp>(sorted).subspan(part.first, part.end - part.first));
    });
    for (size_t j = 0; j < order.size(); ++j) ops[order[j]] = std::move(sorted[j]);
}

std::vector<Status> Client::BatchPut(
    std::span<const std::pair<std::string, std::span<const std::byte>>> items, NodeId preferred,
    const PutConfig& pin) {
    std::vector<PiecesItem> pieces(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
        pieces[i] = {items[i].first, ConstPieces(&items[i].second, 1)};
    }
    return BatchPutPieces(pieces, preferred, pin);
}

std::vector<Status> Client::BatchPutPieces(std::span<const PiecesItem> items, NodeId preferred,
                                           const PutConfig& pin) {
    // The by-key exchange carries no pin or group: such puts take the PutStart path.
    const bool grouped = std::any_of(items.begin(), items.end(),
                                     [](const PiecesItem& item) { return !item.group.empty(); });
    if (!by_key_address_.empty() && !pin.any() && !grouped) {
        return BatchPutByKey(items);
    }
    std::vector<PutBeginItem> begins(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
        begins[i] = {items[i].key, PiecesSize(items[i].value), items[i].group};
    }
    std::vector<Result<PutStarted>> started = BatchPutBegin(begins, preferred, pin);
    // Those started are written and ended together; the others answer why not.
    std::vector<Status> out(items.size());
    std::vector<std::string_view> keys;
    std::vector<PutStarted> ranges;
    std::vector<ConstPieces> values;
    std::vector<size_t> index;  // keys[j] is items[index[j]]
    for (size_t i = 0; i < items.size(); ++i) {
        if (!started[i].ok()) {
            out[i] = started[i].status();
            continue;
        }
        keys.push_back(items[i].key);
        ranges.push_back(std::move(*started[i]));
        values.push_back(items[i].value);
        index.push_back(i);
    }
    std::vector<Status> committed = BatchPutCommit(keys, ranges, values);
    for (size_t j = 0; j < index.size(); ++j) out[index[j]] = std::move(committed[j]);
    return out;
}

std::vector<Result<Client::PutStarted>> Client::BatchPutBegin(std::span<const PutBeginItem> items,
                                                              NodeId preferred,
                                                              const PutConfig& pin) {
    // Every item gets its answer below.
    std::vector<Result<PutStarted>> out(items.size(), Status::Internal("no answer"));
    if (Status st = CheckBatch(items.size()); !st.ok()) {
        std::fill(out.begin(), out.end(), st);
        return out;
    }
    std::vector<rpc::PutStartItem> starts;
    std::vector<size_t> index;  // starts[j] is items[index[j]]
    for (size_t i = 0; i < items.size(); ++i) {
        Status valid = ValidateUserKey(items[i].key);
        if (valid.ok() && items[i].size == 0) {
            valid = Status::InvalidArgument("a value must be at least 1 byte");
        }
        if (valid.ok() && items[i].size > static_cast<uint64_t>(INT64_MAX)) {
            valid = Status::InvalidArgument("size " + std::to_string(items[i].size) +
                                            " is too large");
        }
        if (!valid.ok()) {
            out[i] = valid;
            continue;
        }
        rpc::PutStartItem item;
        item.key = std::string(items[i].key);
        item.size = static_cast<int64_t>(items[i].size);
        PutConfig item_pin = pin;
        if (!items[i].group.empty()) item_pin.group = std::string(items[i].group);
        if (item_pin.any()) item.__set_pin(rpc::ToWire(item_pin));
        starts.push_back(std::move(item));
        index.push_back(i);
    }
    if (starts.empty()) return out;
    std::vector<rpc::PutStartResult> started;
    Status st = channel_->Call(
        [&](rpc::MasterServiceClient& c) {
            c.BatchPutStart(started, client_id(), starts, static_cast<int64_t>(preferred));
        },
        Idempotent::kNo);
    if (st.ok() && started.size() != starts.size()) {
        st = Status::Internal("BatchPutStart answered " + std::to_string(started.size()) +
                              " items for " + std::to_string(starts.size()));
    }
    if (!st.ok()) {
        for (size_t i : index) out[i] = st;
        return out;
    }
    std::vector<std::string_view> gone_keys;  // started, but a range's node is gone: revoked
    std::vector<Generation> gone_generations;
    for (size_t j = 0; j < started.size(); ++j) {
        const size_t i = index[j];
        Status outcome = rpc::FromOutcome(started[j].outcome);
        if (!outcome.ok()) {
            out[i] = outcome;
            continue;
        }
        const rpc::PutStartReply& reply = started[j].reply;
        PutStarted put;
        put.generation = static_cast<Generation>(reply.generation);
        // The first range, then each copy's (PutConfig::replicas > 1): the same bytes to each.
        put.ranges.push_back({reply.replica.data_address, static_cast<uint64_t>(reply.replica.offset)});
        for (const rpc::Replica& copy : reply.copies) {
            put.ranges.push_back({copy.data_address, static_cast<uint64_t>(copy.offset)});
        }
        if (std::any_of(put.ranges.begin(), put.ranges.end(),
                        [](const PutStarted::Range& r) { return r.address.empty(); })) {
            out[i] = Status::Unavailable("the node holding an allocated range is gone");
            gone_keys.push_back(items[i].key);
            gone_generations.push_back(put.generation);
            continue;
        }
        out[i] = std::move(put);
    }
    if (!gone_keys.empty()) (void)BatchPutAbandon(gone_keys, gone_generations);
    return out;
}

std::vector<Status> Client::BatchPutCommit(std::span<const std::string_view> keys,
                                           std::span<const PutStarted> started,
                                           std::span<const ConstPieces> values) {
    std::vector<Status> out(keys.size());
    if (started.size() != keys.size() || values.size() != keys.size()) {
        std::fill(out.begin(), out.end(),
                  Status::InvalidArgument("BatchPutCommit: " + std::to_string(started.size()) +
                                          " puts and " + std::to_string(values.size()) +
                                          " values for " + std::to_string(keys.size()) + " keys"));
        return out;
    }
    // The bytes: each node's ranges as one pipelined stream (RunPipelined).
    std::vector<BatchOp> writes;
    std::vector<std::string> addresses;
    std::vector<size_t> write_index;  // writes[w] is keys[write_index[w]]
    for (size_t i = 0; i < keys.size(); ++i) {
        for (const PutStarted::Range& range : started[i].ranges) {
            BatchOp op;
            op.kind = BatchOp::Kind::kWrite;
            op.key = keys[i];
            op.generation = started[i].generation;
            op.offset = range.offset;
            op.send = values[i];
            writes.push_back(op);
            addresses.push_back(range.address);
            write_index.push_back(i);
        }
    }
    RunPipelined(addresses, writes);
    // A put is written when every one of its ranges is: the first failure is its answer.
    for (size_t w = 0; w < writes.size(); ++w) {
        if (out[write_index[w]].ok()) out[write_index[w]] = writes[w].status;
    }
    std::vector<rpc::KeyGeneration> to_end;
    std::vector<size_t> end_index;
    std::vector<std::string_view> revoke_keys;
    std::vector<Generation> revoke_generations;
    for (size_t i = 0; i < keys.size(); ++i) {
        if (!out[i].ok()) {
            revoke_keys.push_back(keys[i]);
            revoke_generations.push_back(started[i].generation);
            continue;
        }
        rpc::KeyGeneration kg;
        kg.key = std::string(keys[i]);
        kg.generation = static_cast<int64_t>(started[i].generation);
        to_end.push_back(std::move(kg));
        end_index.push_back(i);
    }
    if (!to_end.empty()) {
        std::vector<rpc::Outcome> ended;
        Status st = channel_->Call(
            [&](rpc::MasterServiceClient& c) { c.BatchPutEnd(ended, client_id(), to_end); },
            Idempotent::kNo);
        for (size_t j = 0; j < end_index.size(); ++j) {
            const size_t i = end_index[j];
            out[i] = !st.ok() ? st
                     : j < ended.size() ? rpc::FromOutcome(ended[j])
                                        : Status::Internal("BatchPutEnd answered too few items");
            if (!out[i].ok()) {
                revoke_keys.push_back(keys[i]);
                revoke_generations.push_back(started[i].generation);
            }
        }
    }
    // Give the ranges back now rather than at put_timeout_sec. Best effort: the error that
    // matters to the caller is the one that failed the put.
    if (!revoke_keys.empty()) (void)BatchPutAbandon(revoke_keys, revoke_generations);
    return out;
}

std::vector<Status> Client::BatchPutAbandon(std::span<const std::string_view> keys,
                                            std::span<const Generation> generations) {
    std::vector<Status> out(keys.size());
    std::vector<rpc::KeyGeneration> items;
    for (size_t i = 0; i < keys.size() && i < generations.size(); ++i) {
        rpc::KeyGeneration kg;
        kg.key = std::string(keys[i]);
        kg.generation = static_cast<int64_t>(generations[i]);
        items.push_back(std::move(kg));
    }
    if (items.empty()) return out;
    std::vector<rpc::Outcome> revoked;
    Status st = channel_->Call(
        [&](rpc::MasterServiceClient& c) { c.BatchPutRevoke(revoked, client_id(), items); },
        Idempotent::kYes);
    for (size_t i = 0; i < items.size(); ++i) {
        out[i] = !st.ok() ? st
                 : i < revoked.size() ? rpc::FromOutcome(revoked[i])
                                      : Status::Internal("BatchPutRevoke answered too few items");
    }
    return out;
}

std::vector<Status> Client::BatchPutByKey(std::span<const PiecesItem> items) {
    std::vector<Status> out(items.size());
    if (Status st = CheckBatch(items.size()); !st.ok()) {
        std::fill(out.begin(), out.end(), st);
        return out;
    }
    // The values a by-key put takes (as PutPieces) go in one pipelined stream; the others,
    // and those whose request never left (the daemon's data channel moved), as single Puts.
    std::vector<BatchOp> ops;
    std::vector<size_t> index;  // ops[j] is items[index[j]]
    std::vector<size_t> singles;
    const auto client = static_cast<ClientId>(client_id());
    for (size_t i = 0; i < items.size(); ++i) {
        const uint64_t size = PiecesSize(items[i].value);
        if (size == 0 || size > kByKeyPutMaxBytes || !ValidateKey(items[i].key).ok()) {
            singles.push_back(i);
            continue;
        }
        BatchOp op;
        op.kind = BatchOp::Kind::kPutByKey;
        op.key = items[i].key;
        op.send = items[i].value;
        op.client = client;
        ops.push_back(op);
        index.push_back(i);
    }
    std::vector<std::string> addresses(ops.size(), by_key_address_);
    RunPipelined(addresses, ops);
    for (size_t j = 0; j < ops.size(); ++j) {
        if (ops[j].status.ok() || ops[j].sent) {
            out[index[j]] = ops[j].status;
        } else {
            singles.push_back(index[j]);
        }
    }
    fan_out_->Run(singles.size(), batch_width_, [&](size_t s) {
        const size_t i = singles[s];
        out[i] = PutPieces(items[i].key, items[i].value);
    });
    return out;
}

Result<ObjectInfo> Client::GetReplicaList(std::string_view key) {
    MC_RETURN_IF_ERROR(ValidateUserKey(key));
    rpc::ObjectInfo wire;
    const std::string k(key);
    MC_RETURN_IF_ERROR(channel_->Call(
        [&](rpc::MasterServiceClient& c) { c.GetReplicaList(wire, k); }, Idempotent::kYes));
    return ForReading(wire, *transport_);
}

Status Client::ReadReplicas(const ObjectInfo& info, MutablePieces out, Tier* served_from) {
    const ObjectView& v = info.object;
    std::vector<std::span<std::byte>> value;  // the first v.size bytes of `out`
    FirstBytes(out, v.size, value);
    return ReadReplicasWith(
        info, served_from,
        [&](const std::string& address, const ReplicaDesc& r) {
            return transport_->ReadPieces(address, r.tier, v.key, v.generation, r.ReadOffset(),
                                          value);
        },
        [] { return true; });
}

Status Client::ReadReplicasWith(
    const ObjectInfo& info, Tier* served_from,
    const std::function<Status(const std::string& address, const ReplicaDesc& replica)>& read,
    const std::function<bool()>& again) {
    const ObjectView& v = info.object;
    ReplicaReads reads(Status::NotFound("key " + QuoteKey(v.key) + " has no complete replica"));
    bool tried = false;
    for (size_t i = 0; i < v.replicas.size(); ++i) {
        const ReplicaDesc& r = v.replicas[i];
        if (r.state != ReplicaState::kComplete) continue;
        const std::string& address = info.locations[i].data_address;
        if (address.empty()) {
            reads.Skip(Status::Unavailable("the node of a " + std::string(TierName(r.tier)) +
                                           " replica of " + QuoteKey(v.key) + " is gone"));
            continue;
        }
        if (tried && !again()) break;
        tried = true;
        if (reads.Add(read(address, r))) {
            if (served_from != nullptr) *served_from = r.tier;
            break;
        }
    }
    return reads.Answer();
}

Result<uint64_t> Client::GetInto(std::string_view key, std::span<std::byte> out,
                                 Tier* served_from) {
    return GetIntoPieces(key, MutablePieces(&out, 1), served_from);
}

Result<uint64_t> Client::GetIntoPieces(std::string_view key, MutablePieces out, Tier* served_from) {
    if (!by_key_address_.empty()) {
        auto read = transport_->ReadByKeyIntoPieces(by_key_address_, key, out, served_from);
        if (!ByKeyUnreachable(read.status())) return read;
    }
    const uint64_t room = PiecesSize(out);
    uint64_t size = 0;
    Status st = net::ReadWithOneRelook([&](int, bool& stop) {
        auto info = GetReplicaList(key);
        stop = !info.ok();
        if (stop) return info.status();
        size = info->object.size;
        if (room < size) {
            stop = true;
            return Status::InvalidArgument("buffer of " + std::to_string(room) +
                                           " bytes is too small for " + QuoteKey(key) + " (" +
                                           std::to_string(size) + " bytes)");
        }
        return ReadReplicas(*info, out, served_from);
    });
    if (!st.ok()) return st;
    return size;
}

Result<uint64_t> Client::GetTo(std::string_view key, ByteSink& sink, Tier* served_from) {
    auto again = [&] { return sink.Restart(); };
    uint64_t size = 0;
    Status previous;  // round 0's answer, kept when the sink cannot start over
    Status st = net::ReadWithOneRelook([&](int round, bool& stop) {
        if (round > 0 && !again()) {
            stop = true;
            return previous;
        }
        auto info = GetReplicaList(key);
        stop = !info.ok();
        if (stop) return info.status();
        const ObjectView& v = info->object;
        size = v.size;
        previous = ReadReplicasWith(
            *info, served_from,
            [&](const std::string& address, const ReplicaDesc& r) {
                return transport_->ReadTo(address, r.tier, v.key, v.generation, r.ReadOffset(),
                                          v.size, sink);
            },
            again);
        return previous;
    });
    if (!st.ok()) return st;
    return size;
}

Result<std::string> Client::Get(std::string_view key) {
    if (!by_key_address_.empty()) {
        std::string value;
        auto size = transport_->ReadByKey(
            by_key_address_, key, UINT64_MAX, [&](uint64_t n) {
                value.resize(n);
                return std::as_writable_bytes(std::span(value.data(), value.size()));
            });
        if (size.ok()) return value;
        if (!ByKeyUnreachable(size.status())) return size.status();
    }
    std::string value;
    Status st = net::ReadWithOneRelook([&](int, bool& stop) {
        auto info = GetReplicaList(key);
        stop = !info.ok();
        if (stop) return info.status();
        value.assign(info->object.size, '\0');
        std::span<std::byte> whole = std::as_writable_bytes(std::span(value.data(), value.size()));
        return ReadReplicas(*info, MutablePieces(&whole, 1));
    });
    if (!st.ok()) return st;
    return value;
}

std::vector<Result<ObjectInfo>> Client::BatchGetReplicaList(std::span<const std::string> keys) {
    std::vector<Result<ObjectInfo>> out;
    out.reserve(keys.size());
    Status st = CheckBatch(keys.size());
    std::vector<rpc::ObjectResult> wire;
    if (st.ok() && !keys.empty()) {
        std::vector<std::string> list(keys.begin(), keys.end());
        st = channel_->Call([&](rpc::MasterServiceClient& c) { c.BatchGetReplicaList(wire, list); },
                            Idempotent::kYes);
    }
    for (size_t i = 0; i < keys.size(); ++i) {
        if (!st.ok()) {
            out.emplace_back(st);
        } else if (i >= wire.size()) {
            out.emplace_back(Status::Internal("BatchGetReplicaList answered too few items"));
        } else if (Status item = rpc::FromOutcome(wire[i].outcome); !item.ok()) {
            out.emplace_back(item);
        } else {
            out.emplace_back(ForReading(wire[i].object, *transport_));
        }
    }
    return out;
}

void Client::BatchRead(std::span<const std::string> keys,
                       const std::function<MutablePieces(size_t, uint64_t, Status*)>& buffer_for,
                       std::vector<Status>& out, std::span<Tier> served_from) {
    out.assign(keys.size(), Status::Ok());
    std::vector<Result<ObjectInfo>> lists = BatchGetReplicaList(keys);
    // First each key's first readable replica (as ReadReplicasWith picks it: the list's order,
    // MEMORY first), one pipelined stream per node; what that did not read takes the path of
    // a single read below (the other replicas, then one fresh look).
    std::vector<BatchOp> ops;
    std::vector<std::string> addresses;
    std::vector<size_t> op_index;                          // ops[j] is keys[op_index[j]]
    std::vector<std::vector<std::span<std::byte>>> value(keys.size());  // FirstBytes of each
    std::vector<char> done(keys.size(), 0);
    for (size_t i = 0; i < keys.size(); ++i) {
        if (!lists[i].ok()) continue;
        const ObjectInfo& info = *lists[i];
        const ObjectView& v = info.object;
        const size_t r = FirstReachableReplica(info);
        if (r == v.replicas.size()) continue;
        Status refused;
        MutablePieces buffer = buffer_for(i, v.size, &refused);
        if (!refused.ok()) {
            out[i] = refused;
            done[i] = 1;
            continue;
        }
        FirstBytes(buffer, v.size, value[i]);
        BatchOp op;
        op.kind = BatchOp::Kind::kRead;
        op.key = keys[i];
        op.tier = v.replicas[r].tier;
        op.generation = v.generation;
        op.offset = v.replicas[r].ReadOffset();
        op.receive = value[i];
        ops.push_back(op);
        addresses.push_back(info.locations[r].data_address);
        op_index.push_back(i);
    }
    RunPipelined(addresses, ops);
    for (size_t j = 0; j < ops.size(); ++j) {
        if (!ops[j].status.ok()) continue;
        done[op_index[j]] = 1;
        if (!served_from.empty()) served_from[op_index[j]] = ops[j].tier;
    }
    fan_out_->Run(keys.size(), batch_width_, [&](size_t i) {
        if (done[i]) return;
        // As GetInto: the batch's list, then (when its replicas moved meanwhile) one fresh one.
        out[i] = net::ReadWithOneRelook([&](int round, bool& stop) {
            Result<ObjectInfo> fresh = round == 0 ? std::move(lists[i]) : GetReplicaList(keys[i]);
            stop = true;
            if (!fresh.ok()) return fresh.status();
            Status refused;
            MutablePieces buffer = buffer_for(i, fresh->object.size, &refused);
            if (!refused.ok()) return refused;
            stop = false;
            return ReadReplicas(*fresh, buffer, served_from.empty() ? nullptr : &served_from[i]);
        });
    });
}

std::vector<Result<std::string>> Client::BatchGet(std::span<const std::string> keys) {
    if (!by_key_address_.empty()) {  // no replica-list round trip to save
        return EachByKey(*fan_out_, batch_width_, keys.size(), Result<std::string>(std::string()),
                         [&](size_t i) { return Get(keys[i]); });
    }
    std::vector<std::string> values(keys.size());
    std::vector<std::span<std::byte>> whole(keys.size());  // each value as one piece
    std::vector<Status> read;
    BatchRead(
        keys,
        [&](size_t i, uint64_t size, Status*) {
            values[i].assign(size, '\0');
            whole[i] = std::as_writable_bytes(std::span(values[i].data(), values[i].size()));
            return MutablePieces(&whole[i], 1);
        },
        read);
    std::vector<Result<std::string>> out;
    out.reserve(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
        if (read[i].ok()) {
            out.emplace_back(std::move(values[i]));
        } else {
            out.emplace_back(read[i]);
        }
    }
    return out;
}

std::vector<std::vector<Status>> Client::BatchGetRanges(
    std::span<const std::string> keys, std::span<const std::vector<ValueRange>> ranges,
    std::vector<Result<ObjectInfo>> lists) {
    std::vector<std::vector<Status>> out(keys.size());
    if (ranges.size() != keys.size()) {
        Status st =
            Status::InvalidArgument("BatchGetRanges: " + std::to_string(ranges.size()) +
                                    " range lists for " + std::to_string(keys.size()) + " keys");
        for (size_t i = 0; i < keys.size(); ++i)
            out[i].assign(ranges.size() > i ? ranges[i].size() : 0, st);
        return out;
    }
    for (size_t i = 0; i < keys.size(); ++i) out[i].assign(ranges[i].size(), Status::Ok());
    // A range past the value is refused before any byte moves; an empty one is read at once.
    auto check = [&](size_t i, uint64_t size) {
        bool any = false;
        for (size_t j = 0; j < ranges[i].size(); ++j) {
            const ValueRange& r = ranges[i][j];
            if (r.offset > size || r.out.size() > size - r.offset) {
                out[i][j] = Status::InvalidArgument("range [" + std::to_string(r.offset) + ", +" +
                                                    std::to_string(r.out.size()) +
                                                    ") is past the end of " + QuoteKey(keys[i]) +
                                                    " (" + std::to_string(size) + " bytes)");
            } else if (!r.out.empty()) {
                any = true;
            }
        }
        return any;
    };
    if (lists.size() != keys.size()) lists = BatchGetReplicaList(keys);
    // First each key's first readable replica, one pipelined stream per node. Ranges that
    // follow one another in the value (sorted by offset, each starting where the last ended)
    // are one read received into their buffers in order (a vectored receive; still no
    // copy): an engine reading a value's consecutive parts into scattered places pays one
    // exchange per key, as batch_get_into does.
    struct Run {
        size_t key;
        size_t replica;
        uint64_t offset;
        std::vector<std::span<std::byte>> pieces;
    };
    std::vector<Run> runs;
    std::deque<std::vector<std::byte>> scratch;  // gaps bridged in disk reads (stable addresses)
    std::vector<char> retry(keys.size(), 0);
    for (size_t i = 0; i < keys.size(); ++i) {
        if (!lists[i].ok()) {
            retry[i] = !lists[i].status().Is(StatusCode::kNotFound);
            if (!retry[i]) out[i].assign(ranges[i].size(), lists[i].status());
            continue;
        }
        const ObjectInfo& info = *lists[i];
        const ObjectView& v = info.object;
        if (!check(i, v.size)) continue;
        const size_t r = FirstReachableReplica(info);
        if (r == v.replicas.size()) {
            retry[i] = 1;
            continue;
        }
        std::vector<size_t> order;
        for (size_t j = 0; j < ranges[i].size(); ++j) {
            if (out[i][j].ok() && !ranges[i][j].out.empty()) order.push_back(j);
        }
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
            return ranges[i][a].offset < ranges[i][b].offset;
        });
        // A LOCAL_DISK replica is read whole at the node (its checksum covers the whole
        // value), so each run costs a read of the value: bridge the gaps between a key's
        // ranges (received into scratch) while a gap is no larger than what the run
        // already asks for, so scattered parts cost one disk read, not one each.
        const bool from_disk = v.replicas[r].tier == Tier::kLocalDisk;
        uint64_t run_end = 0;
        uint64_t run_wanted = 0;
        for (size_t j : order) {
            const ValueRange& range = ranges[i][j];
            const bool same_key = !runs.empty() && runs.back().key == i;
            const bool bridge = from_disk && same_key && range.offset > run_end &&
                                range.offset - run_end <= run_wanted;
            if (bridge) {
                scratch.emplace_back(range.offset - run_end);
                runs.back().pieces.push_back(scratch.back());
            } else if (!same_key || range.offset != run_end) {
                runs.push_back(Run{i, r, range.offset, {}});
                run_wanted = 0;
            }
            runs.back().pieces.push_back(range.out);
            run_end = range.offset + range.out.size();
            run_wanted += range.out.size();
        }
    }
    std::vector<BatchOp> ops(runs.size());
    std::vector<std::string> addresses(runs.size());
    for (size_t k = 0; k < runs.size(); ++k) {
        const ObjectInfo& info = *lists[runs[k].key];
        const ReplicaDesc& replica = info.object.replicas[runs[k].replica];
        ops[k].kind = BatchOp::Kind::kRead;
        ops[k].key = keys[runs[k].key];
        ops[k].tier = replica.tier;
        ops[k].generation = info.object.generation;
        ops[k].offset = replica.ReadOffset() + runs[k].offset;
        ops[k].receive = runs[k].pieces;
        addresses[k] = info.locations[runs[k].replica].data_address;
    }
    RunPipelined(addresses, ops);
    for (size_t k = 0; k < ops.size(); ++k) {
        if (!ops[k].status.ok()) retry[runs[k].key] = 1;
    }
    // What that did not read takes the path of a single read: the other replicas, then one
    // fresh look (the replica moved meanwhile).
    fan_out_->Run(keys.size(), batch_width_, [&](size_t i) {
        if (!retry[i]) return;
        for (Status& st : out[i]) st = Status::Ok();
        Status looked = net::ReadWithOneRelook([&](int round, bool& stop) {
            Result<ObjectInfo> fresh =
                round == 0 && lists[i].ok() ? std::move(lists[i]) : GetReplicaList(keys[i]);
            stop = true;
            if (!fresh.ok()) return fresh.status();
            const ObjectView& v = fresh->object;
            if (!check(i, v.size)) return Status::Ok();
            stop = false;
            for (size_t j = 0; j < ranges[i].size(); ++j) {
                if (!out[i][j].ok() || ranges[i][j].out.empty()) continue;
                const ValueRange& range = ranges[i][j];
                MC_RETURN_IF_ERROR(ReadReplicasWith(
                    *fresh, nullptr,
                    [&](const std::string& address, const ReplicaDesc& r) {
                        return transport_->ReadPieces(address, r.tier, v.key, v.generation,
                                                      r.ReadOffset() + range.offset,
                                                      MutablePieces(&range.out, 1));
                    },
                    [] { return true; }));
            }
            return Status::Ok();
        });
        if (looked.ok()) return;
        for (Status& st : out[i]) {
            if (st.ok()) st = looked;
        }
    });
    return out;
}

std::vector<Result<uint64_t>> Client::BatchGetInto(std::span<const std::string> keys,
                                                   std::span<const std::span<std::byte>> outs,
                                                   std::span<Tier> served_from) {
    std::vector<MutablePieces> pieces(outs.size());
    for (size_t i = 0; i < outs.size(); ++i) pieces[i] = MutablePieces(&outs[i], 1);
    return BatchGetIntoPieces(keys, pieces, served_from);
}

std::vector<Result<uint64_t>> Client::BatchGetIntoPieces(std::span<const std::string> keys,
                                                         std::span<const MutablePieces> outs,
                                                         std::span<Tier> served_from) {
    std::vector<Result<uint64_t>> out;
    out.reserve(keys.size());
    if (outs.size() != keys.size() || (!served_from.empty() && served_from.size() != keys.size())) {
        Status st = Status::InvalidArgument("BatchGetInto: " + std::to_string(outs.size()) +
                                            " buffers and " + std::to_string(served_from.size()) +
                                            " tiers for " + std::to_string(keys.size()) + " keys");
        for (size_t i = 0; i < keys.size(); ++i) out.emplace_back(st);
        return out;
    }
    if (!by_key_address_.empty()) {
        if (Status st = CheckBatch(keys.size()); !st.ok()) {
            for (size_t i = 0; i < keys.size(); ++i) out.emplace_back(st);
            return out;
        }
        // One pipelined stream of by-key reads; a key the daemon's channel could not serve
        // (Unavailable: it moved, or the connection broke) is read as GetInto reads it.
        std::vector<BatchOp> ops(keys.size());
        for (size_t i = 0; i < keys.size(); ++i) {
            ops[i].kind = BatchOp::Kind::kReadByKey;
            ops[i].key = keys[i];
            ops[i].receive = outs[i];
        }
        std::vector<std::string> addresses(keys.size(), by_key_address_);
        RunPipelined(addresses, ops);
        std::vector<size_t> again;
        for (size_t i = 0; i < keys.size(); ++i) {
            if (ops[i].status.ok()) {
                if (!served_from.empty()) served_from[i] = ops[i].served_from;
                out.emplace_back(ops[i].size);
            } else {
                out.emplace_back(ops[i].status);
                if (ByKeyUnreachable(ops[i].status)) again.push_back(i);
            }
        }
        fan_out_->Run(again.size(), batch_width_, [&](size_t a) {
            const size_t i = again[a];
            out[i] = GetIntoPieces(keys[i], outs[i],
                                   served_from.empty() ? nullptr : &served_from[i]);
        });
        return out;
    }
    std::vector<uint64_t> sizes(keys.size(), 0);
    std::vector<Status> read;
    BatchRead(
        keys,
        [&](size_t i, uint64_t size, Status* refused) -> MutablePieces {
            const uint64_t room = PiecesSize(outs[i]);
            if (room < size) {
                *refused = Status::InvalidArgument("buffer of " + std::to_string(room) +
                                                   " bytes is too small for " + QuoteKey(keys[i]) +
                                                   " (" + std::to_string(size) + " bytes)");
                return {};
            }
            sizes[i] = size;
            return outs[i];
        },
        read, served_from);
    for (size_t i = 0; i < keys.size(); ++i) {
        if (read[i].ok()) {
            out.emplace_back(sizes[i]);
        } else {
            out.emplace_back(read[i]);
        }
    }
    return out;
}

Status Client::Remove(std::string_view key, bool force) {
    MC_RETURN_IF_ERROR(ValidateUserKey(key));
    const std::string k(key);
    bool retried = false;
    Status st = channel_->Call(
        [&](rpc::MasterServiceClient& c) {
            if (retried) {
                // A transport failure may have hidden a successful first attempt.
                try {
                    c.Remove(k, force);
                } catch (const rpc::StoreError& e) {
                    if (e.code != rpc::ErrorCode::NOT_FOUND) throw;
                }
                return;
            }
            retried = true;
            c.Remove(k, force);
        },
        Idempotent::kYes);
    return st;
}

std::vector<Status> Client::BatchRemove(std::span<const std::string> keys, bool force) {
    std::vector<Status> out(keys.size());
    if (Status st = CheckBatch(keys.size()); !st.ok()) {
        std::fill(out.begin(), out.end(), st);
        return out;
    }
    std::vector<std::string> list(keys.begin(), keys.end());
    std::vector<rpc::Outcome> wire;
    Status st = channel_->Call(
        [&](rpc::MasterServiceClient& c) { c.BatchRemove(wire, list, force); }, Idempotent::kYes);
    for (size_t i = 0; i < keys.size(); ++i) {
        out[i] = !st.ok() ? st
                 : i < wire.size() ? rpc::FromOutcome(wire[i])
                                   : Status::Internal("BatchRemove answered too few items");
    }
    return out;
}

Result<RemovePrefixResult> Client::RemoveByPrefix(std::string_view prefix, bool force) {
    rpc::RemovePrefixReply wire;
    const std::string p(prefix);
    MC_RETURN_IF_ERROR(channel_->Call(
        [&](rpc::MasterServiceClient& c) { c.RemoveByPrefix(wire, p, force); },
        Idempotent::kYes));
    return RemovePrefixResult{static_cast<uint64_t>(wire.removed),
                              static_cast<uint64_t>(wire.skipped)};
}

Result<bool> Client::Exists(std::string_view key, bool prefetch) {
    MC_RETURN_IF_ERROR(ValidateUserKey(key));
    bool exists = false;
    const std::string k(key);
    MC_RETURN_IF_ERROR(channel_->Call(
        [&](rpc::MasterServiceClient& c) { exists = c.Exists(k, prefetch); }, Idempotent::kYes));
    return exists;
}

std::vector<Result<bool>> Client::BatchExists(std::span<const std::string> keys,
                                              bool prefetch) {
    std::vector<Result<bool>> out;
    out.reserve(keys.size());
    Status st = CheckBatch(keys.size());
    std::vector<rpc::ExistsResult> wire;
    if (st.ok()) {
        std::vector<std::string> list(keys.begin(), keys.end());
        st = channel_->Call([&](rpc::MasterServiceClient& c) { c.BatchExists(wire, list, prefetch); },
                            Idempotent::kYes);
    }
    for (size_t i = 0; i < keys.size(); ++i) {
        if (!st.ok()) {
            out.emplace_back(st);
        } else if (i >= wire.size()) {
            out.emplace_back(Status::Internal("BatchExists answered too few items"));
        } else if (Status item = rpc::FromOutcome(wire[i].outcome); !item.ok()) {
            out.emplace_back(item);
        } else {
            out.emplace_back(wire[i].exists);
        }
    }
    return out;
}

// ---------------- inspection ----------------

Result<ObjectInfo> Client::Stat(std::string_view key) {
    MC_RETURN_IF_ERROR(ValidateUserKey(key));
    rpc::ObjectInfo wire;
    const std::string k(key);
    MC_RETURN_IF_ERROR(channel_->Call([&](rpc::MasterServiceClient& c) { c.Stat(wire, k); },
                                      Idempotent::kYes));
    return FromWireInfo(wire);
}

Result<ListPage> Client::List(const ListOptions& options) {
    rpc::ListRequest request = rpc::ToWire(options);
    rpc::ListReply wire;
    MC_RETURN_IF_ERROR(channel_->Call(
        [&](rpc::MasterServiceClient& c) { c.List(wire, request); }, Idempotent::kYes));
    ListPage page;
    page.more = wire.more;
    page.objects.reserve(wire.objects.size());
    for (const rpc::ObjectInfo& o : wire.objects) page.objects.push_back(FromWireInfo(o));
    return page;
}

Result<std::vector<ObjectInfo>> Client::ListAll(ListOptions options) {
    if (options.limit == 0) options.limit = 1000;
    std::vector<ObjectInfo> all;
    for (;;) {
        auto page = List(options);
        if (!page.ok()) return page.status();
        if (page->objects.empty()) break;
        options.start_after = page->objects.back().object.key;
        bool more = page->more;
        for (auto& o : page->objects) all.push_back(std::move(o));
        if (!more) break;
    }
    return all;
}

Result<std::vector<NodeInfo>> Client::Nodes() {
    std::vector<rpc::NodeInfo> wire;
    MC_RETURN_IF_ERROR(channel_->Call([&](rpc::MasterServiceClient& c) { c.Nodes(wire); },
                                      Idempotent::kYes));
    std::vector<NodeInfo> out;
    for (const auto& n : wire) out.push_back(rpc::FromWire(n));
    return out;
}

Result<std::vector<TaskView>> Client::Tasks() {
    std::vector<rpc::TaskInfo> wire;
    MC_RETURN_IF_ERROR(channel_->Call([&](rpc::MasterServiceClient& c) { c.Tasks(wire); },
                                      Idempotent::kYes));
    std::vector<TaskView> out;
    for (const auto& t : wire) out.push_back(rpc::FromWire(t));
    return out;
}

Result<std::vector<ScrubResult>> Client::Scrub(NodeId node, std::chrono::milliseconds max_time) {
    std::vector<rpc::ScrubReply> wire;
    MC_RETURN_IF_ERROR(channel_->Call(
        [&](rpc::MasterServiceClient& c) { c.Scrub(wire, static_cast<int64_t>(node)); },
        Idempotent::kNo, max_time));
    std::vector<ScrubResult> out;
    for (const rpc::ScrubReply& r : wire) {
        ScrubResult s;
        s.node = r.node;
        s.checked = static_cast<uint64_t>(std::max<int64_t>(0, r.checked));
        s.checked_bytes = static_cast<uint64_t>(std::max<int64_t>(0, r.checked_bytes));
        s.io_errors = static_cast<uint64_t>(std::max<int64_t>(0, r.io_errors));
        for (const rpc::KeyGeneration& kg : r.corrupt) {
            s.corrupt.emplace_back(kg.key, static_cast<Generation>(kg.generation));
        }
        if (r.__isset.error) s.error = r.error;
        out.push_back(std::move(s));
    }
    return out;
}

Result<InvariantReport> Client::CheckInvariants() {
    rpc::InvariantReport wire;
    MC_RETURN_IF_ERROR(channel_->Call(
        [&](rpc::MasterServiceClient& c) { c.CheckInvariants(wire); }, Idempotent::kYes));
    return rpc::FromWire(wire);
}

Result<std::vector<HotKey>> Client::Hot(size_t limit) {
    std::vector<rpc::HotKey> wire;
    int32_t n = static_cast<int32_t>(std::min<size_t>(limit, INT32_MAX));
    MC_RETURN_IF_ERROR(channel_->Call([&](rpc::MasterServiceClient& c) { c.Hot(wire, n); },
                                      Idempotent::kYes));
    std::vector<HotKey> out;
    for (const auto& h : wire) out.push_back(rpc::FromWire(h));
    return out;
}

Result<std::string> Client::MetricsText() {
    std::string text;
    MC_RETURN_IF_ERROR(channel_->Call(
        [&](rpc::MasterServiceClient& c) { c.MetricsText(text); }, Idempotent::kYes));
    return text;
}

// ---------------- tuning ----------------

Result<std::vector<KnobInfo>> Client::TuneGet() {
    std::vector<rpc::KnobInfo> wire;
    MC_RETURN_IF_ERROR(channel_->Call([&](rpc::MasterServiceClient& c) { c.TuneGet(wire); },
                                      Idempotent::kYes));
    return FromWireKnobs(wire);
}

Result<std::vector<KnobInfo>> Client::TuneSet(
    const std::vector<std::pair<std::string, std::string>>& assignments, bool persist) {
    std::vector<rpc::KnobAssignment> list;
    for (const auto& [name, value] : assignments) {
        rpc::KnobAssignment a;
        a.name = name;
        a.value = value;
        list.push_back(std::move(a));
    }
    std::vector<rpc::KnobInfo> wire;
    // Setting the same values twice leaves the same state: safe to retry.
    MC_RETURN_IF_ERROR(channel_->Call(
        [&](rpc::MasterServiceClient& c) { c.TuneSet(wire, list, persist); },
        Idempotent::kYes));
    return FromWireKnobs(wire);
}

// ---------------- tenants ----------------

namespace {

uint64_t NonNegative(int64_t v) { return static_cast<uint64_t>(std::max<int64_t>(0, v)); }

TenantListing FromWireTenants(const rpc::TenantReport& wire) {
    TenantListing out;
    for (const rpc::TenantInfo& t : wire.tenants) {
        TenantUsage u;
        u.tenant = t.tenant;
        u.registered = t.registered;
        u.memory_quota = NonNegative(t.memory_quota);
        u.disk_quota = NonNegative(t.disk_quota);
        u.memory_bytes = NonNegative(t.memory_bytes);
        u.memory_objects = NonNegative(t.memory_objects);
        u.disk_bytes = NonNegative(t.disk_bytes);
        u.disk_objects = NonNegative(t.disk_objects);
        u.puts_refused = NonNegative(t.puts_refused);
        u.quota_evictions = NonNegative(t.quota_evictions);
        u.promotions = NonNegative(t.promotions);
        out.tenants.push_back(std::move(u));
    }
    out.memory_quota_sum = NonNegative(wire.memory_quota_sum);
    out.disk_quota_sum = NonNegative(wire.disk_quota_sum);
    out.memory_capacity = NonNegative(wire.memory_capacity);
    out.disk_capacity = NonNegative(wire.disk_capacity);
    out.multi_tenant = wire.multi_tenant;
    out.warnings = wire.warnings;
    out.removed = NonNegative(wire.removed);
    return out;
}

int64_t QuotaToWire(uint64_t bytes) {
    return static_cast<int64_t>(std::min<uint64_t>(bytes, INT64_MAX));
}

}  // namespace

Result<TenantListing> Client::TenantList() {
    rpc::TenantReport wire;
    MC_RETURN_IF_ERROR(channel_->Call([&](rpc::MasterServiceClient& c) { c.TenantList(wire); },
                                      Idempotent::kYes));
    return FromWireTenants(wire);
}

Result<TenantListing> Client::TenantSet(const std::string& tenant, uint64_t memory_quota,
                                        uint64_t disk_quota) {
    rpc::TenantReport wire;
    // Setting the same quotas twice leaves the same state: safe to retry.
    MC_RETURN_IF_ERROR(channel_->Call(
        [&](rpc::MasterServiceClient& c) {
            c.TenantSet(wire, tenant, QuotaToWire(memory_quota), QuotaToWire(disk_quota));
        },
        Idempotent::kYes));
    return FromWireTenants(wire);
}

Result<TenantListing> Client::TenantRemove(const std::string& tenant, bool purge) {
    rpc::TenantReport wire;
    // A retry after a lost reply would find the tenant gone (NOT_FOUND): not repeated.
    MC_RETURN_IF_ERROR(channel_->Call(
        [&](rpc::MasterServiceClient& c) { c.TenantRemove(wire, tenant, purge); },
        Idempotent::kNo));
    return FromWireTenants(wire);
}

// ---------------- manual tier moves ----------------

Result<std::vector<KeyOutcome>> Client::Promote(std::span<const std::string> keys, bool force) {
    MC_RETURN_IF_ERROR(CheckBatch(keys.size()));
    std::vector<std::string> list(keys.begin(), keys.end());
    std::vector<rpc::ManualResult> wire;
    MC_RETURN_IF_ERROR(channel_->Call(
        [&](rpc::MasterServiceClient& c) { c.Promote(wire, list, force); }, Idempotent::kYes));
    return FromWireManual(wire);
}

Result<std::vector<KeyOutcome>> Client::Offload(std::span<const std::string> keys) {
    MC_RETURN_IF_ERROR(CheckBatch(keys.size()));
    std::vector<std::string> list(keys.begin(), keys.end());
    std::vector<rpc::ManualResult> wire;
    MC_RETURN_IF_ERROR(channel_->Call(
        [&](rpc::MasterServiceClient& c) { c.Offload(wire, list); }, Idempotent::kYes));
    return FromWireManual(wire);
}

Result<std::vector<KeyOutcome>> Client::Evict(std::span<const std::string> keys) {
    MC_RETURN_IF_ERROR(CheckBatch(keys.size()));
    std::vector<std::string> list(keys.begin(), keys.end());
    std::vector<rpc::ManualResult> wire;
    MC_RETURN_IF_ERROR(channel_->Call(
        [&](rpc::MasterServiceClient& c) { c.Evict(wire, list); }, Idempotent::kYes));
    return FromWireManual(wire);
}

Result<std::vector<KeyOutcome>> Client::Move(TierMove move, std::span<const std::string> keys,
                                             bool force) {
    switch (move) {
        case TierMove::kPromote: return Promote(keys, force);
        case TierMove::kOffload: return Offload(keys);
        case TierMove::kEvict: return Evict(keys);
    }
    return Status::InvalidArgument("unknown tier move");
}

// ---------------- manual tier moves until done ----------------

Result<std::vector<MoveKeyResult>> Client::WaitForMove(TierMove move,
                                                       std::span<const std::string> keys,
                                                       const MoveWaitOptions& options) {
    std::vector<KeyOutcome> issued;
    issued.reserve(keys.size());
    for (size_t i = 0; i < keys.size(); i += rpc::kMaxBatchKeys) {
        auto part = keys.subspan(i, std::min(rpc::kMaxBatchKeys, keys.size() - i));
        auto got = Move(move, part, options.force);
        if (!got.ok()) return got.status();
        for (KeyOutcome& o : *got) issued.push_back(std::move(o));
    }
    return WaitForMove(move, issued, options);
}

Result<std::vector<MoveKeyResult>> Client::WaitForMove(TierMove move,
                                                       std::span<const KeyOutcome> issued,
                                                       const MoveWaitOptions& options) {
    std::vector<MoveWatch> watches(issued.size(), MoveWatch(move));
    for (size_t i = 0; i < issued.size(); ++i) {
        watches[i].OnIssued(issued[i].status, issued[i].outcome);
    }
    auto unfinished = [&] {
        return std::any_of(watches.begin(), watches.end(),
                           [](const MoveWatch& w) { return !w.finished(); });
    };
    auto interval = std::chrono::milliseconds(10);
    while (unfinished()) {
        // Stat every key being polled (inspection: no lease, no recency, no promotion).
        for (size_t i = 0; i < watches.size(); ++i) {
            if (watches[i].next() != MoveWatch::Next::kPoll) continue;
            auto stat = Stat(issued[i].key);
            if (stat.ok()) {
                watches[i].OnStat(&stat->object);
            } else if (stat.status().Is(StatusCode::kNotFound)) {
                watches[i].OnStat(nullptr);
            } else {
                return stat.status();
            }
        }
        // Ask again for the keys that want it (busy refusals, an evict after its offload),
        // in batches.
        std::vector<size_t> again;
        for (size_t i = 0; i < watches.size(); ++i) {
            if (watches[i].next() == MoveWatch::Next::kIssue) again.push_back(i);
        }
        for (size_t start = 0; start < again.size(); start += rpc::kMaxBatchKeys) {
            size_t n = std::min(rpc::kMaxBatchKeys, again.size() - start);
            std::vector<std::string> keys;
            keys.reserve(n);
            for (size_t j = 0; j < n; ++j) keys.push_back(issued[again[start + j]].key);
            auto got = Move(move, keys, options.force);
            if (!got.ok()) return got.status();
            for (size_t j = 0; j < n && j < got->size(); ++j) {
                watches[again[start + j]].OnIssued((*got)[j].status, (*got)[j].outcome);
            }
        }
        if (!unfinished()) break;
        if (std::chrono::steady_clock::now() >= options.deadline) {
            for (MoveWatch& w : watches) w.OnDeadline();
            break;
        }
        std::this_thread::sleep_for(interval);
        interval = std::min(interval * 2, std::chrono::milliseconds(200));
    }

    std::vector<MoveKeyResult> out;
    out.reserve(watches.size());
    for (size_t i = 0; i < watches.size(); ++i) {
        const MoveWatch& w = watches[i];
        MoveKeyResult r{issued[i].key, w.end(), w.outcome(), Status::Ok()};
        const std::string target(TierMoveTarget(move));
        switch (w.end()) {
            case MoveEnd::kReached:
                break;
            case MoveEnd::kRefused:
            case MoveEnd::kBusy:
                r.status = w.refusal();
                break;
            case MoveEnd::kRemoved:
                r.status = Status::NotFound("key " + QuoteKey(r.key) + " was removed while waiting");
                break;
            case MoveEnd::kEndedShort:
                r.status = Status::IoError(std::string(TierMoveName(move)) + " of " +
                                           QuoteKey(r.key) + " ended without " + target +
                                           " (the task failed, expired or was cancelled)");
                break;
            case MoveEnd::kLate:
                r.status = Status::Timeout(QuoteKey(r.key) + " still lacks " + target +
                                           " at the deadline");
                break;
        }
        out.push_back(std::move(r));
    }
    return out;
}

}  // namespace mooncake
