// The selection of the coldest eviction candidates (core/master/eviction_order.h): SelectColdest picks
// exactly the set a full sort's prefix would, which the clean round relies on to skip the sort.
#include "core/master/eviction_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

namespace mooncake {
namespace {

// The reference: rank everything, then walk coldest first until the bytes reach `bytes`.
std::set<uint64_t> PrefixBySort(std::vector<EvictionCandidate> c, uint64_t bytes) {
    RankCandidates(c);
    std::set<uint64_t> out;
    uint64_t covered = 0;
    for (const EvictionCandidate& x : c) {
        if (covered >= bytes) break;
        covered += x.bytes;
        out.insert(x.recency);
    }
    return out;
}

std::set<uint64_t> Selected(const std::vector<EvictionCandidate>& c, uint64_t bytes) {
    std::set<uint64_t> out;
    for (uint32_t i : SelectColdest(c, bytes)) out.insert(c[i].recency);
    return out;
}

// lru: every score 0 (the order is recency); hit_density: scores with many ties. `pinned`:
// some candidates soft-pinned (ranked after every unpinned one).
void ExpectSameAsSort(bool scored, bool pinned = false) {
    std::mt19937_64 rng(7);
    for (int trial = 0; trial < 300; ++trial) {
        const size_t n = rng() % 200;
        std::vector<EvictionCandidate> c;
        uint64_t total = 0;
        for (size_t i = 0; i < n; ++i) {
            EvictionCandidate x{};
            x.recency = i;  // unique: the orders break ties by it
            x.bytes = 4096 * (1 + rng() % 8);
            x.score = scored ? static_cast<double>(rng() % 5) : 0.0;
            x.soft_pinned = pinned && rng() % 3 == 0;
            total += x.bytes;
            c.push_back(x);
        }
        std::shuffle(c.begin(), c.end(), rng);
        for (uint64_t bytes : {uint64_t{1}, total / 3, total / 2, total, total + 1,
                               static_cast<uint64_t>(rng() % (total + 2))}) {
            EXPECT_EQ(Selected(c, bytes), PrefixBySort(c, bytes))
                << "n " << n << ", bytes " << bytes << " of " << total;
        }
    }
}

TEST(EvictionOrderSelect, ByRecencySelectsWhatTheSortedPrefixHolds) { ExpectSameAsSort(false); }

TEST(EvictionOrderSelect, ByScoreSelectsWhatTheSortedPrefixHolds) { ExpectSameAsSort(true); }

TEST(EvictionOrderSelect, WithSoftPinsSelectsWhatTheSortedPrefixHolds) {
    ExpectSameAsSort(false, /*pinned=*/true);
    ExpectSameAsSort(true, /*pinned=*/true);
}

// A soft-pinned candidate ranks after every unpinned one, however cold it is.
TEST(EvictionOrderSelect, SoftPinnedRankAfterUnpinned) {
    std::vector<EvictionCandidate> c(3);
    c[0].recency = 1;  // the coldest, soft-pinned
    c[0].soft_pinned = true;
    c[1].recency = 2;
    c[1].score = 5;  // unpinned but with a high score
    c[2].recency = 3;
    for (auto& x : c) x.bytes = 4096;
    RankCandidates(c);
    EXPECT_EQ(c[0].recency, 3u);
    EXPECT_EQ(c[1].recency, 2u);
    EXPECT_EQ(c[2].recency, 1u);
    EXPECT_EQ(Selected(c, 8192), (std::set<uint64_t>{2, 3}));
}

}  // namespace
}  // namespace mooncake
