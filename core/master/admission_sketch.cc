#include "core/master/admission_sketch.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <new>

namespace mooncake {
namespace {

uint64_t Mix(uint64_t x) {  // splitmix64 finalizer
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

constexpr size_t kHugePage = size_t{2} << 20;

// `bytes` of zeroed counters, aligned so a large sketch can sit on 2 MiB pages (advisory: a
// kernel without transparent huge pages still gives 4 KiB ones).
std::atomic<uint8_t>* AllocateCounters(size_t bytes) {
    const size_t align = bytes >= kHugePage ? kHugePage : 64;
    void* p = std::aligned_alloc(align, (bytes + align - 1) / align * align);
    if (p == nullptr) throw std::bad_alloc();
    if (align == kHugePage) (void)::madvise(p, bytes, MADV_HUGEPAGE);
    auto* counters = static_cast<std::atomic<uint8_t>*>(p);
    for (size_t i = 0; i < bytes; ++i) new (&counters[i]) std::atomic<uint8_t>(0);
    return counters;
}

}  // namespace

void AdmissionSketch::FreeCounters::operator()(std::atomic<uint8_t>* p) const {
    std::free(p);  // std::atomic<uint8_t> is trivially destructible
}

AdmissionSketch::AdmissionSketch(uint64_t width)
    : width_(std::bit_ceil(std::max<uint64_t>(width, 64))),
      lines_(width_ * kDepth / kLine),
      counters_(AllocateCounters(lines_ * kLine)),
      window_(width_ * 8),
      aging_cursor_(lines_ * kLine) {}

uint64_t AdmissionSketch::Hash(std::string_view key) {
    // FNV-1a over the bytes, then a strong finalizer so every bit of the result is usable.
    uint64_t h = 1469598103934665603ULL;
    for (unsigned char c : key) {
        h ^= c;
        h *= 1099511628211ULL;
    }
    return Mix(h ^ key.size());
}

size_t AdmissionSketch::SlotOf(uint64_t hash, int row) {
    // Row r uses its own 16-byte quarter of the line, indexed by 4 bits of the hash that the
    // line choice did not consume (the high bits, mixed once more per row).
    uint64_t h2 = Mix(hash + static_cast<uint64_t>(row) * 0x9e3779b97f4a7c15ULL);
    return static_cast<size_t>(row) * 16 + static_cast<size_t>(h2 >> 60);
}

uint32_t AdmissionSketch::Increment(uint64_t hash) {
    std::atomic<uint8_t>* line = Line(hash);
    uint32_t estimate = 255;
    for (int row = 0; row < kDepth; ++row) {
        std::atomic<uint8_t>& c = line[SlotOf(hash, row)];
        uint8_t v = c.load(std::memory_order_relaxed);
        while (v < 255 && !c.compare_exchange_weak(v, static_cast<uint8_t>(v + 1),
                                                   std::memory_order_relaxed)) {
        }
        estimate = std::min<uint32_t>(estimate, v < 255 ? v + 1u : 255u);
    }
    CountForAging();
    HalveSome();
    return estimate;
}

void AdmissionSketch::Fold(const AccessCount& count, uint64_t hash) {
    const auto value = static_cast<uint8_t>(Estimate(count));
    if (value == 0) return;
    std::atomic<uint8_t>* line = Line(hash);
    for (int row = 0; row < kDepth; ++row) {
        std::atomic<uint8_t>& c = line[SlotOf(hash, row)];
        uint8_t v = c.load(std::memory_order_relaxed);
        while (v < value && !c.compare_exchange_weak(v, value, std::memory_order_relaxed)) {
        }
    }
}

void AdmissionSketch::CountForAging() {
    Stripe& mine = stripes_[ThreadStripe()];
    const uint64_t unfolded = mine.unfolded.fetch_add(1, std::memory_order_relaxed) + 1;
    uint64_t folded = since_aging_.load(std::memory_order_relaxed);
    if (folded + unfolded >= window_.load(std::memory_order_relaxed)) {
        // One thread wins the reset and starts a sweep; the sweep itself is shared out.
        if (since_aging_.compare_exchange_strong(folded, 0, std::memory_order_relaxed)) {
            mine.unfolded.fetch_sub(unfolded, std::memory_order_relaxed);
            aging_cursor_.store(0, std::memory_order_relaxed);
            agings_.fetch_add(1, std::memory_order_relaxed);
        }
    } else if (unfolded >= kFold) {
        mine.unfolded.fetch_sub(unfolded, std::memory_order_relaxed);
        since_aging_.fetch_add(unfolded, std::memory_order_relaxed);
    }
}

void AdmissionSketch::HalveSome() {
    const size_t total = lines_ * kLine;
    if (aging_cursor_.load(std::memory_order_relaxed) >= total) return;
    // A sweep must end well within one window, or the next reset restarts it and the
    // counters past where it got never age (a small DRAM's window is shorter than a sweep
    // of kChunk per increment): at least 2 x total / window counters per increment.
    const uint64_t window = std::max<uint64_t>(window_.load(std::memory_order_relaxed), 1);
    const size_t chunk = std::max<size_t>(kChunk, static_cast<size_t>(2 * total / window + 1));
    size_t start = aging_cursor_.fetch_add(chunk, std::memory_order_relaxed);
    if (start >= total) return;
    size_t end = std::min(total, start + chunk);
    for (size_t i = start; i < end; ++i) {
        uint8_t v = counters_[i].load(std::memory_order_relaxed);
        while (v != 0 && !counters_[i].compare_exchange_weak(v, static_cast<uint8_t>(v >> 1),
                                                             std::memory_order_relaxed)) {
        }
    }
}

uint32_t AdmissionSketch::Estimate(uint64_t hash) const {
    const std::atomic<uint8_t>* line = Line(hash);
    uint32_t estimate = 255;
    for (int row = 0; row < kDepth; ++row) {
        estimate = std::min<uint32_t>(estimate,
                                      line[SlotOf(hash, row)].load(std::memory_order_relaxed));
    }
    return estimate;
}

void AdmissionSketch::set_window(uint64_t window) {
    if (window > 0) window_.store(window, std::memory_order_relaxed);
}

void AdmissionSketch::AgeNow() {
    const size_t total = lines_ * kLine;
    for (size_t i = 0; i < total; ++i) {
        counters_[i].store(counters_[i].load(std::memory_order_relaxed) >> 1,
                           std::memory_order_relaxed);
    }
    since_aging_.store(0, std::memory_order_relaxed);
    for (Stripe& stripe : stripes_) stripe.unfolded.store(0, std::memory_order_relaxed);
    aging_cursor_.store(total, std::memory_order_relaxed);
    agings_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace mooncake
