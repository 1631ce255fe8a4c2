// A shard's flat key index: open addressing over 8-byte slots, each an ObjectMeta pointer
// tagged with 16 bits of its key's hash. The shard's unordered_map still owns the objects
// (and keeps its iteration order); lookups go through here because a map lookup follows
// bucket -> previous node -> node, three dependent cache misses before the key is even
// compared, while a slot's line is one miss that a batch can prefetch for all its keys at
// once (ObjectTable::Prefetch). About 13 bytes per object at 10 M objects.
//
// Not thread-safe: guarded by the shard's mutex like the map beside it.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/master/object.h"

namespace mooncake {

class KeyIndex {
  public:
    // `hash` is ObjectTable::Hash(key): its low 6 bits chose the shard, so the home slot
    // takes the bits above them and the tag the top 16.
    ObjectMeta* Find(std::string_view key, uint64_t hash) const {
        if (slots_.empty()) return nullptr;
        const uint64_t tag = hash >> kTagShift;
        for (size_t i = Home(hash);; i = (i + 1) & mask_) {
            const uint64_t slot = slots_[i];
            if (slot == kEmpty) return nullptr;
            if (slot != kTombstone && (slot >> kTagShift) == tag) {
                ObjectMeta* meta = Pointer(slot);
                if (*meta->key == key) return meta;
            }
        }
    }

    // The line Find(.., hash) starts at (a hint: no effect on what Find returns).
    void PrefetchSlot(uint64_t hash) const {
        if (!slots_.empty()) __builtin_prefetch(&slots_[Home(hash)]);
    }
    // Calls `candidate(meta)` for each object whose tag matches `hash` (its key not compared).
    template <typename Fn>
    void ForEachCandidate(uint64_t hash, Fn candidate) const {
        if (slots_.empty()) return;
        const uint64_t tag = hash >> kTagShift;
        for (size_t i = Home(hash);; i = (i + 1) & mask_) {
            const uint64_t slot = slots_[i];
            if (slot == kEmpty) return;
            if (slot != kTombstone && (slot >> kTagShift) == tag) candidate(Pointer(slot));
        }
    }

    // `meta` is not indexed yet; its key pointer is set.
    void Insert(ObjectMeta* meta, uint64_t hash) {
        if ((used_ + 1) * 4 > slots_.size() * 3) Rebuild();
        const uintptr_t address = reinterpret_cast<uintptr_t>(meta);
        // User-space addresses fit in 48 bits on x86-64 and AArch64 Linux.
        if ((address >> kTagShift) != 0) std::abort();
        size_t i = Home(hash);
        while (slots_[i] != kEmpty && slots_[i] != kTombstone) i = (i + 1) & mask_;
        if (slots_[i] == kEmpty) ++used_;
        slots_[i] = (hash >> kTagShift) << kTagShift | address;
        ++live_;
    }
    void Erase(const ObjectMeta* meta, uint64_t hash) {
        for (size_t i = Home(hash);; i = (i + 1) & mask_) {
            if (slots_[i] == kEmpty) return;
            if (slots_[i] != kTombstone && Pointer(slots_[i]) == meta) {
                slots_[i] = kTombstone;  // used_ unchanged: probes still pass over it
                --live_;
                return;
            }
        }
    }

    static uint64_t Hash(std::string_view key) { return std::hash<std::string_view>{}(key); }

  private:
    static constexpr uint64_t kEmpty = 0;
    static constexpr uint64_t kTombstone = 1;  // never a pointer: ObjectMeta is 8-aligned
    static constexpr int kTagShift = 48;
    static constexpr int kShardBits = 6;  // ObjectTable::kShardCount == 64

    size_t Home(uint64_t hash) const { return (hash >> kShardBits) & mask_; }
    static ObjectMeta* Pointer(uint64_t slot) {
        return reinterpret_cast<ObjectMeta*>(slot & ((uint64_t{1} << kTagShift) - 1));
    }

    // Grows (or, when tombstones fill it, just clears them): live objects at most 3/8 of
    // the new capacity, so the next rebuild is as many inserts away as this one is.
    void Rebuild() {
        size_t capacity = 16;
        while (capacity * 3 < (live_ + 1) * 8) capacity *= 2;
        std::vector<uint64_t> old(capacity, kEmpty);
        old.swap(slots_);
        mask_ = capacity - 1;
        used_ = 0;
        live_ = 0;
        for (uint64_t slot : old) {
            if (slot == kEmpty || slot == kTombstone) continue;
            ObjectMeta* meta = Pointer(slot);
            Insert(meta, Hash(*meta->key));
        }
    }

    std::vector<uint64_t> slots_;
    size_t mask_ = 0;
    size_t used_ = 0;  // live slots and tombstones
    size_t live_ = 0;
};

}  // namespace mooncake
