// Monotonic time for policies. Core never reads the system clock directly: the daemon hands
// it a SteadyClock, tests and the trace replay a ManualClock, so leases, TTLs, task timeouts
// and sketch aging are testable without sleeping.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace mooncake {

using Nanos = std::chrono::nanoseconds;

class Clock {
public:
    virtual ~Clock() = default;
    // Time since an arbitrary fixed origin; never goes backwards. Thread-safe.
    virtual Nanos Now() const = 0;
};

class SteadyClock final : public Clock {
public:
    Nanos Now() const override {
        return std::chrono::duration_cast<Nanos>(
            std::chrono::steady_clock::now().time_since_epoch());
    }
};

// Moves only when told to. Thread-safe.
class ManualClock final : public Clock {
public:
    explicit ManualClock(Nanos start = Nanos(1'000'000'000)) : now_(start.count()) {}
    Nanos Now() const override { return Nanos(now_.load(std::memory_order_acquire)); }
    void Advance(Nanos d) { now_.fetch_add(d.count(), std::memory_order_acq_rel); }
    void Set(Nanos t) {
        // Monotonic: a Set into the past is ignored.
        int64_t cur = now_.load();
        while (t.count() > cur && !now_.compare_exchange_weak(cur, t.count())) {
        }
    }

private:
    std::atomic<int64_t> now_;
};

}  // namespace mooncake
