// The adaptive promotion gate's rules (core/master/adaptive_policy.h), on small synthetic sequences
// where the right decision is known. The gate keeps no clock (its sims count accesses, and
// its evidence decays per access), so the sequences need no ManualClock; the store-level
// behaviour is covered by tests/replay.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/master/adaptive_policy.h"
#include "core/base/metrics.h"
#include "core/master/eviction_policy.h"

namespace mooncake {
namespace {

using Arm = AdaptivePromotionGate::Arm;

constexpr uint64_t kObject = 4096;
constexpr uint64_t kDramObjects = 100;  // under the gate's sample target: every key sampled

// Drives the gate the way MasterStore does: a Get of a missing key counts in the sketch and
// is followed by a Put; a Get of a known key counts and reports the estimate. The sketch is
// exact counts halved every 8 x DRAM objects reads, as the store's sketch ages.
class GateDriver {
public:
    GateDriver()
        : gate_(registry_, [] { return kDramObjects * kObject; },
                [this] { return agings_; }) {}

    void Read(uint64_t key) {
        uint64_t hash = key * 0x9E3779B97F4A7C15ull + 1;
        uint32_t& c = counts_[hash];
        c = std::min<uint32_t>(c + 1, 255);
        uint32_t estimate = c;
        if (++since_aging_ >= 8 * kDramObjects) {
            since_aging_ = 0;
            ++agings_;
            for (auto& [k, v] : counts_) v >>= 1;
        }
        if (known_.emplace(hash, true).second) {
            gate_.OnPut(hash, kObject, estimate);
        } else {
            gate_.OnGet(hash, kObject, estimate, 2);
        }
    }
    void Loop(uint64_t keys, int passes, uint64_t first = 0) {
        for (int p = 0; p < passes; ++p) {
            for (uint64_t k = first; k < first + keys; ++k) Read(k);
        }
    }
    double Metric(const std::string& name, const Labels& labels = {}) {
        return registry_.Value(name, labels).value_or(-1);
    }

    MetricsRegistry registry_;
    std::unordered_map<uint64_t, uint32_t> counts_;
    std::unordered_map<uint64_t, bool> known_;
    uint64_t since_aging_ = 0;
    uint64_t agings_ = 0;
    AdaptivePromotionGate gate_;
};

// A fresh gate promotes (the RFC's contract) until a refusing arm shows, by evidence, that
// promoting loses hits.
TEST(AdaptivePromotionGateTest, StartsPromotingWithEveryLabelExported) {
    GateDriver d;
    EXPECT_EQ(d.gate_.Current(), Arm::kAlways);
    for (const char* arm : {"always", "compare", "never", "density"}) {
        for (const char* outcome : {"promoted", "refused"}) {
            EXPECT_EQ(d.Metric("promotion_gate_decisions_total", {{"arm", arm}, {"outcome", outcome}}), 0)
                << arm << " " << outcome;
        }
        EXPECT_EQ(d.Metric("promotion_gate_sim_hits_total", {{"arm", arm}}), 0) << arm;
        EXPECT_EQ(d.Metric("promotion_gate_arm", {{"arm", arm}}),
                  std::string(arm) == "always" ? 1 : 0);
    }
    EXPECT_EQ(d.Metric("promotion_gate_switches_total"), 0);
}

// Without evidence the gate keeps promoting: a working set that fits gives every arm the same
// hits, and a warm gate never leaves `always`.
TEST(AdaptivePromotionGateTest, TiesKeepPromoting) {
    GateDriver d;
    d.Loop(50, 200);
    auto s = d.gate_.Scores();
    EXPECT_EQ(s[0], s[1]);
    EXPECT_EQ(s[1], s[2]);
    EXPECT_EQ(d.gate_.Current(), Arm::kAlways);
    EXPECT_EQ(d.Metric("promotion_gate_switches_total"), 0);
}

// Noise is not evidence: uniform reads over 1.5x DRAM give `always` and `never` the same hit
// ratio in expectation (each keeps two thirds of the keys), so their hits differ only by
// chance. The gate may stray, but must spend nearly all its time promoting.
TEST(AdaptivePromotionGateTest, NoiseIsNotEvidence) {
    GateDriver d;
    std::mt19937_64 rng(42);
    std::uniform_int_distribution<uint64_t> key(0, 149);
    d.Loop(150, 1);
    int promoting = 0;
    constexpr int kReads = 200000;
    for (int i = 0; i < kReads; ++i) {
        d.Read(key(rng));
        promoting += d.gate_.Current() == Arm::kAlways;
    }
    EXPECT_GT(promoting, kReads * 95 / 100);
}

// A loop larger than DRAM is found out in its second pass: `never` keeps the part it froze and
// hits it while every promoting arm thrashes; a dozen such reads are evidence.
TEST(AdaptivePromotionGateTest, LoopIsFoundOutInItsSecondPass) {
    GateDriver d;
    d.Loop(300, 1);
    EXPECT_EQ(d.gate_.Current(), Arm::kAlways);
    d.Loop(300, 1);
    EXPECT_EQ(d.gate_.Current(), Arm::kNever);
}

// Evidence is judged by a sign test on the reads where two arms disagree, not relative to
// the hit count: at a high hit ratio a small but steady lead must still switch. A hot set
// of 40 keys read 100 times a round (every arm hits) and 50 keys put long ago read twice a
// round (the sketch ages between rounds, so the second read reaches the threshold):
// promoting keeps all 90 resident (almost every read hits), not displacing misses the 100
// (4000 / 4100: a lead under 5 %, which the former 5 %-of-hits margin never passed).
TEST(AdaptivePromotionGateTest, SmallSteadyLeadAtHighHitRatioSwitches) {
    GateDriver d;
    d.Loop(50, 1, /*first=*/1000);  // the warm keys, put once
    d.Loop(100, 3, /*first=*/2000);  // fills DRAM with others: the warm keys leave
    for (int round = 0; round < 40; ++round) {
        for (int r = 0; r < 100; ++r) d.Loop(40, 1, /*first=*/3000);
        d.Loop(50, 2, /*first=*/1000);
    }
    auto s = d.gate_.Scores();
    EXPECT_GT(s[static_cast<size_t>(Arm::kAlways)], s[static_cast<size_t>(Arm::kNever)]);
    EXPECT_LT(s[static_cast<size_t>(Arm::kAlways)], s[static_cast<size_t>(Arm::kNever)] * 1.05);
    EXPECT_NE(d.gate_.Current(), Arm::kNever);
}

// A loop three times DRAM: promoting every returning key evicts the next ones to be read
// (LRU hits nothing), while not displacing keeps a third of the loop resident. The gate must
// leave "always", and its simulations must show why.
TEST(AdaptivePromotionGateTest, LoopLargerThanDramStopsDisplacing) {
    GateDriver d;
    d.Loop(300, 40);
    auto s = d.gate_.Scores();
    EXPECT_GT(s[static_cast<size_t>(Arm::kNever)], s[static_cast<size_t>(Arm::kAlways)] + 10);
    EXPECT_NE(d.gate_.Current(), Arm::kAlways);
    EXPECT_GE(s[static_cast<size_t>(d.gate_.Current())], s[static_cast<size_t>(Arm::kAlways)] + 10);
    EXPECT_EQ(d.Metric("promotion_gate_arm", {{"arm", "always"}}), 0);
    EXPECT_GT(d.Metric("promotion_gate_sim_hits_total", {{"arm", "never"}}),
              d.Metric("promotion_gate_sim_hits_total", {{"arm", "always"}}));
}

// After the loop, a new hot set of 50 keys that were put long ago (on LOCAL_DISK): a gate that
// never displaces would keep serving them from disk. It must come back to promoting.
TEST(AdaptivePromotionGateTest, NewHotSetBringsPromotionBack) {
    GateDriver d;
    d.Loop(300, 40);
    ASSERT_NE(d.gate_.Current(), Arm::kAlways);
    d.Loop(50, 400);
    auto s = d.gate_.Scores();
    EXPECT_NE(d.gate_.Current(), Arm::kNever);
    EXPECT_GT(s[static_cast<size_t>(d.gate_.Current())], s[static_cast<size_t>(Arm::kNever)]);
}

// Stale frequency: keys put long ago (now on LOCAL_DISK) become the hot set while DRAM is
// full of keys that were read many times before. Comparing victims refuses them until the old
// counts age away, not displacing refuses them for good; promoting at once is right, and the
// gate must stay on it.
TEST(AdaptivePromotionGateTest, StaleFrequencyHandsOverToAlways) {
    GateDriver d;
    d.Loop(100, 1, /*first=*/1000);  // the future hot set, put once
    d.Loop(100, 30);                 // the old hot set: fills DRAM, high counts
    d.Loop(100, 20, /*first=*/1000);
    auto s = d.gate_.Scores();
    EXPECT_GT(s[static_cast<size_t>(Arm::kAlways)], s[static_cast<size_t>(Arm::kCompare)]);
    EXPECT_GT(s[static_cast<size_t>(Arm::kCompare)], s[static_cast<size_t>(Arm::kNever)]);
    EXPECT_EQ(d.gate_.Current(), Arm::kAlways);
    EXPECT_EQ(d.Metric("promotion_gate_arm", {{"arm", "always"}}), 1);
    EXPECT_EQ(d.Metric("promotion_gate_arm", {{"arm", "compare"}}), 0);
}

// Decisions are counted per arm and outcome.
TEST(AdaptivePromotionGateTest, CountsDecisions) {
    GateDriver d;
    d.gate_.CountDecision(Arm::kCompare, true);
    d.gate_.CountDecision(Arm::kCompare, false);
    d.gate_.CountDecision(Arm::kNever, false);
    EXPECT_EQ(d.Metric("promotion_gate_decisions_total", {{"arm", "compare"}, {"outcome", "promoted"}}), 1);
    EXPECT_EQ(d.Metric("promotion_gate_decisions_total", {{"arm", "compare"}, {"outcome", "refused"}}), 1);
    EXPECT_EQ(d.Metric("promotion_gate_decisions_total", {{"arm", "never"}, {"outcome", "refused"}}), 1);
}

// The density arm (eviction_policy=adaptive): the gate as MasterStore drives it with an order
// that keeps hit-density statistics. The driver keeps them as HitDensityOrder does (a key's
// class from its accesses before, a reuse gap at every re-read), 10 ms a read, and reports
// evictions at the age LRU would evict at (DRAM objects x 10 ms).
class DensityDriver {
public:
    explicit DensityDriver(bool density_arm)
        : gate_(registry_, [] { return kDramObjects * kObject; }, [this] { return agings_; },
                Options(density_arm)) {}

    void Read(uint64_t key) {
        using namespace std::chrono_literals;
        now_ += 10ms;
        uint64_t hash = key * 0x9E3779B97F4A7C15ull + 1;
        uint32_t& c = counts_[hash];
        c = std::min<uint32_t>(c + 1, 255);
        if (++since_aging_ >= 8 * kDramObjects) {
            since_aging_ = 0;
            ++agings_;
            for (auto& [k, v] : counts_) v >>= 1;
        }
        auto [it, put] = keys_.try_emplace(hash);
        Key& k = it->second;
        if (!put) estimator_.RecordReuse(k.cls, now_ - k.last);
        k.cls = HitDensityEstimator::ClassOf(k.accesses, nullptr);
        k.accesses = std::min(k.accesses + 1, 255u);
        k.last = now_;
        estimator_.RecordAccess(k.cls, kDramObjects);
        estimator_.RecordEviction(kDramObjects * 10ms);
        if (put) {
            gate_.OnPut(hash, kObject, c, k.cls, now_);
        } else {
            gate_.OnGet(hash, kObject, c, 2, k.cls, now_);
        }
        followed_ += gate_.Current() == Arm::kDensity;
        ++reads_;
    }
    double Metric(const std::string& name, const Labels& labels = {}) {
        return registry_.Value(name, labels).value_or(-1);
    }

    MetricsRegistry registry_;
    HitDensityEstimator estimator_;
    uint64_t agings_ = 0;
    AdaptivePromotionGate gate_;
    uint64_t followed_ = 0;  // reads at which the gate followed the density arm
    uint64_t reads_ = 0;

private:
    struct Key {
        uint32_t accesses = 0;
        int cls = 0;
        Nanos last{0};
    };
    AdaptivePromotionGate::Options Options(bool density_arm) {
        AdaptivePromotionGate::Options o;
        if (density_arm) o.density_table = [this] { return estimator_.Snapshot(); };
        return o;
    }
    std::unordered_map<uint64_t, uint32_t> counts_;
    std::unordered_map<uint64_t, Key> keys_;
    uint64_t since_aging_ = 0;
    Nanos now_{0};
};

// Zipf-like reads of 80 hot keys, and every 400 reads a scan of 150 keys read once. Every Put
// goes to DRAM, so under LRU each scan flushes the hot set, which then comes back from disk
// one read at a time; by hit density the scan's class (a first access, never re-read) goes
// first and the hot set stays. The gate must follow the density arm, on evidence.
void ZipfWithScans(DensityDriver& d, int cycles) {
    std::mt19937_64 rng(7);
    std::vector<double> weights;
    for (int i = 1; i <= 80; ++i) weights.push_back(1.0 / i);
    std::discrete_distribution<int> zipf(weights.begin(), weights.end());
    uint64_t scan_key = 1'000'000;
    for (int cycle = 0; cycle < cycles; ++cycle) {
        for (int r = 0; r < 400; ++r) d.Read(static_cast<uint64_t>(zipf(rng)));
        for (int r = 0; r < 150; ++r) d.Read(scan_key++);
    }
}

TEST(AdaptivePromotionGateDensityTest, ScansUnderZipfFollowTheDensityArm) {
    DensityDriver d(/*density_arm=*/true);
    ZipfWithScans(d, 60);
    auto s = d.gate_.Scores();
    EXPECT_GT(s[static_cast<size_t>(Arm::kDensity)], s[static_cast<size_t>(Arm::kAlways)] * 1.1);
    EXPECT_EQ(d.gate_.Current(), Arm::kDensity);
    EXPECT_EQ(d.Metric("promotion_gate_arm", {{"arm", "density"}}), 1);
    EXPECT_EQ(d.Metric("promotion_gate_arm", {{"arm", "always"}}), 0);
    EXPECT_GT(d.Metric("promotion_gate_sim_hits_total", {{"arm", "density"}}),
              d.Metric("promotion_gate_sim_hits_total", {{"arm", "always"}}));
}

// Without an order that can switch (eviction_policy=lru) the arm is not simulated, however
// much it would win.
TEST(AdaptivePromotionGateDensityTest, NotSimulatedWithoutADensityOrder) {
    DensityDriver d(/*density_arm=*/false);
    ZipfWithScans(d, 60);
    EXPECT_EQ(d.followed_, 0u);
    EXPECT_EQ(d.gate_.Scores()[static_cast<size_t>(Arm::kDensity)], 0);
    EXPECT_EQ(d.Metric("promotion_gate_sim_hits_total", {{"arm", "density"}}), 0);
}

// Uniform reads over 1.5x DRAM: every key alike, so no eviction order keeps more hits than
// another in expectation, and the density arm's lead over `always` is noise. The gate must
// not follow it on noise (a rule that followed whichever arm is ahead would, about half the
// time).
TEST(AdaptivePromotionGateDensityTest, NoiseDoesNotSwitchTheOrder) {
    DensityDriver d(/*density_arm=*/true);
    std::mt19937_64 rng(42);
    std::uniform_int_distribution<uint64_t> key(0, 149);
    for (uint64_t k = 0; k < 150; ++k) d.Read(k);
    for (int i = 0; i < 200000; ++i) d.Read(key(rng));
    EXPECT_LT(d.followed_, d.reads_ * 5 / 100);
}

// After the scans stop, reads that make every order alike: the evidence fades and the gate
// goes back to `always` (and the store to LRU).
TEST(AdaptivePromotionGateDensityTest, FadedEvidenceGoesBackToAlways) {
    DensityDriver d(/*density_arm=*/true);
    ZipfWithScans(d, 60);
    ASSERT_EQ(d.gate_.Current(), Arm::kDensity);
    for (int pass = 0; pass < 600; ++pass) {
        for (uint64_t k = 0; k < 50; ++k) d.Read(5000 + k);  // fits: every arm hits
    }
    // A working set that fits gives no arm a lead, and the old lead has decayed away.
    std::mt19937_64 rng(3);
    std::uniform_int_distribution<uint64_t> key(0, 149);
    for (int i = 0; i < 100000; ++i) d.Read(9000 + key(rng));
    EXPECT_NE(d.gate_.Current(), Arm::kDensity);
}

// A large DRAM is simulated on a sample: the mini-DRAM stays near the target size.
TEST(AdaptivePromotionGateTest, LargeDramIsSampled) {
    MetricsRegistry registry;
    AdaptivePromotionGate gate(registry, [] { return uint64_t{1} << 30; },  // 262144 x 4 KiB
                               [] { return uint64_t{0}; });
    gate.OnPut(1, kObject, 1);  // the first access sizes the sample
    EXPECT_EQ(gate.SampleShift(), 6);  // 262144 / 2^6 = 4096 >= 4096 > 262144 / 2^7
}

}  // namespace
}  // namespace mooncake
