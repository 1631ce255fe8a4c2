// DiskHealth: a node's disk corruption, as metrics and as the figure it reports to the master.
//
//   mooncake_disk_corruption_total{kind=checksum|journal|superblock|record}
//       corruption events since the process started (recovery's findings included);
//   mooncake_recovery_dropped_total
//       journal records the last open of the disk store dropped (damaged or not).
//
// Every label value is registered at construction, so a scrape shows 0 rather than nothing.
// The disk store reports events through DiskStoreOptions::on_corruption (Hook()); each one is
// also a warning line in the log, written by the store.
//
// Thread-safety: Count() and total() may be called from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <functional>

#include "core/disk/disk_store.h"

namespace mooncake {

class Counter;
class MetricsRegistry;

class DiskHealth {
public:
    explicit DiskHealth(MetricsRegistry& metrics);

    void Count(CorruptionKind kind);
    // For DiskStoreOptions::on_corruption; `this` must outlive the store.
    std::function<void(CorruptionKind)> Hook() {
        return [this](CorruptionKind kind) { Count(kind); };
    }
    // After the store opened: how many records its recovery dropped.
    void RecordRecovery(const DiskStoreStats& stats);
    // Corruption events of every kind since start.
    uint64_t total() const;

private:
    std::array<Counter*, std::size(kCorruptionKinds)> by_kind_{};
    Counter& recovery_dropped_;
};

}  // namespace mooncake
