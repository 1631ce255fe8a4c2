// SoftPinTrust (core/master/soft_pin_trust.h): pins that keep the keys about to be read stay
// trusted; pins on dead keys, which push out the keys about to be read, lose trust on evidence
// and win it back when the evidence fades. Small synthetic sequences where the answer is known
// (every key sampled: the mini-DRAM is under the sample target).
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "core/base/metrics.h"
#include "core/master/soft_pin_trust.h"

namespace mooncake {
namespace {

constexpr uint64_t kObject = 4096;
constexpr uint64_t kDramObjects = 100;
constexpr Nanos kLongPin = std::chrono::hours(1);

uint64_t Hash(uint64_t key) { return key * 0x9E3779B97F4A7C15ull + 1; }

class TrustDriver {
public:
    TrustDriver() : trust_(registry_, [] { return kDramObjects * kObject; }) {}

    void Put(uint64_t key, bool pinned) {
        trust_.OnPut(Hash(key), kObject, pinned ? kLongPin : Nanos{0}, Tick());
    }
    void Get(uint64_t key) { trust_.OnGet(Hash(key), kObject, Tick()); }
    double Metric(const std::string& name, const Labels& labels = {}) {
        return registry_.Value(name, labels).value_or(-1);
    }

    // Each round puts `dead` pinned keys never read again, then reads back a working set of
    // `live` unpinned keys: honoured, the dead pins pile up and push the working set out;
    // ignored, the working set (80, plus 15 dead keys between two reads, of 100) fits.
    void WrongHints(int rounds, uint64_t live = 80, uint64_t dead = 15) {
        for (int r = 0; r < rounds; ++r) {
            for (uint64_t k = 0; k < dead; ++k) Put(next_dead_++, /*pinned=*/true);
            for (uint64_t k = 0; k < live; ++k) {
                if (r == 0) Put(1'000'000 + k, /*pinned=*/false);
                Get(1'000'000 + k);
            }
        }
    }
    // Pinned keys are the ones read back; a scan of unpinned keys never read again passes by.
    void RightHints(int rounds) {
        for (int r = 0; r < rounds; ++r) {
            for (uint64_t k = 0; k < 60; ++k) {
                if (r == 0) Put(2'000'000 + k, /*pinned=*/true);
            }
            for (uint64_t k = 0; k < 80; ++k) Put(next_dead_++, /*pinned=*/false);
            for (uint64_t k = 0; k < 60; ++k) Get(2'000'000 + k);
        }
    }

    MetricsRegistry registry_;
    SoftPinTrust trust_;

private:
    Nanos Tick() { return now_ += std::chrono::milliseconds(1); }
    Nanos now_{0};
    uint64_t next_dead_ = 0;
};

TEST(SoftPinTrust, NoPinNoWork) {
    TrustDriver d;
    for (uint64_t k = 0; k < 1000; ++k) {
        d.Put(k, false);
        d.Get(k);
    }
    EXPECT_FALSE(d.trust_.active());
    EXPECT_TRUE(d.trust_.Trusted());
    EXPECT_EQ(d.trust_.Scores()[0] + d.trust_.Scores()[1], 0);
    EXPECT_EQ(d.Metric("soft_pin_trusted"), 1);
}

TEST(SoftPinTrust, RightHintsStayTrusted) {
    TrustDriver d;
    d.RightHints(200);
    EXPECT_TRUE(d.trust_.active());
    EXPECT_TRUE(d.trust_.Trusted());
    auto s = d.trust_.Scores();
    EXPECT_GT(s[0], s[1]);  // honouring the pins keeps the reused keys
    EXPECT_EQ(d.Metric("soft_pin_trust_switches_total"), 0);
}

TEST(SoftPinTrust, WrongHintsLoseTrustAndWinItBack) {
    TrustDriver d;
    d.WrongHints(100);
    EXPECT_FALSE(d.trust_.Trusted());
    EXPECT_EQ(d.Metric("soft_pin_trusted"), 0);
    EXPECT_EQ(d.Metric("soft_pin_trust_switches_total"), 1);
    EXPECT_GT(d.Metric("soft_pin_sim_hits_total", {{"arm", "ignore"}}),
              d.Metric("soft_pin_sim_hits_total", {{"arm", "honour"}}));
    // The workload changes: pins now mark exactly the reused keys. The old evidence fades and
    // the pins are honoured again.
    d.RightHints(2000);
    EXPECT_TRUE(d.trust_.Trusted());
    EXPECT_EQ(d.Metric("soft_pin_trusted"), 1);
    EXPECT_EQ(d.Metric("soft_pin_trust_switches_total"), 2);
}

TEST(SoftPinTrust, APinLapsesAfterItsTtl) {
    // Pins of 1 ms on dead keys: lapsed by the time the working set is read, they push nothing
    // out, so the two simulations agree and trust stays.
    MetricsRegistry registry;
    SoftPinTrust trust(registry, [] { return kDramObjects * kObject; });
    Nanos now{0};
    for (int r = 0; r < 100; ++r) {
        for (uint64_t k = 0; k < 50; ++k) {
            now += std::chrono::milliseconds(10);
            trust.OnPut(Hash(r * 50 + k), kObject, std::chrono::milliseconds(1), now);
        }
        for (uint64_t k = 0; k < 40; ++k) {
            now += std::chrono::milliseconds(10);
            if (r == 0) trust.OnPut(Hash(1'000'000 + k), kObject, Nanos{0}, now);
            trust.OnGet(Hash(1'000'000 + k), kObject, now);
        }
    }
    EXPECT_TRUE(trust.Trusted());
    auto s = trust.Scores();
    EXPECT_EQ(s[0], s[1]);
}

}  // namespace
}  // namespace mooncake
