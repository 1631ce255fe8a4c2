#include "daemon/roles.h"
#include "daemon/tenant_policy_file.h"

#include <atomic>
#include <chrono>
#include <ctime>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <thread>

#include "MasterService.h"
#include "NodeService.h"
#include "core/disk/disk_store.h"
#include "core/master/master_store.h"
#include "core/base/metrics.h"
#include "node/access.h"
#include "node/data_server.h"
#include "node/embedded_node.h"
#include "daemon/ha/cluster_state.h"
#include "daemon/ha/leader_election.h"
#include "daemon/drain_jobs.h"
#include "daemon/master_link.h"
#include "node/rpc_master_link.h"
#include "daemon/master_service.h"
#include "daemon/metrics_http.h"
#include "node/node.h"
#include "daemon/node_directory.h"
#include "node/node_service.h"
#include "node/rpc_server.h"
#include "node/scrub.h"
#include "daemon/sd_notify.h"
#include "node/segment.h"
#include "spdlog/spdlog.h"
#include "net/data_transport.h"
#include "thrift/master_channel.h"

namespace mooncake {
namespace {

// This process's node incarnation: random, non-zero, fixed for the process's lifetime, so the
// master can tell a restarted node (a new value under the same name) from a retry of this one.
uint64_t ProcessIncarnation() {
    static const uint64_t value = [] {
        std::random_device rd;
        uint64_t v = 0;
        while (v == 0) v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
        return v;
    }();
    return value;
}

constexpr auto kTickPeriod = std::chrono::milliseconds(10);
constexpr auto kDirectoryPeriod = std::chrono::seconds(1);
constexpr int kMaxRpcConnections = 1024;

// The addresses a process derives from its knobs, checked once.
using Addresses = NodeAddresses;

Result<Addresses> ResolveAddresses(const Config& config) {
    Addresses a;
    auto listen = net::ParseHostPort(config.listen());
    if (!listen.ok()) return Status::InvalidArgument("--listen: " + listen.status().message());
    a.listen = *listen;
    if (config.advertise().empty()) {
        if (a.listen.host == "0.0.0.0" || a.listen.host == "::" || a.listen.host.empty()) {
            return Status::InvalidArgument(
                "--advertise HOST:PORT is needed when --listen is a wildcard address");
        }
        a.advertise = a.listen;
    } else {
        auto adv = net::ParseHostPort(config.advertise());
        if (!adv.ok()) return Status::InvalidArgument("--advertise: " + adv.status().message());
        a.advertise = *adv;
    }
    int64_t data_port = config.data_port();
    if (data_port == 0) {
        if (a.listen.port == 65535) {
            return Status::InvalidArgument("--data_port is needed when --listen uses port 65535");
        }
        data_port = a.listen.port + 1;
    }
    a.data_port = static_cast<uint16_t>(data_port);
    a.data_address = net::HostPort{a.advertise.host, a.data_port}.ToString();
    return a;
}

uint32_t WallClockEpoch() {
    return static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count() /
                                 64);
}

uint32_t MasterEpoch() {
    // The wall clock in 1/16 s, low 32 bits (it wraps every 8.5 years): two masters started
    // on the same address one after the other never share it, so neither generations nor
    // node ids of one are ever taken for the other's. Computed once per process.
    static const uint32_t epoch = WallClockEpoch();
    return epoch;
}

// The id epoch of one HA leadership term: the wall clock as above, mixed with the cluster's
// etcd epoch, so two terms (of one process or of two) never hand out the same ids.
uint32_t TermEpoch(uint64_t etcd_epoch) {
    return WallClockEpoch() ^ static_cast<uint32_t>(etcd_epoch * 0x9E3779B1u);
}

// The longest a new HA leader keeps clients waiting for the previous leader's nodes: a node
// whose call hung on a stalled old leader notices within the HA control-call bound (5 s).
constexpr auto kHaWarmup = std::chrono::milliseconds(6000);

bool IsNodeMethod(std::string_view method) {
    for (const MethodPermission& m : MasterMethodPermissions()) {
        if (m.method == method) return m.why == "node";
    }
    return false;
}

// ---------------- master part ----------------

class MasterPart {
public:
    MasterPart(Config& config, MetricsRegistry& metrics, uint32_t epoch = MasterEpoch())
        : store_(config, clock_, metrics, epoch), directory_(store_) {}
    ~MasterPart() { Stop(); }

    Status Start(const net::HostPort& listen, const std::string& role, const DaemonContext& ctx,
                 std::function<rpc::ScrubReply()> local_scrub = {},
                 const std::string& by_key_data_address = {}) {
        const std::string& config_file = ctx.config_file;
        MasterServiceOptions options;
        options.by_key_data_address = by_key_data_address;
        options.role = role;
        options.auth_token = ctx.auth_token;
        options.tenant_tokens = ctx.tenant_tokens;
        options.epoch = MasterEpoch();
        options.config_file = config_file;
        options.local_scrub = std::move(local_scrub);
        options.tenant_policy_persisted = !store_.config().tenant_policy_file().empty();
        return Start(listen, std::move(options));
    }
    Status Start(const net::HostPort& listen, MasterServiceOptions options) {
        auto handler = std::make_shared<MasterService>(options, store_, directory_);
        auto processor = std::make_shared<rpc::MasterServiceProcessor>(handler);
        auto server = RpcServer::Start(processor, {listen, kMaxRpcConnections});
        if (!server.ok()) return server.status();
        rpc_ = std::move(*server);
        ticker_ = std::thread([this] { TickLoop(); });
        return Status::Ok();
    }

    // Stops serving RPC first (no new work), then the background thread.
    void Stop() {
        if (rpc_) rpc_->Stop();
        {
            MutexLock lock(mu_);
            stopping_ = true;
            cv_.NotifyAll();
        }
        if (ticker_.joinable()) ticker_.join();
    }

    MasterStore& store() { return store_; }
    NodeDirectory& directory() { return directory_; }
    // Called from the tick thread with the live nodes' names whenever they change (before
    // Start; HA keeps them in etcd).
    // `fn` returns false when it could not take the change (offered again next time).
    void OnNodesChanged(std::function<bool(const std::set<std::string>&)> fn) {
        on_nodes_ = std::move(fn);
    }
    // Called from the tick thread once a second (before Start).
    void OnSecond(std::function<void()> fn) { on_second_ = std::move(fn); }

private:
    void TickLoop() MC_EXCLUDES(mu_) {
        auto next_directory = std::chrono::steady_clock::now();
        MutexLock lock(mu_);
        while (!stopping_) {
            mu_.unlock();
            store_.Tick();
            if (std::chrono::steady_clock::now() >= next_directory) {
                next_directory = std::chrono::steady_clock::now() + kDirectoryPeriod;
                directory_.Refresh();
                UpdateNodeGauges();
            }
            mu_.lock();
            const auto deadline = std::chrono::steady_clock::now() + kTickPeriod;
            while (!stopping_) {
                if (!cv_.WaitUntil(mu_, deadline)) break;
            }
        }
    }

    // Per-node DRAM and disk capacity and use, by the node's advertised name.
    void UpdateNodeGauges() {
        MetricsRegistry& m = store_.metrics();
        std::set<std::string> live;
        for (const NodeInfo& n : store_.Nodes()) {
            Labels labels{{"node", n.spec.name}};
            live.insert(n.spec.name);
            m.GetGauge("node_dram_capacity_bytes", "DRAM segment of each live node", labels)
                .Set(static_cast<double>(n.spec.segment_capacity));
            m.GetGauge("node_dram_used_bytes", "DRAM allocated in each live node's segment",
                       labels)
                .Set(static_cast<double>(n.segment_used));
            m.GetGauge("node_disk_capacity_bytes", "LOCAL_DISK capacity of each live node",
                       labels)
                .Set(static_cast<double>(n.spec.disk_capacity));
            m.GetGauge("node_disk_used_bytes",
                       "LOCAL_DISK bytes allocated on each live node (whole 4 KiB blocks per "
                       "object)",
                       labels)
                .Set(static_cast<double>(n.disk_used));
        }
        // A node that left keeps its series (Prometheus dislikes vanishing ones) at zero.
        for (const std::string& name : seen_) {
            if (live.count(name)) continue;
            Labels labels{{"node", name}};
            for (const char* g : {"node_dram_capacity_bytes", "node_dram_used_bytes",
                                  "node_disk_capacity_bytes", "node_disk_used_bytes"}) {
                m.GetGauge(g, "", labels).Set(0);
            }
        }
        seen_.insert(live.begin(), live.end());
        if (on_nodes_ && live != last_live_ && on_nodes_(live)) last_live_ = live;
        if (on_second_) on_second_();
    }

    SteadyClock clock_;
    MasterStore store_;
    NodeDirectory directory_;
    std::unique_ptr<RpcServer> rpc_;
    std::thread ticker_;
    Mutex mu_;
    CondVar cv_;
    bool stopping_ MC_GUARDED_BY(mu_) = false;
    std::set<std::string> seen_;  // tick thread only
    std::set<std::string> last_live_;  // tick thread only
    std::function<bool(const std::set<std::string>&)> on_nodes_;
    std::function<void()> on_second_;
};

Status StartMetrics(MetricsHttp& http, const Config& config, const Addresses& addresses) {
    if (config.metrics_port() == 0) return Status::Ok();
    return http.Start({addresses.listen.host, static_cast<uint16_t>(config.metrics_port())});
}

// The master's HTTP admin endpoints (daemon/metrics_http.h) over its store: inspection only.
// Keys are listed only when the cluster has no auth token (the HTTP port has none).
MasterHttpView MasterView(MasterStore& store, const std::string& auth_token) {
    MasterHttpView view;
    view.drains = std::make_shared<DrainJobs>(store, auth_token);
    view.nodes = [&store] { return store.Nodes(); };
    view.stat = [&store](const std::string& key) { return store.Stat(key); };
    if (auth_token.empty()) {
        view.keys = [&store] {
            std::vector<std::string> keys;
            ListOptions list;
            list.limit = 10000;
            for (;;) {
                std::vector<ObjectView> page = store.List(list);
                for (const ObjectView& o : page) keys.push_back(o.key);
                if (page.size() < list.limit) break;
                list.start_after = page.back().key;
            }
            return keys;
        };
    }
    return view;
}

// --tenant_policy_file (one master, standalone): loaded before serving, rewritten before
// every `tenant set|rm` applies. Without it the policy lives in memory only.
Status UseTenantPolicyFile(MasterStore& store, const Config& config) {
    const std::string path = config.tenant_policy_file();
    if (path.empty()) return Status::Ok();
    auto policy = ReadTenantPolicyFile(path);
    if (!policy.ok()) return policy.status();
    MC_RETURN_IF_ERROR(store.LoadTenantPolicy(*policy));
    if (!policy->empty()) {
        spdlog::info("tenants: {} loaded from '{}'", policy->size(), path);
    }
    store.SetTenantPolicyWriter(
        [path](const TenantPolicy& next) { return WriteTenantPolicyFile(path, next); });
    return Status::Ok();
}

int Fail(const Status& st) {
    spdlog::error("{}", st.message());
    return 1;
}

// The node's byte channels: the data channel (its failure is the daemon's), then the
// shared-pool channel. Engines on this host may hand their pools to the latter; without it
// they still reach the node over TCP, so a failure to listen there is logged, not fatal.
Status StartDataChannels(NodeParts& node, const NodeAddresses& addresses,
                         const DaemonContext& ctx, bool serves_by_key) {
    MC_RETURN_IF_ERROR(
        node.StartData(addresses, ctx.auth_token, serves_by_key, ctx.tenant_tokens));
    if (Status st = node.StartSharedPools(addresses, ctx.auth_token); !st.ok()) {
        spdlog::warn("no shared-pool channel ({}): engines on this host send bytes over TCP",
                     st.message());
    }
    return Status::Ok();
}

// The --listen port is bound last (clients must not reach a half-started daemon), after the
// data channel on another port: a --listen port already taken is found first here, so the
// error names the port the operator gave rather than the data port (which a second daemon
// on the same --listen holds too).
Status CheckListenPortFree(const net::HostPort& listen) {
    auto probe = net::ListenTcp(listen);
    if (!probe.ok()) {
        return Status(probe.status().code(),
                      "cannot listen on --listen " + listen.ToString() + ": " +
                          probe.status().message());
    }
    return Status::Ok();  // the probe socket closes here; the real one binds it again
}

void AnnounceReady(const std::string& what) {
    spdlog::info("{} ready", what);
    SdNotify("READY=1\nSTATUS=" + what + " ready");
}

}  // namespace

// --enable_ha: the master campaigns in etcd (daemon/ha/leader_election.h). Each term gets a
// fresh MasterPart: a standby's answers NOT_LEADER to everything but Hello; a leader's serves
// while its lease holds and starts empty, the nodes registering again (rejoin) rebuild its
// metadata. A leader that loses its lease throws its part away and stands by again.
// The tenant policy a new HA leader serves with: etcd's once it holds one; else the
// --tenant_policy_file's (if any), which then seeds etcd.
Result<TenantPolicy> LoadHaTenantPolicy(ha::ClusterState& state, const Config& config) {
    auto text = state.LoadTenants();
    if (!text.ok()) return text.status();
    if (text->has_value()) {
        auto policy = ParseTenantPolicy(**text);
        if (!policy.ok()) {
            return Status(policy.status().code(),
                          "the tenant policy in etcd: " + policy.status().message());
        }
        return policy;
    }
    const std::string path = config.tenant_policy_file();
    if (path.empty()) return TenantPolicy{};
    auto policy = ReadTenantPolicyFile(path);
    if (!policy.ok()) return policy.status();
    if (!policy->empty()) {
        MC_RETURN_IF_ERROR(state.SaveTenants(FormatTenantPolicy(*policy)));
        spdlog::info("ha: etcd seeded with {} tenant(s) from '{}'", policy->size(), path);
    }
    return policy;
}

int RunHaMaster(DaemonContext& ctx, const Addresses& addresses) {
    Config& config = ctx.config;
    if (config.etcd_endpoints().empty()) {
        return Fail(Status::InvalidArgument("--enable_ha needs --etcd_endpoints HOST:PORT[;...]"));
    }
    // Each etcd call is bounded by a third of the lease: a renewal that hangs leaves time
    // for another try before the leader must step down.
    const std::chrono::milliseconds ttl(config.ha_lease_ttl_sec() * 1000);
    auto etcd = ha::EtcdClient::Create(
        config.etcd_endpoints(),
        std::min<std::chrono::milliseconds>(std::chrono::seconds(1), ttl / 3));
    if (!etcd.ok()) return Fail(etcd.status());
    const std::string me = addresses.advertise.ToString();
    const std::string cluster = config.cluster_id();
    MetricsRegistry metrics;
    ha::ElectionOptions election_options;
    election_options.cluster_id = cluster;
    election_options.address = me;
    election_options.lease_ttl_sec = config.ha_lease_ttl_sec();
    ha::LeaderElection election(**etcd, election_options, metrics);
    ha::ClusterState state(**etcd, cluster);
    // The HTTP port (after the election: it asks the election at each request). The cluster
    // endpoints answer from the leader's store once it serves; a standby answers them 503
    // naming the leader, never an empty segment list.
    MetricsHttp http(metrics);
    http.ServeHaMaster([&election] {
        return MasterRole{election.Serving() ? "leader" : "standby", election.KnownLeader()};
    });
    if (Status st = StartMetrics(http, config, addresses); !st.ok()) return Fail(st);
    election.Start();
    AnnounceReady("master on " + addresses.listen.ToString() + " (HA cluster '" + cluster +
                  "', etcd " + config.etcd_endpoints() + ")");

    ha::Term term;  // seq 0: standby
    while (!ctx.shutdown.flag().load()) {
        const bool leading = term.leading;
        TenantPolicy tenant_policy;
        if (leading) {
            auto loaded = state.LoadKnobs(config);
            Status ready = loaded.status();
            if (ready.ok()) {
                auto policy = LoadHaTenantPolicy(state, config);
                if (policy.ok()) {
                    tenant_policy = std::move(*policy);
                } else {
                    ready = policy.status();
                }
            }
            if (!ready.ok()) {
                // Serving with knobs or tenants the cluster did not choose is worse than a
                // short outage (a multi-tenant cluster would accept any tenant's puts).
                spdlog::warn("ha: cannot read the cluster's knobs and tenants from etcd ({}); "
                             "resigning",
                             ready.message());
                election.Resign();
                while (!ctx.shutdown.flag().load()) {
                    ha::Term now = election.WaitForChange(term.seq, std::chrono::milliseconds(200));
                    if (now.seq != term.seq) {
                        term = now;
                        break;
                    }
                }
                continue;
            } else if (*loaded > 0) {
                spdlog::info("ha: {} tuned knob(s) restored from etcd", *loaded);
            }
        }
        const uint32_t epoch = leading ? TermEpoch(term.epoch) : WallClockEpoch();
        // Warm-up of a new leader: clients wait (NOT_LEADER, which they retry) until the
        // nodes the previous leader had registered again, at most kHaWarmup.
        std::set<std::string> expected;
        if (leading) {
            auto nodes = state.LoadNodes();
            if (nodes.ok()) expected = std::move(*nodes);
        }
        const auto warm_until = std::chrono::steady_clock::now() + kHaWarmup;
        std::atomic<bool> warm{expected.empty()};
        MasterPart part(config, metrics, epoch);
        MasterServiceOptions options;
        options.role = "master";
        options.auth_token = ctx.auth_token;
        options.tenant_tokens = ctx.tenant_tokens;
        options.epoch = epoch;
        options.config_file = ctx.config_file;
        if (leading) {
            const uint64_t etcd_epoch = term.epoch;
            MasterStore& store = part.store();
            options.gate = [&election, &store, &warm, &expected, warm_until, me,
                            etcd_epoch](std::string_view method) {
                if (!election.Serving()) {
                    return Status::NotLeader("master " + me + " lost its etcd lease (epoch " +
                                             std::to_string(etcd_epoch) + ")");
                }
                if (warm.load(std::memory_order_acquire) || IsNodeMethod(method)) {
                    return Status::Ok();
                }
                // Back: registered again and done reporting what it holds, so a client's
                // Put cannot find that node's segment closed to it.
                size_t back = 0;
                for (const NodeInfo& n : store.Nodes()) {
                    back += !n.reporting && expected.count(n.spec.name) > 0;
                }
                if (back >= expected.size() || std::chrono::steady_clock::now() >= warm_until) {
                    warm.store(true, std::memory_order_release);
                    return Status::Ok();
                }
                return Status::NotLeader("master " + me + " leads (epoch " +
                                         std::to_string(etcd_epoch) + ") and waits for " +
                                         std::to_string(expected.size() - back) +
                                         " node(s) to register again and report what "
                                         "they hold");
            };
            options.on_tuned = [&state](const auto& list) { return state.SaveKnobs(list); };
            // Tenants: the policy read from etcd before serving; changes are kept in etcd
            // before they apply, and only while this master still leads.
            if (Status st = store.LoadTenantPolicy(tenant_policy); !st.ok()) {
                spdlog::warn("ha: the tenant policy from etcd was not loaded: {}", st.message());
            } else if (!tenant_policy.empty()) {
                spdlog::info("ha: {} tenant(s) restored from etcd", tenant_policy.size());
            }
            store.SetTenantPolicyWriter([&state, &election, me](const TenantPolicy& next) {
                MC_RETURN_IF_ERROR(state.SaveTenants(FormatTenantPolicy(next)));
                if (!election.Serving()) {
                    return Status::NotLeader("master " + me + " lost its etcd lease while it "
                                             "recorded a tenant change");
                }
                return Status::Ok();
            });
            options.tenant_policy_persisted = true;
            // Tombstones: the previous leaders' loaded before serving, new ones kept in etcd
            // once a second (this leader itself refuses them anyway; a failed write only
            // loses them for the next leader, and says so).
            auto tombstones = state.LoadTombstones();
            if (tombstones.ok()) {
                store.AddTombstones(*tombstones);
                if (!tombstones->empty()) {
                    spdlog::info("ha: {} tombstone(s) loaded from etcd", tombstones->size());
                }
            } else {
                spdlog::warn("ha: cannot read tombstones from etcd: {}",
                             tombstones.status().message());
            }
            store.KeepTombstones(true);
            // Removals are durable before they are acknowledged: a remove the nodes had not
            // applied when this leader went must not come back with the next one.
            // Written while leading, checked after: a lead lost meanwhile may have loaded the
            // records before these landed, so the removal is not acknowledged (NOT_LEADER,
            // retried with the next leader).
            store.SetRemovalWriter([&state, &election, me](const RemovalJournal::Entries& removals) {
                MC_RETURN_IF_ERROR(state.SaveRemovals(removals));
                if (!election.Serving()) {
                    return Status::NotLeader("master " + me + " lost its etcd lease while it "
                                             "recorded a removal");
                }
                return Status::Ok();
            });
            part.OnSecond([&state, &store, &config] {
                auto fresh = store.TakeNewTombstones();
                if (fresh.empty()) return;
                if (Status st = state.SaveTombstones(fresh, config.ha_tombstone_ttl_sec());
                    !st.ok()) {
                    spdlog::warn("ha: cannot keep {} tombstone(s) in etcd: {}", fresh.size(),
                                 st.message());
                }
            });
            // Kept once warm (a half-rejoined list would shorten the next leader's wait).
            part.OnNodesChanged([&state, &election, &warm](const std::set<std::string>& live) {
                if (!election.Serving() || !warm.load()) return false;
                if (Status st = state.SaveNodes(live); !st.ok()) {
                    spdlog::warn("ha: cannot keep the node list in etcd: {}", st.message());
                    return false;
                }
                return true;
            });
        } else {
            options.gate = [&election, me, cluster](std::string_view) {
                std::string leader = election.KnownLeader();
                return Status::NotLeader("master " + me + " is a standby of cluster '" + cluster +
                                         "'; " +
                                         (leader.empty() ? "no leader yet" : "the leader is " + leader));
            };
        }
        // The previous part's port may take a moment to be free again.
        Status started;
        for (int attempt = 0; attempt < 50; ++attempt) {
            started = part.Start(addresses.listen, options);
            if (started.ok() || ctx.shutdown.flag().load()) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        if (!started.ok()) {
            election.Stop();
            return Fail(started);
        }
        if (leading) {
            // Answered as the RPCs are: through the gate (a leader still waiting for its
            // nodes to register again answers 503, not a half-empty list).
            // And a leader that took over with no node back yet answers 503 for the warm-up:
            // the previous leader may have died before it kept its node list in etcd (its
            // nodes are then not waited for), and an empty list would read as "no segments".
            MasterHttpView view = MasterView(part.store(), ctx.auth_token);
            view.serving = [gate = options.gate, &store = part.store(),
                            since = std::chrono::steady_clock::now()] {
                MC_RETURN_IF_ERROR(gate("http"));
                const auto led = std::chrono::steady_clock::now() - since;
                if (led < kHaWarmup && store.Nodes().empty()) {
                    return Status::NotLeader(
                        "leads since " +
                        std::to_string(
                            std::chrono::duration_cast<std::chrono::milliseconds>(led).count()) +
                        " ms and no node registered yet");
                }
                return Status::Ok();
            };
            http.SetMasterView(std::move(view));
            election.Activate(term.seq);
        }
        while (!ctx.shutdown.flag().load()) {
            ha::Term now = election.WaitForChange(term.seq, std::chrono::milliseconds(200));
            if (now.seq != term.seq) {
                term = now;
                break;
            }
        }
        http.ClearMasterView();  // before the part (and what the gate refers to) goes
        part.Stop();
    }
    SdNotify("STOPPING=1");
    election.Stop();  // resigns: a standby takes over at once
    http.Stop();
    return 0;
}

int RunMaster(DaemonContext& ctx) {
    auto addresses = ResolveAddresses(ctx.config);
    if (!addresses.ok()) return Fail(addresses.status());
    if (ctx.config.enable_ha()) return RunHaMaster(ctx, *addresses);
    MetricsRegistry metrics;
    MasterPart master(ctx.config, metrics);
    if (Status st = UseTenantPolicyFile(master.store(), ctx.config); !st.ok()) return Fail(st);
    MetricsHttp http(metrics);
    http.ServeMaster(MasterView(master.store(), ctx.auth_token));
    if (Status st = master.Start(addresses->listen, "master", ctx); !st.ok()) {
        return Fail(st);
    }
    if (Status st = StartMetrics(http, ctx.config, *addresses); !st.ok()) return Fail(st);
    AnnounceReady("master on " + addresses->listen.ToString());
    ctx.shutdown.Wait();
    SdNotify("STOPPING=1");
    http.Stop();
    master.Stop();
    return 0;
}

int RunNode(DaemonContext& ctx) {
    auto addresses = ResolveAddresses(ctx.config);
    if (!addresses.ok()) return Fail(addresses.status());
    MetricsRegistry metrics;
    // Declared before the node so it outlives the node's threads on every return path.
    std::unique_ptr<MasterLink> link;
    NodeParts node(ctx.config, metrics);
    if (Status st = CheckListenPortFree(addresses->listen); !st.ok()) return Fail(st);
    if (Status st = node.Open(); !st.ok()) return Fail(st);
    if (Status st = StartDataChannels(node, *addresses, ctx, /*serves_by_key=*/false); !st.ok()) {
        return Fail(st);
    }

    // The master link first (retrying: the master may start after us), so NodeService has a
    // node to describe once the loops run.
    RpcOptions rpc;
    rpc.auth_token = ctx.auth_token;
    rpc.client_name = "node " + addresses->advertise.ToString();
    rpc.cluster_id = ctx.config.cluster_id();
    auto backoff = std::chrono::milliseconds(100);
    while (link == nullptr) {
        auto connected = NewRpcMasterLink(ctx.config.master(), rpc);
        if (connected.ok()) {
            link = std::move(*connected);
            break;
        }
        if (connected.status().Is(StatusCode::kInvalidArgument) ||
            connected.status().Is(StatusCode::kIllegalClient)) {
            return Fail(connected.status());  // wrong address, version or token: not transient
        }
        spdlog::warn("master {} not reachable yet ({}); retrying", ctx.config.master(),
                     connected.status().message());
        for (auto waited = std::chrono::milliseconds(0); waited < backoff;
             waited += std::chrono::milliseconds(50)) {
            if (ctx.shutdown.flag().load()) return 0;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
    }
    if (Status st = node.StartNode(*link, *addresses, ProcessIncarnation(), ctx.shutdown.flag()); !st.ok()) {
        if (ctx.shutdown.flag().load()) return 0;
        return Fail(st);
    }
    NodeServiceOptions service_options{addresses->advertise.ToString(), addresses->data_address,
                                       ctx.config.master(), ctx.auth_token};
    auto handler = std::make_shared<NodeService>(service_options, *node.node(), node.segment(),
                                                 node.disk(), metrics);
    auto server = RpcServer::Start(std::make_shared<rpc::NodeServiceProcessor>(handler),
                                   {addresses->listen, kMaxRpcConnections});
    if (!server.ok()) return Fail(server.status());
    MetricsHttp http(metrics);
    if (Status st = StartMetrics(http, ctx.config, *addresses); !st.ok()) return Fail(st);
    AnnounceReady("node " + addresses->advertise.ToString() + " (data " +
                  addresses->data_address + ")");
    ctx.shutdown.Wait();
    SdNotify("STOPPING=1");
    (*server)->Stop();
    http.Stop();
    node.Stop();
    return 0;
}

int RunStandalone(DaemonContext& ctx) {
    auto addresses = ResolveAddresses(ctx.config);
    if (!addresses.ok()) return Fail(addresses.status());
    MetricsRegistry metrics;
    MasterPart master(ctx.config, metrics);
    if (Status st = UseTenantPolicyFile(master.store(), ctx.config); !st.ok()) return Fail(st);
    // The node talks to the store in-process; clients get the master's API on --listen.
    // Declared before the node so it outlives the node's threads on every return path.
    std::unique_ptr<MasterLink> link = NewLocalMasterLink(master.store(), master.directory());
    NodeParts node(ctx.config, metrics);
    if (Status st = CheckListenPortFree(addresses->listen); !st.ok()) return Fail(st);
    if (Status st = node.Open(); !st.ok()) return Fail(st);
    if (Status st = StartDataChannels(node, *addresses, ctx, /*serves_by_key=*/true); !st.ok()) {
        return Fail(st);
    }
    if (Status st = node.StartNode(*link, *addresses, ProcessIncarnation(), ctx.shutdown.flag()); !st.ok()) {
        return Fail(st);
    }
    node.ServeByKey(master.store());
    auto scrub_local = [&node, name = addresses->advertise.ToString()] {
        return ScrubDisk(node.disk(), name);
    };
    if (Status st = master.Start(addresses->listen, "standalone", ctx, scrub_local,
                                 addresses->data_address);
        !st.ok()) {
        return Fail(st);
    }
    MetricsHttp http(metrics);
    http.ServeMaster(MasterView(master.store(), ctx.auth_token));
    if (Status st = StartMetrics(http, ctx.config, *addresses); !st.ok()) return Fail(st);
    AnnounceReady("standalone on " + addresses->listen.ToString() + " (data " +
                  addresses->data_address + ")");
    ctx.shutdown.Wait();
    SdNotify("STOPPING=1");
    http.Stop();
    master.Stop();  // no new requests
    node.Stop();    // then the node leaves the store
    return 0;
}

}  // namespace mooncake
