#include "node/disk_health.h"

#include "core/base/metrics.h"

namespace mooncake {

namespace {
constexpr const char* kCorruptionHelp =
    "disk corruption events since start, by kind (checksum: an object's bytes failed their "
    "hash; journal: a journal batch recovery could not use; superblock: a damaged superblock "
    "copy; record: an impossible or overlapping journal record)";
}  // namespace

DiskHealth::DiskHealth(MetricsRegistry& metrics)
    : recovery_dropped_(metrics.GetCounter(
          "recovery_dropped_total",
          "journal records the disk store's recovery dropped at start (each logged)")) {
    for (size_t i = 0; i < std::size(kCorruptionKinds); ++i) {
        by_kind_[i] = &metrics.GetCounter("disk_corruption_total", kCorruptionHelp,
                                          {{"kind", CorruptionKindName(kCorruptionKinds[i])}});
    }
}

void DiskHealth::Count(CorruptionKind kind) {
    by_kind_[static_cast<size_t>(kind)]->Inc();
}

void DiskHealth::RecordRecovery(const DiskStoreStats& stats) {
    recovery_dropped_.Inc(static_cast<double>(stats.recovery_dropped));
}

uint64_t DiskHealth::total() const {
    double sum = 0;
    for (const Counter* c : by_kind_) sum += c->Value();
    return static_cast<uint64_t>(sum);
}

}  // namespace mooncake
