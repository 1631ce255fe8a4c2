#include "core/master/soft_pin_trust.h"

#include <algorithm>
#include <cmath>

#include "core/base/metrics.h"

namespace mooncake {
namespace {

constexpr size_t kHonour = 0, kIgnore = 1;

}  // namespace

void SoftPinTrust::Sim::Access(uint64_t hash, uint64_t size, Nanos ttl, Nanos now,
                               uint64_t capacity) {
    const bool pinned = honour_ && ttl.count() > 0;
    List& to = pinned ? pinned_ : unpinned_;
    auto found = where_.find(hash);
    if (found != where_.end()) {
        auto [from, it] = found->second;
        it->stamp = ++clock_;
        // A read extends a live pin, as the store's lease grant does (PinTable::Refresh).
        if (pinned) it->pinned_until = std::max(it->pinned_until, now + ttl);
        to.splice(to.begin(), *from, it);
        found->second.first = &to;
        return;
    }
    if (size > capacity) return;
    while (used_ + size > capacity && EvictOne(now)) {
    }
    to.push_front({hash, size, ++clock_, pinned ? now + ttl : Nanos{0}});
    where_[hash] = {&to, to.begin()};
    used_ += size;
}

void SoftPinTrust::Sim::Cover(uint64_t hash, Nanos until) {
    if (!honour_) return;
    auto found = where_.find(hash);
    if (found == where_.end()) return;
    auto [from, it] = found->second;
    it->pinned_until = std::max(it->pinned_until, until);
    if (from == &pinned_) return;
    // Just read (a cover follows the batch's reads): the most recent of the pinned.
    pinned_.splice(pinned_.begin(), *from, it);
    found->second.first = &pinned_;
}

bool SoftPinTrust::Sim::EvictOne(Nanos now) {
    // The coldest unpinned key, or the coldest pinned one whose pin has lapsed if it is colder
    // (pins of one TTL lapse in recency order, so the pinned list's tail is the first to lapse);
    // the coldest pinned one only when nothing else is left.
    List* from = nullptr;
    if (!unpinned_.empty()) from = &unpinned_;
    if (!pinned_.empty() && pinned_.back().pinned_until <= now &&
        (from == nullptr || pinned_.back().stamp < unpinned_.back().stamp)) {
        from = &pinned_;
    }
    if (from == nullptr) from = pinned_.empty() ? nullptr : &pinned_;
    if (from == nullptr) return false;
    used_ -= from->back().size;
    where_.erase(from->back().hash);
    from->pop_back();
    return true;
}

void SoftPinTrust::Sim::Clear() {
    unpinned_.clear();
    pinned_.clear();
    where_.clear();
    used_ = 0;
}

SoftPinTrust::SoftPinTrust(MetricsRegistry& registry, CapacityFn capacity_bytes)
    : SoftPinTrust(registry, std::move(capacity_bytes), Options{}) {}

SoftPinTrust::SoftPinTrust(MetricsRegistry& registry, CapacityFn capacity_bytes, Options options)
    : options_(options), sample_(std::move(capacity_bytes), options.target_sample_objects) {
    trusted_gauge_ = &registry.GetGauge(
        "soft_pin_trusted",
        "1 while eviction ranks soft-pinned objects after unpinned ones; 0 while the sampled "
        "simulations show the pins (retention hints) losing hits");
    trusted_gauge_->Set(1);
    switches_ = &registry.GetCounter("soft_pin_trust_switches_total",
                                     "times eviction started or stopped honouring soft pins");
    const char* arms[2] = {"honour", "ignore"};
    for (size_t a = 0; a < 2; ++a) {
        sim_hits_[a] = &registry.GetCounter(
            "soft_pin_sim_hits_total",
            "MEMORY hits of the miniature simulation that honours or ignores soft pins "
            "(sampled keys)",
            {{"arm", arms[a]}});
    }
}

SoftPinTrust::~SoftPinTrust() = default;

void SoftPinTrust::StartOver() {
    // Another sample of keys: what the simulations hold describes other keys.
    honour_.Clear();
    ignore_.Clear();
    ttl_.clear();
    score_ = {};
    lead_ = disagree_ = 0;
}

void SoftPinTrust::OnPut(uint64_t hash, uint64_t size, Nanos soft_ttl, Nanos now) {
    if (soft_ttl.count() > 0) active_.store(true, std::memory_order_relaxed);
    if (!active() || !sample_.Contains(hash)) return;
    MutexLock lock(mu_);
    Access(hash, size, /*put=*/true, soft_ttl, now);
}

void SoftPinTrust::OnGet(uint64_t hash, uint64_t size, Nanos now) {
    if (!active() || !sample_.Contains(hash)) return;
    MutexLock lock(mu_);
    Access(hash, size, /*put=*/false, Nanos{0}, now);
}

void SoftPinTrust::OnCover(uint64_t hash, Nanos until) {
    if (!active() || !sample_.Contains(hash)) return;
    MutexLock lock(mu_);
    honour_.Cover(hash, until);
}

void SoftPinTrust::Access(uint64_t hash, uint64_t size, bool put, Nanos ttl, Nanos now) {
    if (sample_.Observe(size)) StartOver();
    if (put) {
        if (ttl.count() > 0) {
            if (ttl_.size() > 64 * options_.target_sample_objects) ttl_.clear();
            ttl_[hash] = ttl;
        } else {
            ttl_.erase(hash);  // a new incarnation without a pin
        }
    } else {
        auto it = ttl_.find(hash);
        ttl = it == ttl_.end() ? Nanos{0} : it->second;
        const bool hit[2] = {honour_.Contains(hash), ignore_.Contains(hash)};
        for (size_t a = 0; a < 2; ++a) {
            if (!hit[a]) continue;
            score_[a] += 1;
            sim_hits_[a]->Inc();
        }
        if (hit[kHonour] != hit[kIgnore]) {
            lead_ += hit[kIgnore] ? 1 : -1;
            disagree_ += 1;
        }
    }
    honour_.Access(hash, size, ttl, now, sample_.capacity_bytes());
    ignore_.Access(hash, size, ttl, now, sample_.capacity_bytes());
    const uint64_t cap_objects = sample_.capacity_objects();
    if (++since_decay_ >= options_.decay_capacities * cap_objects) {
        since_decay_ = 0;
        for (double& s : score_) s /= 2;
        lead_ /= 2;
        disagree_ /= 2;
    }
    if (!put) Decide();
}

void SoftPinTrust::Decide() {
    const bool trusted = Trusted();
    bool now_trusted = trusted;
    if (trusted) {
        // A sign test on the reads where the two disagree (see AdaptivePromotionGate::Excess).
        now_trusted = lead_ <= std::max(options_.leave_z * std::sqrt(disagree_), options_.min_lead);
    } else {
        now_trusted = lead_ < options_.stay_z * std::sqrt(disagree_);
    }
    if (now_trusted == trusted) return;
    trusted_.store(now_trusted, std::memory_order_relaxed);
    trusted_gauge_->Set(now_trusted ? 1 : 0);
    switches_->Inc();
}

std::array<double, 2> SoftPinTrust::Scores() const {
    MutexLock lock(mu_);
    return score_;
}

}  // namespace mooncake
