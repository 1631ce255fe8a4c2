// FanOut: runs the items of one batch call (BatchGet's reads, BatchPut's writes) on a few
// threads at once, so a batch of N values costs about N / width single transfers instead of N
// serial round trips. Each worker borrows its own pooled data connection (DataTransport is
// thread-safe), so the transfers of one batch overlap on the wire and on the nodes' per-
// connection server threads.
//
// The workers are started once (lazily, by the first batch that needs them) and shared by every
// caller of one Client: a batch call from each of 16 application threads does not start 16 x
// width threads. The calling thread always works too, so a batch makes progress even when every
// worker is busy with another caller's batch.
//
// Thread-safety: Run may be called from any number of threads at once.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/base/mutex.h"

namespace mooncake {

class FanOut {
public:
    // `workers` threads besides the caller (0: every Run is serial on the caller).
    explicit FanOut(size_t workers) : workers_(workers) {}
    ~FanOut();
    FanOut(const FanOut&) = delete;
    FanOut& operator=(const FanOut&) = delete;

    // Calls fn(0) .. fn(n - 1), each exactly once, on the caller and up to `width - 1` workers
    // (at most the pool's size); returns when all have returned. fn must not throw.
    void Run(size_t n, size_t width, const std::function<void(size_t)>& fn);

private:
    struct Job;
    void Work() MC_EXCLUDES(mu_);
    void StartLocked() MC_REQUIRES(mu_);

    const size_t workers_;
    Mutex mu_;
    CondVar wake_;
    std::deque<std::shared_ptr<Job>> queue_ MC_GUARDED_BY(mu_);  // one entry per helper wanted
    std::vector<std::thread> threads_ MC_GUARDED_BY(mu_);
    bool stopping_ MC_GUARDED_BY(mu_) = false;
};

}  // namespace mooncake
