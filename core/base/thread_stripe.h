// ThreadStripe: a small per-thread index for striped counters.
//
// A counter every Get updates is one cache line that two cores writing it pass back and forth
// (~100 ns a pass on these VMs: the largest part of promotion_on_hit's Get-path cost at two
// threads). Striping it into kThreadStripes cache lines, each thread writing "its" line, keeps
// the writes core-local; readers add the stripes up. Threads are numbered in the order they
// first ask, so up to kThreadStripes threads never share a stripe.
#pragma once

#include <atomic>
#include <cstddef>

namespace mooncake {

inline constexpr size_t kThreadStripes = 8;

inline size_t ThreadStripe() {
    static std::atomic<size_t> next{0};
    thread_local const size_t stripe =
        next.fetch_add(1, std::memory_order_relaxed) % kThreadStripes;
    return stripe;
}

}  // namespace mooncake
