#include "daemon/master_service.h"

#include <chrono>
#include <optional>

#include "core/base/metrics.h"
#include "node/access.h"
#include "daemon/config_file.h"
#include "node/scrub.h"
#include "daemon/node_directory.h"
#include "node/rpc_server.h"
#include "mooncake_constants.h"
#include "spdlog/spdlog.h"
#include "thrift/convert.h"
#include "net/net.h"
#include "thrift/rpc_limits.h"

namespace mooncake {
namespace {

using rpc::Throw;
using rpc::ThrowIfError;

constexpr int32_t kMaxListLimit = 10000;
constexpr int32_t kMaxTasksPerPoll = 65536;

void CheckBatch(size_t n) {
    if (n > rpc::kMaxBatchKeys) {
        Throw(Status::InvalidArgument("a batch holds at most " +
                                      std::to_string(rpc::kMaxBatchKeys) + " items"));
    }
}

// ---- tenants: the session scopes every key its caller names and unscopes every key it
// answers with (core/base/tenant.h); below it, a key is a stored key. ----

const KeyScope& SessionScope() { return CurrentRpcSession().scope; }

// Whether a session with `creds` may act in `tenant` (as Hello names it). A tenant's token
// grants that tenant only. Once tenants have tokens, naming one without its token (or the
// cluster's) is refused: a tokenless session may read, but only the default tenant's keys.
Status TenantGranted(const Credentials& creds, const std::string& tenant) {
    const bool named = !tenant.empty() && tenant != kDefaultTenant;
    if (!creds.tenant.empty()) {
        if (named && tenant != creds.tenant) {
            return Status::IllegalClient("the token of tenant '" + creds.tenant +
                                         "' does not grant tenant '" + tenant + "'");
        }
        return Status::Ok();
    }
    if (named && !creds.authorized) {
        return Status::IllegalClient("tenant '" + tenant + "' needs its own token or the "
                                     "cluster's (--auth_token_file)");
    }
    return Status::Ok();
}

// The stored key of the caller's `key`. A default-tenant session may also name a stored key
// of any tenant as it is: nodes do (ending a put, reporting a record), and so may an
// administrator; no client library lets a caller's key hold the NUL that frames one.
Result<std::string> SessionKey(const std::string& key) {
    const KeyScope& scope = SessionScope();
    if (scope.is_default() && !key.empty() && key[0] == '\0') {
        if (!CurrentRpcSession().credentials.authorized) {
            return Status::IllegalClient("naming a stored key needs the cluster's token");
        }
        MC_RETURN_IF_ERROR(ValidateKey(key));
        return key;
    }
    return scope.Scope(key);
}

// SessionKey, whose refusal is the call's.
std::string Scoped(const std::string& key) {
    Result<std::string> r = SessionKey(key);
    ThrowIfError(r.status());
    return std::move(*r);
}

// A prefix (or a listing's start) of the caller's keys: it may be empty, but holds no NUL.
void CheckKeyPart(const std::string& part, const char* what) {
    if (part.find('\0') != std::string::npos) {
        Throw(Status::InvalidArgument(std::string(what) + " contains a NUL byte"));
    }
}

// What the caller calls one of the session's stored keys.
void Unscope(std::string& key) {
    if (SessionScope().Contains(key)) key = std::string(SessionScope().Unscope(key));
}

// A batch's keys scoped one by one. A key that cannot be scoped keeps its refusal, and an
// empty stored key in its place (the store refuses that alone), so items stay aligned.
struct ScopedBatch {
    std::vector<std::string> keys;
    std::vector<Status> refused;
    Status Outcome(size_t i, const Status& stored) const {
        return refused[i].ok() ? stored : refused[i];
    }
};
ScopedBatch ScopeEach(const std::vector<std::string>& keys) {
    ScopedBatch batch;
    batch.keys.reserve(keys.size());
    batch.refused.reserve(keys.size());
    for (const std::string& key : keys) {
        Result<std::string> r = SessionKey(key);
        batch.refused.push_back(r.status());
        batch.keys.push_back(r.ok() ? std::move(*r) : std::string());
    }
    return batch;
}

uint64_t NonNegative(int64_t v, const char* what) {
    if (v < 0) Throw(Status::InvalidArgument(std::string(what) + " must not be negative"));
    return static_cast<uint64_t>(v);
}

// Replica reports of a node registering again: converted, handed to the store, one outcome
// per report back.
template <typename Report, typename WireReport, typename Register>
std::vector<rpc::Outcome> RegisterReports(const std::vector<WireReport>& reports,
                                          Register register_in_store) {
    CheckBatch(reports.size());
    std::vector<Report> list;
    list.reserve(reports.size());
    for (const auto& r : reports) list.push_back(rpc::FromWire(r));
    Result<std::vector<Status>> results = register_in_store(list);
    ThrowIfError(results.status());
    std::vector<rpc::Outcome> out;
    for (const Status& st : *results) out.push_back(rpc::ToOutcome(st));
    return out;
}

std::string_view KnobTypeName(KnobType type) {
    switch (type) {
        case KnobType::kBool: return "bool";
        case KnobType::kInt: return "int";
        case KnobType::kDouble: return "double";
        case KnobType::kSize: return "size";
        case KnobType::kEnum: return "enum";
        case KnobType::kString: return "string";
    }
    return "string";
}

}  // namespace

// One handler invocation: checks the session against the method's entry in the access
// table (node/access.cc: Hello first; the token for anything that changes state), times
// the call.
class MasterService::Call {
public:
    Call(MasterService& service, std::string_view method)
        : latency_(service.LatencyOf(method)), start_(std::chrono::steady_clock::now()) {
        const Credentials& creds = CurrentRpcSession().credentials;
        Status st = CheckAccess(MasterMethodPermissions(), method, creds);
        if (!st.ok()) {
            if (!creds.greeted) {
                Throw(Status::IllegalClient(
                    "call Hello first (protocol version " +
                    std::to_string(rpc::g_mooncake_constants.PROTOCOL_VERSION) + ")"));
            }
            spdlog::debug("refused {}: {}", method, st.message());
            Throw(st);
        }
        if (service.options_.gate && method != "Hello") {
            if (Status gate = service.options_.gate(method); !gate.ok()) Throw(gate);
        }
    }
    ~Call() {
        latency_.Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
                             .count());
    }

private:
    Histogram& latency_;
    std::chrono::steady_clock::time_point start_;
};

MasterService::MasterService(MasterServiceOptions options, MasterStore& store,
                             NodeDirectory& directory)
    : options_(std::move(options)), store_(store), directory_(directory) {
    for (const MethodPermission& m : MasterMethodPermissions()) {
        latency_[m.method] = &store_.metrics().GetHistogram(
            "rpc_request_seconds", "control RPC latency in seconds, by method",
            LatencyBucketsSeconds(), {{"method", std::string(m.method)}});
    }
}

Histogram& MasterService::LatencyOf(std::string_view method) {
    auto it = latency_.find(method);
    if (it == latency_.end()) {
        // Every method must have a row in the access table: refused until it does.
        Throw(Status::IllegalClient("'" + std::string(method) +
                                    "' is missing from the access table (node/access.cc)"));
    }
    return *it->second;
}

rpc::NodeLocator MasterService::Locator() {
    return [this](NodeId id) { return directory_.Locate(id); };
}

// ---------------- session ----------------

void MasterService::Hello(rpc::HelloReply& out, int32_t protocol_version,
                          const std::string& auth_token, const std::string& client_name,
                          const std::string& tenant) {
    Call call(*this, "Hello");
    const int32_t ours = rpc::g_mooncake_constants.PROTOCOL_VERSION;
    if (protocol_version != ours) {
        Throw(Status::InvalidArgument("protocol version " + std::to_string(protocol_version) +
                                      " is not supported; this master speaks " +
                                      std::to_string(ours)));
    }
    auto creds = Authenticate(options_.auth_token, auth_token, options_.tenant_tokens);
    if (!creds.ok()) {
        spdlog::warn("refused a connection of '{}': bad auth token", client_name);
        Throw(creds.status());
    }
    Result<KeyScope> scope = KeyScope::Make(creds->tenant.empty() ? tenant : creds->tenant);
    if (Status granted = TenantGranted(*creds, tenant); !granted.ok()) {
        store_.metrics()
            .GetCounter("tenant_refused_total",
                        "sessions refused for naming a tenant their token does not grant")
            .Inc();
        spdlog::warn("refused a connection of '{}': {}", client_name, granted.message());
        Throw(granted);
    }
    if (!scope.ok()) {
        spdlog::warn("refused a connection of '{}': {}", client_name, scope.status().message());
        Throw(scope.status());
    }
    CurrentRpcSession().credentials = *creds;
    CurrentRpcSession().scope = *scope;
    out.__set_tenant(std::string(scope->tenant()));
    out.protocol_version = ours;
    out.client_id = static_cast<int64_t>((uint64_t{options_.epoch} << 32) |
                                         (next_client_.fetch_add(1) & 0xFFFFFFFFu));
    out.role = options_.role;
    out.server_version = "mooncake-tier 0.1.0";
    if (!options_.by_key_data_address.empty()) {
        out.__set_by_key_data_address(options_.by_key_data_address);
    }
}

// ---------------- objects ----------------

void MasterService::PutStart(rpc::PutStartReply& out, int64_t client_id, const std::string& key,
                             int64_t size, int64_t preferred_node, const rpc::PutConfig& pin) {
    Call call(*this, "PutStart");
    const PutConfig held = rpc::FromWire(pin);
    auto r = store_.PutStart(static_cast<ClientId>(client_id), Scoped(key),
                             NonNegative(size, "size"),
                             static_cast<NodeId>(std::max<int64_t>(0, preferred_node)),
                             /*hint=*/nullptr, held);
    ThrowIfError(r.status());
    out = rpc::ToWire(*r, Locator());
}

void MasterService::PutEnd(int64_t client_id, const std::string& key, int64_t generation) {
    Call call(*this, "PutEnd");
    ThrowIfError(store_.PutEnd(static_cast<ClientId>(client_id), Scoped(key),
                               static_cast<Generation>(generation)));
}

void MasterService::PutRevoke(int64_t client_id, const std::string& key, int64_t generation) {
    Call call(*this, "PutRevoke");
    ThrowIfError(store_.PutRevoke(static_cast<ClientId>(client_id), Scoped(key),
                                  static_cast<Generation>(generation)));
}

void MasterService::GetReplicaList(rpc::ObjectInfo& out, const std::string& key) {
    Call call(*this, "GetReplicaList");
    auto r = store_.GetReplicaList(Scoped(key));
    ThrowIfError(r.status());
    out = rpc::ToWire(*r, store_.clock().Now(), Locator());
    Unscope(out.key);
}

void MasterService::Remove(const std::string& key, bool force) {
    Call call(*this, "Remove");
    ThrowIfError(store_.Remove(Scoped(key), force));
}

bool MasterService::Exists(const std::string& key, bool prefetch) {
    Call call(*this, "Exists");
    auto r = store_.Exists(Scoped(key), prefetch);
    ThrowIfError(r.status());
    return *r;
}

void MasterService::BatchPutStart(std::vector<rpc::PutStartResult>& out, int64_t client_id,
                                  const std::vector<rpc::PutStartItem>& items,
                                  int64_t preferred_node) {
    Call call(*this, "BatchPutStart");
    CheckBatch(items.size());
    out.reserve(items.size());
    // A batch whose last value is smaller than its others, all one size, ends with a request's
    // partial tail block (core/master/put_hint.h): told to the store as such.
    BatchShape shape;
    for (const rpc::PutStartItem& item : items) shape.Add(static_cast<uint64_t>(item.size));
    PutHint tail;
    tail.last_partial = true;
    for (const rpc::PutStartItem& item : items) {
        const bool is_tail = &item == &items.back() && shape.LastIsPartialTail();
        rpc::PutStartResult result;
        Result<std::string> key = SessionKey(item.key);
        Result<PutStartReply> r =
            !key.ok() ? Result<PutStartReply>(key.status())
            : item.size < 0
                ? Result<PutStartReply>(Status::InvalidArgument("size must not be negative"))
                : store_.PutStart(static_cast<ClientId>(client_id), *key,
                                  static_cast<uint64_t>(item.size),
                                  static_cast<NodeId>(std::max<int64_t>(0, preferred_node)),
                                  is_tail ? &tail : nullptr,
                                  item.__isset.pin ? rpc::FromWire(item.pin) : PutConfig{});
        result.outcome = rpc::ToOutcome(r.status());
        if (r.ok()) result.__set_reply(rpc::ToWire(*r, Locator()));
        out.push_back(std::move(result));
    }
}

void MasterService::BatchPutEnd(std::vector<rpc::Outcome>& out, int64_t client_id,
                                const std::vector<rpc::KeyGeneration>& items) {
    Call call(*this, "BatchPutEnd");
    CheckBatch(items.size());
    for (const auto& item : items) {
        Result<std::string> key = SessionKey(item.key);
        out.push_back(rpc::ToOutcome(
            key.ok() ? store_.PutEnd(static_cast<ClientId>(client_id), *key,
                                     static_cast<Generation>(item.generation))
                     : key.status()));
    }
}

void MasterService::BatchPutRevoke(std::vector<rpc::Outcome>& out, int64_t client_id,
                                   const std::vector<rpc::KeyGeneration>& items) {
    Call call(*this, "BatchPutRevoke");
    CheckBatch(items.size());
    for (const auto& item : items) {
        Result<std::string> key = SessionKey(item.key);
        out.push_back(rpc::ToOutcome(
            key.ok() ? store_.PutRevoke(static_cast<ClientId>(client_id), *key,
                                        static_cast<Generation>(item.generation))
                     : key.status()));
    }
}

void MasterService::BatchGetReplicaList(std::vector<rpc::ObjectResult>& out,
                                        const std::vector<std::string>& keys) {
    Call call(*this, "BatchGetReplicaList");
    CheckBatch(keys.size());
    const ScopedBatch batch = ScopeEach(keys);
    auto results = store_.BatchGetReplicaList(batch.keys);
    Nanos now = store_.clock().Now();
    auto locate = Locator();
    for (size_t i = 0; i < results.size(); ++i) {
        const auto& r = results[i];
        rpc::ObjectResult result;
        result.outcome = rpc::ToOutcome(batch.Outcome(i, r.status()));
        if (r.ok()) {
            result.__set_object(rpc::ToWire(*r, now, locate));
            Unscope(result.object.key);
        }
        out.push_back(std::move(result));
    }
}

void MasterService::BatchRemove(std::vector<rpc::Outcome>& out,
                                const std::vector<std::string>& keys, bool force) {
    Call call(*this, "BatchRemove");
    CheckBatch(keys.size());
    const ScopedBatch batch = ScopeEach(keys);
    const std::vector<Status> removed = store_.BatchRemove(batch.keys, force);
    for (size_t i = 0; i < removed.size(); ++i) {
        out.push_back(rpc::ToOutcome(batch.Outcome(i, removed[i])));
    }
}

void MasterService::BatchExists(std::vector<rpc::ExistsResult>& out,
                                const std::vector<std::string>& keys, bool prefetch) {
    Call call(*this, "BatchExists");
    CheckBatch(keys.size());
    const ScopedBatch batch = ScopeEach(keys);
    const std::vector<Result<bool>> found = store_.BatchExists(batch.keys, prefetch);
    for (size_t i = 0; i < found.size(); ++i) {
        rpc::ExistsResult result;
        const Status st = batch.Outcome(i, found[i].status());
        result.outcome = rpc::ToOutcome(st);
        result.exists = st.ok() && *found[i];
        out.push_back(std::move(result));
    }
}

void MasterService::RemoveByPrefix(rpc::RemovePrefixReply& out, const std::string& prefix,
                                   bool force) {
    Call call(*this, "RemoveByPrefix");
    size_t skipped = 0;
    Status unrecorded;
    CheckKeyPart(prefix, "prefix");
    const KeyScope& scope = SessionScope();
    out.removed = static_cast<int64_t>(
        store_.RemoveByPrefix(scope.ScopePrefix(prefix), force, &skipped, &unrecorded, scope));
    out.skipped = static_cast<int64_t>(skipped);
    if (!unrecorded.ok()) Throw(unrecorded);
}

// ---------------- nodes ----------------

int64_t MasterService::RegisterNode(const rpc::NodeSpec& wire) {
    Call call(*this, "RegisterNode");
    NodeSpec spec = rpc::FromWire(wire);
    if (spec.segment_capacity == 0 && spec.disk_capacity == 0) {
        Throw(Status::InvalidArgument("a node must contribute DRAM or disk"));
    }
    auto data = net::ParseHostPort(spec.data_address);
    if (!data.ok()) {
        Throw(Status::InvalidArgument("data address: " + data.status().message()));
    }
    auto id = store_.RegisterNode(spec);
    ThrowIfError(id.status());
    directory_.Remember(*id, spec);
    spdlog::info("node {} registered: '{}' data {} segment {} disk {}", *id, spec.name,
                 spec.data_address, FormatSize(spec.segment_capacity),
                 FormatSize(spec.disk_capacity));
    return static_cast<int64_t>(*id);
}

void MasterService::Heartbeat(rpc::HeartbeatReply& out, int64_t node, int64_t applied) {
    Call call(*this, "Heartbeat");
    auto r = store_.Heartbeat(static_cast<NodeId>(node), static_cast<uint64_t>(applied));
    ThrowIfError(r.status());
    out = rpc::ToWire(*r);
}

void MasterService::UnregisterNode(int64_t node) {
    Call call(*this, "UnregisterNode");
    ThrowIfError(store_.UnregisterNode(static_cast<NodeId>(node)));
    spdlog::info("node {} left", node);
}

void MasterService::RegisterDiskReplicas(std::vector<rpc::Outcome>& out, int64_t node,
                                         const std::vector<rpc::DiskReplicaReport>& reports) {
    Call call(*this, "RegisterDiskReplicas");
    out = RegisterReports<DiskReplicaReport>(reports, [&](const auto& list) {
        return store_.RegisterDiskReplicas(static_cast<NodeId>(node), list);
    });
}

void MasterService::RegisterMemoryReplicas(std::vector<rpc::Outcome>& out, int64_t node,
                                           const std::vector<rpc::MemoryReplicaReport>& reports) {
    Call call(*this, "RegisterMemoryReplicas");
    out = RegisterReports<MemoryReplicaReport>(reports, [&](const auto& list) {
        return store_.RegisterMemoryReplicas(static_cast<NodeId>(node), list);
    });
}

void MasterService::ReportNodeHealth(int64_t node, const rpc::NodeHealth& health) {
    Call call(*this, "ReportNodeHealth");
    ThrowIfError(store_.ReportNodeHealth(static_cast<NodeId>(node), rpc::FromWire(health)));
}

void MasterService::ReportDiskReplicaDropped(int64_t node, const std::string& key,
                                             int64_t generation) {
    Call call(*this, "ReportDiskReplicaDropped");
    ThrowIfError(store_.ReportDiskReplicaDropped(static_cast<NodeId>(node), key,
                                                 static_cast<Generation>(generation)));
}

void MasterService::OffloadObjectHeartbeat(std::vector<rpc::OffloadTask>& out, int64_t node,
                                           int32_t max, int32_t wait_ms) {
    Call call(*this, "OffloadObjectHeartbeat");
    auto tasks = store_.OffloadObjectHeartbeat(
        static_cast<NodeId>(node), static_cast<size_t>(std::clamp(max, 0, kMaxTasksPerPoll)),
        std::chrono::milliseconds(std::clamp(wait_ms, 0, options_.max_long_poll_ms)));
    out.reserve(tasks.size());
    for (const auto& t : tasks) out.push_back(rpc::ToWire(t));
}

void MasterService::NotifyOffloadSuccess(int64_t node, const std::string& key,
                                         int64_t generation) {
    Call call(*this, "NotifyOffloadSuccess");
    ThrowIfError(store_.NotifyOffloadSuccess(static_cast<NodeId>(node), key,
                                             static_cast<Generation>(generation)));
}

void MasterService::NotifyOffloadFailure(int64_t node, const std::string& key,
                                         int64_t generation) {
    Call call(*this, "NotifyOffloadFailure");
    ThrowIfError(store_.NotifyOffloadFailure(static_cast<NodeId>(node), key,
                                             static_cast<Generation>(generation)));
}

void MasterService::PromotionObjectHeartbeat(std::vector<rpc::PromotionTask>& out, int64_t node,
                                             int32_t max, int32_t wait_ms) {
    Call call(*this, "PromotionObjectHeartbeat");
    auto tasks = store_.PromotionObjectHeartbeat(
        static_cast<NodeId>(node), static_cast<size_t>(std::clamp(max, 0, kMaxTasksPerPoll)),
        std::chrono::milliseconds(std::clamp(wait_ms, 0, options_.max_long_poll_ms)));
    Nanos now = store_.clock().Now();
    out.reserve(tasks.size());
    for (const auto& t : tasks) out.push_back(rpc::ToWire(t, now));
}

void MasterService::PromotionAllocStart(rpc::Replica& out, int64_t node, const std::string& key,
                                        int64_t generation, int64_t size) {
    Call call(*this, "PromotionAllocStart");
    auto r = store_.PromotionAllocStart(static_cast<NodeId>(node), key,
                                        static_cast<Generation>(generation),
                                        NonNegative(size, "size"));
    ThrowIfError(r.status());
    out = rpc::ToWire(*r, Locator());
}

void MasterService::NotifyPromotionSuccess(int64_t node, const std::string& key,
                                           int64_t generation) {
    Call call(*this, "NotifyPromotionSuccess");
    ThrowIfError(store_.NotifyPromotionSuccess(static_cast<NodeId>(node), key,
                                               static_cast<Generation>(generation)));
}

void MasterService::NotifyPromotionFailure(int64_t node, const std::string& key,
                                           int64_t generation) {
    Call call(*this, "NotifyPromotionFailure");
    ThrowIfError(store_.NotifyPromotionFailure(static_cast<NodeId>(node), key,
                                               static_cast<Generation>(generation)));
}

// ---------------- admin ----------------

void MasterService::Stat(rpc::ObjectInfo& out, const std::string& key) {
    Call call(*this, "Stat");
    auto r = store_.Stat(Scoped(key));
    ThrowIfError(r.status());
    out = rpc::ToWire(*r, store_.clock().Now(), Locator());
    Unscope(out.key);
}

void MasterService::List(rpc::ListReply& out, const rpc::ListRequest& request) {
    Call call(*this, "List");
    if (request.__isset.tier && !rpc::FromWire(request.tier).ok()) {
        Throw(Status::InvalidArgument("unknown tier in List"));
    }
    ListOptions options = rpc::FromWire(request);
    CheckKeyPart(options.prefix, "prefix");
    CheckKeyPart(options.start_after, "start_after");
    options.prefix = SessionScope().ScopePrefix(options.prefix);
    options.start_after = SessionScope().ListStartAfter(options.start_after);
    size_t limit = static_cast<size_t>(std::clamp(request.limit, 1, kMaxListLimit));
    options.limit = limit + 1;  // one more tells whether another page exists
    std::vector<ObjectView> objects = store_.List(options);
    out.more = objects.size() > limit;
    if (out.more) objects.resize(limit);
    Nanos now = store_.clock().Now();
    auto locate = Locator();
    out.objects.reserve(objects.size());
    for (const auto& o : objects) {
        out.objects.push_back(rpc::ToWire(o, now, locate));
        Unscope(out.objects.back().key);
    }
}

void MasterService::Nodes(std::vector<rpc::NodeInfo>& out) {
    Call call(*this, "Nodes");
    Nanos now = store_.clock().Now();
    for (const NodeInfo& n : store_.Nodes()) out.push_back(rpc::ToWire(n, now));
}

void MasterService::Tasks(std::vector<rpc::TaskInfo>& out) {
    Call call(*this, "Tasks");
    for (const TaskView& t : store_.Tasks()) {
        if (!SessionScope().Contains(t.key)) continue;  // another tenant's
        out.push_back(rpc::ToWire(t));
        Unscope(out.back().key);
    }
}

void MasterService::Hot(std::vector<rpc::HotKey>& out, int32_t limit) {
    Call call(*this, "Hot");
    for (const HotKey& h : store_.Hot(static_cast<size_t>(std::clamp(limit, 0, kMaxListLimit)),
                                      SessionScope())) {
        out.push_back(rpc::ToWire(h, store_.clock().Now()));
        Unscope(out.back().key);
    }
}

std::vector<rpc::KnobInfo> MasterService::KnobTableOf(const Config& config) {
    std::vector<rpc::KnobInfo> out;
    for (const KnobDef& def : KnobTable()) {
        rpc::KnobInfo k;
        k.name = std::string(def.name);
        k.value = config.GetText(def.id);
        k.default_value = std::string(def.default_text);
        k.range = def.RangeText();
        k.tunable = def.runtime_tunable;
        k.doc = std::string(def.doc);
        k.type = std::string(KnobTypeName(def.type));
        out.push_back(std::move(k));
    }
    return out;
}

void MasterService::TuneGet(std::vector<rpc::KnobInfo>& out) {
    Call call(*this, "TuneGet");
    out = KnobTableOf(store_.config());
}

void MasterService::TuneSet(std::vector<rpc::KnobInfo>& out,
                            const std::vector<rpc::KnobAssignment>& assignments, bool persist) {
    Call call(*this, "TuneSet");
    if (assignments.empty()) Throw(Status::InvalidArgument("nothing to set"));
    KnobAssignments list;
    for (const auto& a : assignments) list.emplace_back(a.name, a.value);
    // Persisting: the new file is written aside first, so a file that cannot be written
    // refuses the change before anything is applied; applied, it replaces the original.
    std::optional<ConfigFileUpdate> update;
    if (persist) {
        auto prepared = ConfigFileUpdate::Prepare(options_.config_file, list);
        ThrowIfError(prepared.status());
        update.emplace(std::move(*prepared));
    }
    ThrowIfError(store_.Tune(list));
    if (update) {
        Status st = update->Commit();
        if (!st.ok()) {
            Throw(Status::IoError("applied, but not persisted: " + st.message()));
        }
    }
    if (options_.on_tuned) {
        if (Status st = options_.on_tuned(list); !st.ok()) {
            Throw(Status(st.code(), "applied, but not kept for the next leader: " + st.message()));
        }
    }
    for (const auto& [name, value] : list) {
        spdlog::info("tune: {} = {}", name, store_.config().GetText(name).value());
        if (name == "log_level") {
            spdlog::set_level(spdlog::level::from_str(store_.config().log_level()));
        }
    }
    out = KnobTableOf(store_.config());
}

void MasterService::MetricsText(std::string& out) {
    Call call(*this, "MetricsText");
    out = store_.metrics().RenderPrometheus();
}

namespace {

template <typename Fn>
std::vector<rpc::ManualResult> ForEachKey(const std::vector<std::string>& keys, Fn&& fn) {
    CheckBatch(keys.size());
    std::vector<rpc::ManualResult> out;
    out.reserve(keys.size());
    for (const std::string& key : keys) {
        Result<std::string> stored = SessionKey(key);
        Result<ManualOutcome> r = stored.ok() ? fn(*stored) : Result<ManualOutcome>(stored.status());
        rpc::ManualResult result;
        result.key = key;
        result.outcome = rpc::ToOutcome(r.status());
        if (r.ok()) result.__set_result(rpc::ToWire(*r));
        out.push_back(std::move(result));
    }
    return out;
}

}  // namespace

void MasterService::Promote(std::vector<rpc::ManualResult>& out,
                            const std::vector<std::string>& keys, bool force) {
    Call call(*this, "Promote");
    out = ForEachKey(keys, [&](const std::string& k) { return store_.Promote(k, force); });
}

void MasterService::Offload(std::vector<rpc::ManualResult>& out,
                            const std::vector<std::string>& keys) {
    Call call(*this, "Offload");
    out = ForEachKey(keys, [&](const std::string& k) { return store_.Offload(k); });
}

void MasterService::Evict(std::vector<rpc::ManualResult>& out,
                          const std::vector<std::string>& keys) {
    Call call(*this, "Evict");
    out = ForEachKey(keys, [&](const std::string& k) { return store_.Evict(k); });
}

void MasterService::Scrub(std::vector<rpc::ScrubReply>& out, int64_t node) {
    Call call(*this, "Scrub");
    // Long: bounded by the disk's background rate, not by an RPC deadline.
    constexpr auto kConnect = std::chrono::seconds(3);
    constexpr auto kScrubMax = std::chrono::hours(24);
    bool found = false;
    for (const NodeInfo& n : store_.Nodes()) {
        if (node != 0 && static_cast<int64_t>(n.id) != node) continue;
        found = true;
        rpc::ScrubReply reply = options_.local_scrub
                                    ? options_.local_scrub()
                                    : ScrubRemoteNode(n.spec.name, options_.auth_token, kConnect,
                                                      kScrubMax);
        reply.node = n.spec.name;
        out.push_back(std::move(reply));
    }
    if (!found && node != 0) {
        Throw(Status::NotFound("no live node " + std::to_string(node) + " (see mooncakectl nodes)"));
    }
}

// ---------------- tenants ----------------

namespace {

rpc::TenantReport TenantReportToWire(const MasterStore::TenantReport& report) {
    rpc::TenantReport out;
    for (const TenantRow& row : report.tenants) {
        rpc::TenantInfo t;
        t.tenant = row.tenant;
        t.registered = row.registered;
        t.memory_quota = static_cast<int64_t>(row.quota.memory_bytes);
        t.disk_quota = static_cast<int64_t>(row.quota.disk_bytes);
        t.memory_bytes = static_cast<int64_t>(row.memory_bytes);
        t.memory_objects = static_cast<int64_t>(row.memory_objects);
        t.disk_bytes = static_cast<int64_t>(row.disk_bytes);
        t.disk_objects = static_cast<int64_t>(row.disk_objects);
        t.puts_refused = static_cast<int64_t>(row.puts_refused);
        t.quota_evictions = static_cast<int64_t>(row.quota_evictions);
        t.promotions = static_cast<int64_t>(row.promotions);
        out.tenants.push_back(std::move(t));
    }
    out.memory_quota_sum = static_cast<int64_t>(report.quota_sum.memory_bytes);
    out.disk_quota_sum = static_cast<int64_t>(report.quota_sum.disk_bytes);
    out.memory_capacity = static_cast<int64_t>(report.memory_capacity);
    out.disk_capacity = static_cast<int64_t>(report.disk_capacity);
    out.multi_tenant = report.multi_tenant;
    out.warnings = report.warnings;
    return out;
}

uint64_t QuotaOf(int64_t bytes, const char* what) {
    if (bytes < 0) Throw(Status::InvalidArgument(std::string(what) + " quota must not be negative"));
    return static_cast<uint64_t>(bytes);
}

}  // namespace

void MasterService::TenantList(rpc::TenantReport& out) {
    Call call(*this, "TenantList");
    const Credentials& creds = CurrentRpcSession().credentials;
    const std::string_view own = SessionScope().tenant();
    const bool scoped = !creds.tenant.empty() || own != kDefaultTenant;
    MasterStore::TenantReport report = store_.Tenants();
    if (scoped) {
        // A tenant sees its own row and the capacity, nothing that names or sizes the others.
        std::erase_if(report.tenants, [&](const TenantRow& row) { return row.tenant != own; });
        report.quota_sum = report.tenants.empty() ? TenantQuota{} : report.tenants[0].quota;
        report.warnings.clear();
    }
    out = TenantReportToWire(report);
}

void MasterService::TenantSet(rpc::TenantReport& out, const std::string& tenant,
                              int64_t memory_quota, int64_t disk_quota) {
    Call call(*this, "TenantSet");
    if (tenant.empty()) {
        Throw(Status::InvalidArgument("name the tenant (the default tenant is 'default')"));
    }
    TenantQuota quota{QuotaOf(memory_quota, "the MEMORY"), QuotaOf(disk_quota, "the LOCAL_DISK")};
    auto report = store_.SetTenant(tenant, quota);
    ThrowIfError(report.status());
    spdlog::info("tenant: set '{}' memory={} disk={}", tenant, quota.memory_bytes,
                 quota.disk_bytes);
    out = TenantReportToWire(*report);
    if (!options_.tenant_policy_persisted) {
        out.warnings.push_back("not persisted: no --tenant_policy_file (kept in memory only)");
    }
}

void MasterService::TenantRemove(rpc::TenantReport& out, const std::string& tenant, bool purge) {
    Call call(*this, "TenantRemove");
    if (tenant.empty()) {
        Throw(Status::InvalidArgument("name the tenant (the default tenant is 'default')"));
    }
    size_t removed = 0;
    auto report = store_.RemoveTenant(tenant, purge, &removed);
    ThrowIfError(report.status());
    spdlog::info("tenant: removed '{}'{} ({} object(s) purged)", tenant, purge ? " with purge" : "",
                 removed);
    out = TenantReportToWire(*report);
    out.removed = static_cast<int64_t>(removed);
    if (!options_.tenant_policy_persisted) {
        out.warnings.push_back("not persisted: no --tenant_policy_file (kept in memory only)");
    }
}

void MasterService::CheckInvariants(rpc::InvariantReport& out) {
    Call call(*this, "CheckInvariants");
    out = rpc::ToWire(store_.CheckInvariants());
}

}  // namespace mooncake
