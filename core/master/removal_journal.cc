#include "core/master/removal_journal.h"

#include <utility>

namespace mooncake {

void RemovalJournal::SetWriter(Writer writer) {
    MutexLock lock(mu_);
    writer_ = std::move(writer);
}

bool RemovalJournal::active() const {
    MutexLock lock(mu_);
    return static_cast<bool>(writer_);
}

uint64_t RemovalJournal::batches_written() const {
    MutexLock lock(mu_);
    return done_batch_;
}

Status RemovalJournal::Record(const Entries& entries) {
    if (entries.empty()) return Status::Ok();
    MutexLock lock(mu_);
    if (!writer_) return Status::Ok();
    queued_.insert(queued_.end(), entries.begin(), entries.end());
    ++callers_queued_;
    const uint64_t mine = next_batch_;
    while (done_batch_ < mine) {
        if (writing_) {
            cv_.Wait(mu_);
            continue;
        }
        // Nobody writes: this caller writes everything queued (its own entries among them).
        writing_ = true;
        Entries batch = std::move(queued_);
        queued_.clear();
        const size_t callers = std::exchange(callers_queued_, 0);
        const uint64_t id = next_batch_++;
        Writer writer = writer_;
        mu_.unlock();
        Status st = writer ? writer(batch) : Status::Ok();
        mu_.lock();
        writing_ = false;
        done_batch_ = id;
        if (!st.ok()) failed_.emplace(id, std::make_pair(std::move(st), callers));
        cv_.NotifyAll();
    }
    auto failed = failed_.find(mine);
    if (failed != failed_.end()) {
        Status st = failed->second.first;
        if (--failed->second.second == 0) failed_.erase(failed);
        return st;
    }
    return Status::Ok();
}

}  // namespace mooncake
