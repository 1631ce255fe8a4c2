// AccessCount: one object's read count for promotion admission, kept in its own metadata.
//
// The admission sketch (core/master/admission_sketch.h) counts the reads of every key. For a key the
// master holds an object for, the count lives here instead: it starts from the sketch's
// estimate when the object is created (the misses and earlier incarnations the sketch saw),
// then counts every read exactly, where the sketch may over-count by collisions. When the
// object goes, its count is folded back into the sketch, so a later incarnation keeps it.
//
// Why: a Get already has the object's metadata in cache, while a sketch increment costs one
// random cache line per Get (most of promotion_on_hit's Get-path cost, issue 21).
//
// It ages with the sketch: each of the sketch's agings halves it, applied lazily from the aging
// count of its last update (`epoch`, 16 bits: an object left unread for 65,536 agings, at least
// 2^28 reads, would see its old count again; the window is never below 4,096 reads).
//
// Not thread-safe: guarded like the rest of ObjectMeta (its shard lock). The sketch's methods
// that take one (AdmissionSketch::Estimate / Increment / Seed / Fold) are how core uses it.
#pragma once

#include <algorithm>
#include <cstdint>

namespace mooncake {

class AccessCount {
public:
    // The count now, `agings` being the sketch's aging count.
    uint32_t Read(uint64_t agings) const {
        const auto behind = static_cast<uint16_t>(static_cast<uint16_t>(agings) - epoch_);
        return behind >= 8 ? 0u : static_cast<uint32_t>(count_ >> behind);
    }
    // Counts one read (saturating at 255, as the sketch's counters do); the count after it.
    uint32_t Increment(uint64_t agings) {
        Set(Read(agings) + 1, agings);
        return count_;
    }
    void Set(uint32_t count, uint64_t agings) {
        count_ = static_cast<uint8_t>(std::min<uint32_t>(count, 255));
        epoch_ = static_cast<uint16_t>(agings);
    }

private:
    uint8_t count_ = 0;
    uint16_t epoch_ = 0;  // the sketch's aging count (mod 2^16) at the last Set
};

}  // namespace mooncake
