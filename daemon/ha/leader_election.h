// LeaderElection: one master of a cluster leads, the others stand by, decided by etcd.
//
// Every master holds an etcd lease (TTL `lease_ttl_sec`) and registers itself under it
// (masters/<address>). A master without a leader in sight campaigns with one transaction:
// "the leader key does not exist and the epoch key is unchanged" -> put the leader key
// {address, epoch+1, since} under its lease and the epoch key = epoch+1. So each new leader
// takes a fresh epoch and at most one master holds the key at a time.
//
// Fencing: the leader serves (Serving() true) only while `now < sent + TTL - margin`, `sent`
// being when the last successful keepalive was SENT. etcd restarts the TTL when it receives
// the keepalive, later than `sent`, so this master stops before etcd can let the key go and
// a standby can win it: two masters never both accept writes. Serving() reads the clock on
// every call, so a process that was stalled (SIGSTOP, swap) refuses writes the moment it
// runs again, before its own renewal thread even notices.
//
// Terms: the caller (daemon/roles.cc) waits for a change with WaitForChange(); when this
// master has won (leading, not yet active) it prepares its state and calls Activate(); when
// the term ends (lease lost) it throws the old state away and goes back to standby.
//
// Thread-safety: all public methods may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "core/base/mutex.h"
#include "etcd/cluster_keys.h"
#include "etcd/etcd_client.h"

namespace mooncake {
class Counter;
class Gauge;
class Histogram;
class MetricsRegistry;
}  // namespace mooncake

namespace mooncake::ha {

struct ElectionOptions {
    std::string cluster_id{kDefaultClusterId};
    std::string address;  // this master's RPC address, as clients dial it
    int64_t lease_ttl_sec = 3;
    // Stop serving this long before the lease (as last renewed) could end at etcd.
    std::chrono::milliseconds margin{500};
    // How often a standby looks for a missing leader, and a failed renewal is retried.
    std::chrono::milliseconds poll{100};
};

struct Term {
    uint64_t seq = 0;      // changes on every transition
    bool leading = false;  // this master won the key (Activate() opens the gate)
    uint64_t epoch = 0;    // the epoch of this master's term when leading
};

class LeaderElection {
public:
    LeaderElection(EtcdClient& etcd, ElectionOptions options, MetricsRegistry& metrics);
    ~LeaderElection();  // Stop()

    void Start();
    // Ends the thread; a leader resigns (revokes its lease) so a standby takes over at once.
    void Stop();

    // The fencing gate: this master leads, was activated, and its lease is surely still held.
    bool Serving() const;
    // Blocks until the term differs from `seen` (or `timeout`); returns the current term.
    Term WaitForChange(uint64_t seen, std::chrono::milliseconds timeout);
    // Opens the gate for term `seq` (ignored if that term already ended).
    void Activate(uint64_t seq);
    // Gives up the current term (preparation failed): revokes the lease, back to standby.
    void Resign();

    // The leader as last seen in etcd ("" if none seen): for standbys' NOT_LEADER replies.
    std::string KnownLeader() const;
    const ElectionOptions& options() const { return options_; }

private:
    void Loop() MC_EXCLUDES(mu_);
    void Renew(std::chrono::steady_clock::time_point now) MC_EXCLUDES(mu_);
    void Campaign() MC_EXCLUDES(mu_);
    void ConfirmStillLeader() MC_EXCLUDES(mu_);
    void EndLease(const std::string& why) MC_EXCLUDES(mu_);  // lease lost or given up: term over
    static int64_t Ns(std::chrono::steady_clock::time_point t) {
        return t.time_since_epoch().count();
    }

    EtcdClient& etcd_;
    const ElectionOptions options_;
    const ClusterKeys keys_;
    const int64_t started_ms_;
    Gauge& is_leader_;
    Counter& failovers_;
    Histogram& renew_latency_;

    // Loop thread only.
    int64_t lease_ = 0;
    std::chrono::steady_clock::time_point next_renew_{};

    std::atomic<bool> active_{false};
    std::atomic<int64_t> valid_until_ns_{0};  // steady clock: lease surely held before this

    mutable Mutex mu_;
    CondVar cv_;
    Term term_ MC_GUARDED_BY(mu_);
    std::string known_leader_ MC_GUARDED_BY(mu_);
    bool stopping_ MC_GUARDED_BY(mu_) = false;
    bool resign_ MC_GUARDED_BY(mu_) = false;
    std::thread thread_;
};

}  // namespace mooncake::ha
