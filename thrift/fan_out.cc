#include "thrift/fan_out.h"

#include <algorithm>
#include <atomic>

namespace mooncake {

// One Run: items are claimed from `next` by whoever is free (caller or worker); the caller
// waits for `done` to reach n. A worker that dequeues the job after every item was claimed
// finds nothing to do: the job lives on through its shared_ptr, and fn (on the caller's
// stack) is only called for a claimed item, that is before the caller stops waiting.
struct FanOut::Job {
    const std::function<void(size_t)>* fn = nullptr;
    size_t n = 0;
    std::atomic<size_t> next{0};
    std::atomic<size_t> done{0};
    Mutex mu;
    CondVar finished;

    void Drain() {
        for (size_t i; (i = next.fetch_add(1)) < n;) {
            (*fn)(i);
            if (done.fetch_add(1) + 1 == n) {
                MutexLock lock(mu);  // the caller checks `done` under mu: no lost wake-up
                finished.NotifyAll();
            }
        }
    }
};

FanOut::~FanOut() {
    {
        MutexLock lock(mu_);
        stopping_ = true;
    }
    wake_.NotifyAll();
    for (std::thread& t : threads_) t.join();
}

void FanOut::StartLocked() {
    while (threads_.size() < workers_) threads_.emplace_back([this] { Work(); });
}

void FanOut::Work() {
    for (;;) {
        std::shared_ptr<Job> job;
        {
            MutexLock lock(mu_);
            while (!stopping_ && queue_.empty()) wake_.Wait(mu_);
            if (stopping_) return;
            job = std::move(queue_.front());
            queue_.pop_front();
        }
        job->Drain();
    }
}

void FanOut::Run(size_t n, size_t width, const std::function<void(size_t)>& fn) {
    size_t helpers = std::min({n > 0 ? n - 1 : 0, width > 0 ? width - 1 : 0, workers_});
    if (helpers == 0) {
        for (size_t i = 0; i < n; ++i) fn(i);
        return;
    }
    auto job = std::make_shared<Job>();
    job->fn = &fn;
    job->n = n;
    {
        MutexLock lock(mu_);
        StartLocked();
        for (size_t h = 0; h < helpers; ++h) queue_.push_back(job);
    }
    if (helpers == 1) {
        wake_.NotifyOne();
    } else {
        wake_.NotifyAll();
    }
    job->Drain();
    MutexLock lock(job->mu);
    while (job->done.load() != n) job->finished.Wait(job->mu);
}

}  // namespace mooncake
