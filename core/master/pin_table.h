// Pins an engine asks for with a Put (Mooncake's ReplicateConfig: with_soft_pin,
// soft_pin_ttl_ms, with_hard_pin), and the per-shard table that remembers them.
//
// Soft pin, as Mooncake's master keeps it: the object is evicted only after every unpinned
// MEMORY object, until the pin lapses. The pin starts when the Put ends and lasts its TTL;
// each read (a lease grant) extends it to now + TTL (never shortens it), so a soft pin lapses
// one TTL after the object's last access. A lapsed pin ranks the object like any other.
// A batch read lends a later key's soft pin to the keys before it (its prefix): such an entry
// has soft_ttl 0 and soft_until the lender's, so reads do not renew it
// (MasterStore::CoverPrefixWithSoftPins).
// Hard pin: the MEMORY copy is never evicted (nor offloaded to be dropped) while the object
// lives; its bytes are counted and capped (knob hard_pin_max_ratio), checked at PutStart.
//
// Few objects are pinned, so pins live in a side table keyed by the object's metadata (a map
// node that never moves) rather than growing every ObjectMeta. Guarded by the shard mutex.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>

#include "core/base/clock.h"
#include "core/base/master_types.h"  // PutConfig

namespace mooncake {

struct ObjectMeta;

// What an object holds.
struct ObjectPin {
    Nanos soft_ttl{0};    // 0: not soft-pinned
    Nanos soft_until{0};  // set when the Put ends, extended by reads
    uint64_t hard_bytes = 0;  // > 0: hard-pinned, this much counted in the store's gauge

    bool hard() const { return hard_bytes > 0; }
};

class PinTable {
public:
    bool empty() const { return pins_.empty(); }
    size_t size() const { return pins_.size(); }
    const ObjectPin* Find(const ObjectMeta& meta) const {
        if (pins_.empty()) return nullptr;  // the common case: no lookup
        auto it = pins_.find(&meta);
        return it == pins_.end() ? nullptr : &it->second;
    }
    void Set(const ObjectMeta& meta, const ObjectPin& pin) { pins_[&meta] = pin; }
    // Forgets the object's pin; returns its hard-pinned bytes (for the caller to uncount).
    uint64_t Erase(const ObjectMeta& meta) {
        if (pins_.empty()) return 0;
        auto it = pins_.find(&meta);
        if (it == pins_.end()) return 0;
        const uint64_t bytes = it->second.hard_bytes;
        pins_.erase(it);
        return bytes;
    }
    // A hard pin counts `bytes` from now; returns what it counted before (0, and nothing
    // changes, when the object is not hard-pinned).
    uint64_t ResetHardBytes(const ObjectMeta& meta, uint64_t bytes) {
        if (pins_.empty()) return 0;
        auto it = pins_.find(&meta);
        if (it == pins_.end() || !it->second.hard()) return 0;
        const uint64_t before = it->second.hard_bytes;
        it->second.hard_bytes = bytes;
        return before;
    }
    // The object's Put ended or it was read: a soft pin runs to at least now + its TTL.
    void Refresh(const ObjectMeta& meta, Nanos now) {
        if (pins_.empty()) return;
        auto it = pins_.find(&meta);
        if (it == pins_.end() || it->second.soft_ttl.count() == 0) return;
        it->second.soft_until = std::max(it->second.soft_until, now + it->second.soft_ttl);
    }
    bool SoftPinned(const ObjectMeta& meta, Nanos now) const {
        const ObjectPin* pin = Find(meta);
        return pin != nullptr && pin->soft_until > now;
    }
    bool HardPinned(const ObjectMeta& meta) const {
        const ObjectPin* pin = Find(meta);
        return pin != nullptr && pin->hard();
    }

private:
    std::unordered_map<const ObjectMeta*, ObjectPin> pins_;
};

}  // namespace mooncake
