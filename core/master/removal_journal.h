// RemovalJournal: makes removals durable before they are acknowledged, for master high
// availability (docs/CONSISTENCY.md, docs/HA.md).
//
// A Remove (or the remove half of an overwrite) is carried to the nodes holding the key by
// their next heartbeat. A leader that dies in between leaves those copies on the nodes, and
// the next leader, for which every node's registration is the first of its name, would adopt
// them: a removed value served again. So an HA leader writes (key, generation) to etcd before
// the Remove is applied and acknowledged; the next leader loads them and refuses those copies.
//
// Concurrent removals are written together (group commit): one caller writes the batch that
// was waiting when the previous write ended, the others wait for the batch that holds theirs.
// Without a writer (no HA) Record is free and always succeeds.
//
// A record whose removal then does not happen (a reader's lease came first; the write's answer
// was lost but it landed) makes the next leader refuse that version: a loss, visible as
// NotFound, never a version coming back.
//
// Thread-safety: Record may be called from any thread, with no store lock held (it waits for
// I/O); the writer is called from one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/base/mutex.h"
#include "core/base/status.h"
#include "core/base/types.h"

namespace mooncake {

class RemovalJournal {
public:
    using Entries = std::vector<std::pair<std::string, Generation>>;
    // Durably records every entry, or fails (then none may be relied on).
    using Writer = std::function<Status(const Entries&)>;

    void SetWriter(Writer writer);
    bool active() const;

    // Returns once `entries` are durable (in the batch that held them), or the batch's error.
    Status Record(const Entries& entries);

    uint64_t batches_written() const;

private:
    mutable Mutex mu_;
    CondVar cv_;
    Writer writer_ MC_GUARDED_BY(mu_);
    Entries queued_ MC_GUARDED_BY(mu_);
    uint64_t next_batch_ MC_GUARDED_BY(mu_) = 1;  // the batch `queued_` will go out in
    uint64_t done_batch_ MC_GUARDED_BY(mu_) = 0;  // batches up to this one are over
    bool writing_ MC_GUARDED_BY(mu_) = false;
    size_t callers_queued_ MC_GUARDED_BY(mu_) = 0;  // Record calls in `queued_`
    // Batches that failed: their error and how many of their callers have yet to read it.
    std::map<uint64_t, std::pair<Status, size_t>> failed_ MC_GUARDED_BY(mu_);
};

}  // namespace mooncake
