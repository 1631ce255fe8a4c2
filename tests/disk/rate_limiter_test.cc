#include "core/disk/rate_limiter.h"

#include <gtest/gtest.h>

namespace mooncake {
namespace {

using std::chrono::milliseconds;

TEST(RateLimiterTest, UnlimitedNeverWaits) {
    RateLimiter limiter(0);
    ManualClock clock;
    EXPECT_EQ(limiter.Reserve(uint64_t{1} << 40, clock.Now()), Nanos(0));
}

TEST(RateLimiterTest, BurstThenSteadyRate) {
    // 10 MB/s with a 1 MB burst.
    RateLimiter limiter(10'000'000, 1'000'000);
    ManualClock clock;
    EXPECT_EQ(limiter.Reserve(1'000'000, clock.Now()), Nanos(0));  // the burst
    // 1 MB of debt at 10 MB/s is 100 ms.
    EXPECT_EQ(std::chrono::duration_cast<milliseconds>(limiter.Reserve(1'000'000, clock.Now())),
              milliseconds(100));
    // Reservations queue up behind each other.
    EXPECT_EQ(std::chrono::duration_cast<milliseconds>(limiter.Reserve(500'000, clock.Now())),
              milliseconds(150));
    clock.Advance(milliseconds(150));
    EXPECT_EQ(limiter.Reserve(0, clock.Now()), Nanos(0));
    // Idle time refills only up to the burst.
    clock.Advance(std::chrono::seconds(10));
    EXPECT_EQ(limiter.Reserve(1'000'000, clock.Now()), Nanos(0));
    EXPECT_GT(limiter.Reserve(1, clock.Now()), Nanos(0));
}

TEST(RateLimiterTest, LongRunRateHolds) {
    RateLimiter limiter(1'000'000, 100'000);
    ManualClock clock;
    Nanos waited{0};
    for (int i = 0; i < 100; ++i) {
        Nanos w = limiter.Reserve(100'000, clock.Now());
        clock.Advance(w);
        waited += w;
    }
    // 10 MB at 1 MB/s, less the initial burst: 9.9 s.
    EXPECT_NEAR(std::chrono::duration<double>(waited).count(), 9.9, 0.01);
}

TEST(RateLimiterTest, RateCanChangeAtRuntime) {
    RateLimiter limiter(0);
    ManualClock clock;
    EXPECT_EQ(limiter.Reserve(100'000'000, clock.Now()), Nanos(0));
    limiter.SetRate(2'000'000);  // 2 MB/s, burst 1 MiB, starting with no credit
    EXPECT_EQ(limiter.bytes_per_sec(), 2'000'000u);
    EXPECT_EQ(std::chrono::duration_cast<milliseconds>(limiter.Reserve(1'000'000, clock.Now())),
              milliseconds(500));
    limiter.SetRate(0);
    EXPECT_EQ(limiter.Reserve(uint64_t{1} << 40, clock.Now()), Nanos(0));
}

}  // namespace
}  // namespace mooncake
