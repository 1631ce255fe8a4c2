// RateLimiter: a token bucket for background bytes.
//
// Reserve() takes the bytes at once (the bucket may go into debt) and says how long the caller
// should wait before doing the I/O, so one large object is not starved by small ones and the
// long-run rate holds. The bucket holds at most `burst` bytes of credit.
//
// Thread-safe. Time is passed in, so tests drive it with a ManualClock and never sleep.
#pragma once

#include <cstdint>
#include <mutex>

#include "core/base/clock.h"
#include "core/base/mutex.h"

namespace mooncake {

class RateLimiter {
  public:
    // bytes_per_sec == 0: unlimited. burst == 0: a tenth of a second's worth (at least 1 MiB).
    explicit RateLimiter(uint64_t bytes_per_sec, uint64_t burst = 0);

    Nanos Reserve(uint64_t bytes, Nanos now);

    // Runtime tuning. The burst follows the rate unless it was given explicitly; debt already
    // taken is kept.
    void SetRate(uint64_t bytes_per_sec);
    uint64_t bytes_per_sec() const;

  private:
    static double DefaultBurst(uint64_t bytes_per_sec);

    const bool fixed_burst_;
    mutable Mutex mu_;
    uint64_t rate_ MC_GUARDED_BY(mu_);
    double burst_ MC_GUARDED_BY(mu_);
    double tokens_ MC_GUARDED_BY(mu_);  // negative = debt
    Nanos last_ MC_GUARDED_BY(mu_){0};
    bool started_ MC_GUARDED_BY(mu_) = false;
};

}  // namespace mooncake
