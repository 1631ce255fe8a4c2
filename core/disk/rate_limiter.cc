#include "core/disk/rate_limiter.h"

#include <algorithm>

namespace mooncake {

double RateLimiter::DefaultBurst(uint64_t bytes_per_sec) {
    return std::max(static_cast<double>(bytes_per_sec) / 10, double{1 << 20});
}

RateLimiter::RateLimiter(uint64_t bytes_per_sec, uint64_t burst)
    : fixed_burst_(burst != 0),
      rate_(bytes_per_sec),
      burst_(burst != 0 ? static_cast<double>(burst) : DefaultBurst(bytes_per_sec)),
      tokens_(burst_) {}

Nanos RateLimiter::Reserve(uint64_t bytes, Nanos now) {
    MutexLock lock(mu_);
    if (rate_ == 0) return Nanos(0);
    if (!started_) {
        started_ = true;
        last_ = now;
    }
    if (now > last_) {
        double earned =
            static_cast<double>((now - last_).count()) * 1e-9 * static_cast<double>(rate_);
        tokens_ = std::min(burst_, tokens_ + earned);
        last_ = now;
    }
    tokens_ -= static_cast<double>(bytes);
    if (tokens_ >= 0) return Nanos(0);
    return Nanos(static_cast<int64_t>(-tokens_ / static_cast<double>(rate_) * 1e9));
}

void RateLimiter::SetRate(uint64_t bytes_per_sec) {
    MutexLock lock(mu_);
    if (rate_ == 0) {
        tokens_ = 0;  // coming out of "unlimited": no hoarded credit
        started_ = false;
    }
    rate_ = bytes_per_sec;
    if (!fixed_burst_) burst_ = DefaultBurst(bytes_per_sec);
    tokens_ = std::min(tokens_, burst_);
}

uint64_t RateLimiter::bytes_per_sec() const {
    MutexLock lock(mu_);
    return rate_;
}

}  // namespace mooncake
