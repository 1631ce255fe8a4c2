#include "daemon/ha/leader_election.h"

#include "core/base/metrics.h"
#include "spdlog/spdlog.h"

namespace mooncake::ha {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<double> RenewBuckets() {
    return {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2};
}

}  // namespace

LeaderElection::LeaderElection(EtcdClient& etcd, ElectionOptions options,
                               MetricsRegistry& metrics)
    : etcd_(etcd),
      options_(std::move(options)),
      keys_(options_.cluster_id),
      started_ms_(WallClockMs()),
      is_leader_(metrics.GetGauge("master_is_leader",
                                  "1 while this master leads its HA cluster and serves, else 0")),
      failovers_(metrics.GetCounter("master_failovers_total",
                                    "leaderships this master took (each is a failover or the "
                                    "cluster's first election)")),
      renew_latency_(metrics.GetHistogram("master_lease_renew_seconds",
                                          "etcd lease keepalive round trip in seconds",
                                          RenewBuckets())) {}

LeaderElection::~LeaderElection() { Stop(); }

void LeaderElection::Start() {
    thread_ = std::thread([this] { Loop(); });
}

void LeaderElection::Stop() {
    {
        MutexLock lock(mu_);
        if (stopping_ && !thread_.joinable()) return;
        stopping_ = true;
        cv_.NotifyAll();
    }
    if (thread_.joinable()) thread_.join();
}

bool LeaderElection::Serving() const {
    return active_.load(std::memory_order_acquire) &&
           Ns(Clock::now()) < valid_until_ns_.load(std::memory_order_acquire);
}

Term LeaderElection::WaitForChange(uint64_t seen, std::chrono::milliseconds timeout) {
    MutexLock lock(mu_);
    const auto deadline = Clock::now() + timeout;
    while (term_.seq == seen && !stopping_) {
        if (!cv_.WaitUntil(mu_, deadline)) break;
    }
    return term_;
}

void LeaderElection::Activate(uint64_t seq) {
    MutexLock lock(mu_);
    if (term_.seq != seq || !term_.leading) return;
    active_.store(true, std::memory_order_release);
    is_leader_.Set(1);
    spdlog::info("ha: leading cluster '{}' as epoch {}: serving", options_.cluster_id,
                 term_.epoch);
}

void LeaderElection::Resign() {
    MutexLock lock(mu_);
    resign_ = true;
    cv_.NotifyAll();
}

std::string LeaderElection::KnownLeader() const {
    MutexLock lock(mu_);
    return known_leader_;
}

void LeaderElection::Loop() {
    const std::chrono::milliseconds ttl(options_.lease_ttl_sec * 1000);
    while (true) {
        bool resign;
        {
            MutexLock lock(mu_);
            if (stopping_) break;
            resign = resign_;
            resign_ = false;
        }
        if (resign) {
            EndLease("resigned");
            continue;
        }
        if (lease_ == 0) {
            const auto sent = Clock::now();
            auto granted = etcd_.GrantLease(options_.lease_ttl_sec);
            if (granted.ok()) {
                lease_ = *granted;
                valid_until_ns_.store(Ns(sent + ttl - options_.margin));
                next_renew_ = sent + ttl / 3;
                MasterRecord me{options_.address, 0, started_ms_};
                Status st = etcd_.Put(keys_.masters() + options_.address,
                                      EncodeMasterRecord(me), lease_);
                if (!st.ok()) spdlog::warn("ha: cannot register in etcd: {}", st.message());
            } else {
                spdlog::warn("ha: no etcd lease ({}); retrying", granted.status().message());
            }
        }
        const auto now = Clock::now();
        if (lease_ != 0 && now >= next_renew_) Renew(now);
        if (lease_ != 0 && Ns(Clock::now()) >= valid_until_ns_.load()) {
            EndLease("its etcd lease could not be renewed in time");
        }
        bool leading;
        {
            MutexLock lock(mu_);
            leading = term_.leading;
        }
        if (lease_ != 0 && !leading) Campaign();
        MutexLock lock(mu_);
        const auto deadline = Clock::now() + options_.poll;
        while (!stopping_ && !resign_) {
            if (!cv_.WaitUntil(mu_, deadline)) break;
        }
    }
    // Resign on the way out: the standby need not wait for the lease to run out.
    active_.store(false);
    is_leader_.Set(0);
    if (lease_ != 0) {
        Status st = etcd_.Revoke(lease_);
        if (!st.ok()) spdlog::warn("ha: revoking the lease: {}", st.message());
        lease_ = 0;
    }
}

void LeaderElection::Renew(Clock::time_point now) {
    const auto sent = Clock::now();
    auto renewed = etcd_.KeepAlive(lease_);
    renew_latency_.Observe(std::chrono::duration<double>(Clock::now() - sent).count());
    if (renewed.ok()) {
        valid_until_ns_.store(Ns(sent + std::chrono::seconds(*renewed) - options_.margin));
        next_renew_ = sent + std::chrono::milliseconds(options_.lease_ttl_sec * 1000) / 3;
        bool leading;
        {
            MutexLock lock(mu_);
            leading = term_.leading;
        }
        if (leading) ConfirmStillLeader();
        return;
    }
    if (renewed.status().Is(StatusCode::kNotFound)) {
        EndLease("etcd says its lease expired");
        return;
    }
    spdlog::warn("ha: lease renewal failed: {}", renewed.status().message());
    next_renew_ = now + options_.poll;  // try again soon; the deadline still holds
}

// The leader key must still be this term's (an operator may have deleted it by hand).
void LeaderElection::ConfirmStillLeader() {
    auto current = etcd_.Get(keys_.leader());
    if (!current.ok()) return;  // unknown: the lease deadline decides
    uint64_t epoch;
    {
        MutexLock lock(mu_);
        epoch = term_.epoch;
    }
    std::optional<MasterRecord> rec;
    if (current->has_value()) rec = DecodeMasterRecord((*current)->value);
    if (!rec || rec->address != options_.address || rec->epoch != epoch) {
        EndLease("the leader key is no longer this master's");
    }
}

void LeaderElection::Campaign() {
    auto leader = etcd_.Get(keys_.leader());
    if (!leader.ok()) return;
    if (leader->has_value()) {
        auto rec = DecodeMasterRecord((*leader)->value);
        MutexLock lock(mu_);
        known_leader_ = rec ? rec->address : "";
        return;
    }
    auto epoch_kv = etcd_.Get(keys_.epoch());
    if (!epoch_kv.ok()) return;
    uint64_t last = 0;
    int64_t epoch_rev = 0;
    if (epoch_kv->has_value()) {
        last = std::strtoull((*epoch_kv)->value.c_str(), nullptr, 10);
        epoch_rev = (*epoch_kv)->mod_revision;
    }
    MasterRecord me{options_.address, last + 1, WallClockMs()};
    auto won = etcd_.Txn(
        {{keys_.leader(), EtcdCompare::Target::kCreateRevision, 0},
         {keys_.epoch(), EtcdCompare::Target::kModRevision, epoch_rev}},
        {{keys_.leader(), EncodeMasterRecord(me), lease_},
         {keys_.epoch(), std::to_string(me.epoch), 0},
         {keys_.masters() + options_.address, EncodeMasterRecord(me), lease_}});
    if (!won.ok() || !*won) return;
    failovers_.Inc();
    MutexLock lock(mu_);
    term_.seq++;
    term_.leading = true;
    term_.epoch = me.epoch;
    known_leader_ = options_.address;
    spdlog::info("ha: won the leadership of cluster '{}' (epoch {})", options_.cluster_id,
                 me.epoch);
    cv_.NotifyAll();
}

void LeaderElection::EndLease(const std::string& why) {
    active_.store(false, std::memory_order_release);
    is_leader_.Set(0);
    if (lease_ != 0) {
        // Best effort: lets a standby take over now rather than at the lease's end.
        (void)etcd_.Revoke(lease_);
        lease_ = 0;
    }
    MutexLock lock(mu_);
    if (term_.leading) {
        spdlog::warn("ha: stepped down from leading cluster '{}' (epoch {}): {}",
                     options_.cluster_id, term_.epoch, why);
        term_.seq++;
        term_.leading = false;
        term_.epoch = 0;
        known_leader_.clear();
        cv_.NotifyAll();
    } else {
        spdlog::info("ha: standby lost its lease: {}", why);
    }
}

}  // namespace mooncake::ha
