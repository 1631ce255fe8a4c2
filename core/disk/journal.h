// Journal: the disk store's durable index, an append-only log of Put and Del entries in two
// alternating halves of a fixed region.
//
// Appends go to the active half in batches (one group commit = one batch = one write + one
// flush, shared by every caller waiting at that moment). When the active half cannot take the
// next batch, the whole live index is written as a checkpoint at the start of the other half
// under a new, larger lap number, together with the pending entries, and that half becomes
// active. Recovery picks the half whose newest lap is complete (a checkpoint end or any append
// after it), replays that lap's batches in order, and skips batches whose payload hash fails
// (torn or corrupt). A crash in the middle of a checkpoint leaves the other half untouched, so
// recovery falls back to it.
//
// The journal keeps the live Put entries in memory (encoded) to write checkpoints; the store
// budgets their total (see DiskStore) so a checkpoint always fits in half the region.
//
// Thread-safety: Commit() may be called from any number of threads. After an I/O error the
// journal refuses every later Commit (kIoError): what reached the device is unknown, and the
// store reopens to find out.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/disk/device.h"
#include "core/disk/format.h"
#include "core/base/mutex.h"
#include "core/base/status.h"

namespace mooncake {

class Journal {
  public:
    struct Recovered {
        std::map<uint64_t, disk_format::PutEntry> puts;  // live, by object id
        uint64_t last_commit_seq = 0;  // newest commit replayed; its Puts may lack their data
        uint64_t max_object_id = 0;    // largest object id named by any replayed entry
        uint64_t skipped_batches = 0;  // torn or corrupt batches of the replayed lap
        // Each batch of the replayed lap recovery could not use: a payload that fails its
        // hash or does not parse, or batch numbers missing between two good batches (a
        // damaged header). For the store's warning lines and corruption counts.
        struct Damage {
            uint64_t offset = 0;  // device offset of the batch (of the first missing one's
                                  // successor, for missing batches)
            std::string what;
        };
        std::vector<Damage> damaged;
        bool reset = false;            // no usable checkpoint: started empty
    };

    // Writes an empty checkpoint into the region [offset, offset + size).
    static Status Format(Device* device, uint64_t offset, uint64_t size, uint64_t seed);
    static Result<std::unique_ptr<Journal>> Recover(Device* device, uint64_t offset, uint64_t size,
                                                    uint64_t seed, Recovered* out);

    // Durable when it returns OK. Fills each Put's commit_seq.
    //
    // `data` (the bytes the Puts name) is written before the entries become durable. When the
    // journal is idle the caller leads at once and its data goes out in the same submission
    // as the batch, both covered by one flush: a lone writer pays one round trip, not two.
    // Otherwise the data is written right away, overlapping the commit in flight, and the
    // entries join the next group. (The newest commit's data is what recovery verifies.)
    // *data_failed is set when only the separate data write failed: then nothing of this call
    // reached the journal, which stays usable.
    Status Commit(std::vector<disk_format::PutEntry> puts, std::vector<uint64_t> dels,
                  std::span<IoRequest> data = {}, bool* data_failed = nullptr);

    // Bytes of encoded live Put entries a checkpoint must hold, at most.
    uint64_t index_budget() const { return half_size_ / 2; }
    // The largest payload one commit may carry.
    uint64_t max_commit_payload() const;
    uint64_t checkpoints() const;
    uint64_t commits() const;

  private:
    struct Waiter {
        std::vector<disk_format::PutEntry>* puts;
        std::vector<uint64_t>* dels;
        uint64_t payload_bytes;
        std::span<IoRequest> data;  // not yet written; only a leader's own
        Status result;
        bool done = false;
        CondVar cv;  // done, or it is this waiter's turn to lead
    };

    Journal(Device* device, uint64_t offset, uint64_t size, uint64_t seed);
    // Leader only (leader_active_ set).
    Status WriteGroup(std::vector<Waiter*>& group) MC_EXCLUDES(mu_);
    // Both write `data` in the same submission as their batches.
    Status Append(const std::vector<std::string>& payloads, uint64_t commit_seq,
                  std::span<IoRequest> data);
    Status Checkpoint(uint64_t commit_seq, std::span<IoRequest> data = {}) MC_EXCLUDES(mu_);
    uint64_t HalfStart(int half) const {
        return offset_ + static_cast<uint64_t>(half) * half_size_;
    }

    Device* const device_;
    const uint64_t offset_;
    const uint64_t half_size_;
    const uint64_t seed_;

    mutable Mutex mu_;
    std::vector<Waiter*> queue_ MC_GUARDED_BY(mu_);
    bool leader_active_ MC_GUARDED_BY(mu_) = false;

    // Owned by the leader (one at a time); read by stats getters under mu_.
    int active_half_ = 0;
    uint64_t lap_ = 0;        // newest lap used anywhere; a checkpoint takes lap_ + 1
    uint64_t write_lap_ = 0;  // lap of the active half, which appends carry
    uint64_t write_pos_ = 0;  // device offset of the next batch
    uint64_t seq_ = 0;        // last batch seq used
    uint64_t commit_seq_ = 0;
    bool broken_ = false;
    std::map<uint64_t, std::string> live_;  // object id -> encoded Put
    uint64_t checkpoints_ MC_GUARDED_BY(mu_) = 0;
    uint64_t commits_ MC_GUARDED_BY(mu_) = 0;
};

}  // namespace mooncake
