// memory_bench: bytes of master memory per object, beyond the key itself.
//
//   build/bin/memory_bench                                   # 1 M objects, 32-byte keys
//   build/bin/memory_bench --objects=1000000 --key_len=64 --phase=both --json
//
// Creates N objects in a real MasterStore (the one mooncaked runs) through the normal Put
// path (PutStart + PutEnd on one registered node whose segment the master only accounts for),
// optionally offloading them (--phase=both: MEMORY + LOCAL_DISK replicas) and then dropping
// the MEMORY copy (--phase=disk). The offload tasks are handed out and acknowledged as a node
// would (OffloadObjectHeartbeat + NotifyOffloadSuccess), with no bytes moved, and a heartbeat
// takes the released ranges. Reports two measures of what the store grew by:
//   rss     resident set (/proc/self/statm) after malloc_trim, before and after
//   malloc  the allocator's own count of bytes in use (mallinfo2: uordblks + hblkhd, the
//           chunks in use and the blocks it mmapped for large requests such as hash buckets)
// each as bytes per object minus the key length. Keys are made on the fly ("k" + zero-padded
// index, exactly --key_len bytes), so the bench holds none of them itself.
// Value size (--value_size, default 64) only matters for DRAM accounting, not for master memory.
#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/base/clock.h"
#include "core/base/knobs.h"
#include "core/master/master_store.h"
#include "core/base/metrics.h"

namespace mooncake {
namespace {

void Check(const Status& s, const char* what) {
    if (!s.ok()) {
        std::fprintf(stderr, "memory_bench: %s: %s\n", what, s.ToString().c_str());
        std::exit(1);
    }
}

struct Sample {
    uint64_t rss = 0;
    uint64_t malloc = 0;
};

Sample Measure() {
    malloc_trim(0);
    Sample s;
    const struct mallinfo2 mi = mallinfo2();
    s.malloc = mi.uordblks + mi.hblkhd;  // heap chunks in use + mmapped blocks (large tables)
    long pages_total = 0;
    long pages_resident = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
        if (std::fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2) pages_resident = 0;
        std::fclose(f);
    }
    s.rss = static_cast<uint64_t>(pages_resident) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    return s;
}

std::string KeyOf(size_t i, size_t key_len) {
    std::string digits = std::to_string(i);
    std::string key(key_len, '0');
    key[0] = 'k';
    std::memcpy(key.data() + key_len - digits.size(), digits.data(), digits.size());
    return key;
}

struct Options {
    size_t objects = 1000000;
    size_t key_len = 32;
    uint64_t value_size = 64;
    std::string phase = "memory";  // memory | both | disk
    bool json = false;
};

int Run(const Options& o) {
    Config config;
    Check(config.Set("put_wait_for_offload_ms", "0"), "config");
    Check(config.Set("default_kv_lease_ttl", "0"), "config");
    Check(config.Set("offload_queue_limit", "100000000"), "config");
    ManualClock clock;
    MetricsRegistry metrics;
    auto store = std::make_unique<MasterStore>(config, clock, metrics, 1);
    Result<NodeId> node =
        store->RegisterNode({"bench", "bench:data", uint64_t{1} << 44, uint64_t{1} << 50});
    Check(node.status(), "RegisterNode");

    const Sample before = Measure();
    for (size_t i = 0; i < o.objects; ++i) {
        std::string key = KeyOf(i, o.key_len);
        Result<PutStartReply> start = store->PutStart(1, key, o.value_size);
        Check(start.status(), "PutStart");
        Check(store->PutEnd(1, key, start->generation), "PutEnd");
    }
    if (o.phase != "memory") {
        for (size_t i = 0; i < o.objects; ++i) {
            Check(store->Offload(KeyOf(i, o.key_len)).status(), "Offload");
        }
        for (;;) {
            std::vector<OffloadTask> tasks = store->OffloadObjectHeartbeat(*node, 65536);
            if (tasks.empty()) break;
            for (const OffloadTask& t : tasks) {
                Check(store->NotifyOffloadSuccess(*node, t.key, t.generation), "offload");
            }
        }
        if (o.phase == "disk") {
            for (size_t i = 0; i < o.objects; ++i) {
                Check(store->Evict(KeyOf(i, o.key_len)).status(), "Evict");
            }
        }
        // The node takes what the master queued for it (released DRAM ranges) as its
        // heartbeat does, so the figure is the objects', not a backlog's.
        // The second confirms the first (the master keeps what a node has not confirmed).
        Check(store->Heartbeat(*node).status(), "Heartbeat");
        Check(store->Heartbeat(*node).status(), "Heartbeat");
    }
    const Sample after = Measure();
    InvariantReport report = store->CheckInvariants();
    if (!report.ok() || report.objects != o.objects) {
        std::fprintf(stderr, "memory_bench: %llu objects in the store (expected %zu), %zu violations\n",
                     static_cast<unsigned long long>(report.objects), o.objects,
                     report.violations.size());
        return 1;
    }

    const double n = static_cast<double>(o.objects);
    const double rss = static_cast<double>(after.rss - before.rss) / n - o.key_len;
    const double mal = static_cast<double>(after.malloc - before.malloc) / n - o.key_len;
    if (o.json) {
        std::printf("{\"objects\": %zu, \"key_len\": %zu, \"value_size\": %llu, \"phase\": \"%s\", "
                    "\"rss_bytes_per_object\": %.1f, \"malloc_bytes_per_object\": %.1f}\n",
                    o.objects, o.key_len, static_cast<unsigned long long>(o.value_size),
                    o.phase.c_str(), rss, mal);
    } else {
        std::printf("objects %zu, key %zu B, value %llu B, phase %s\n", o.objects, o.key_len,
                    static_cast<unsigned long long>(o.value_size), o.phase.c_str());
        std::printf("  rss     %8.1f B/object beyond the key (%.1f MiB total growth)\n", rss,
                    static_cast<double>(after.rss - before.rss) / (1 << 20));
        std::printf("  malloc  %8.1f B/object beyond the key (%.1f MiB total growth)\n", mal,
                    static_cast<double>(after.malloc - before.malloc) / (1 << 20));
    }
    return 0;
}

}  // namespace
}  // namespace mooncake

int main(int argc, char** argv) {
    mooncake::Options o;
    for (int i = 1; i < argc; ++i) {
        const char* a = argv[i];
        if (std::strncmp(a, "--objects=", 10) == 0) {
            o.objects = std::strtoull(a + 10, nullptr, 10);
        } else if (std::strncmp(a, "--key_len=", 10) == 0) {
            o.key_len = std::strtoull(a + 10, nullptr, 10);
        } else if (std::strncmp(a, "--value_size=", 13) == 0) {
            o.value_size = std::strtoull(a + 13, nullptr, 10);
        } else if (std::strncmp(a, "--phase=", 8) == 0) {
            o.phase = a + 8;
        } else if (std::strcmp(a, "--json") == 0) {
            o.json = true;
        } else {
            std::fprintf(stderr,
                         "usage: memory_bench [--objects=N] [--key_len=L] [--value_size=B] "
                         "[--phase=memory|both|disk] [--json]\n");
            return 2;
        }
    }
    if (o.objects == 0 || o.key_len < 21 || o.key_len > 4096 ||
        (o.phase != "memory" && o.phase != "both" && o.phase != "disk")) {
        std::fprintf(stderr, "memory_bench: need objects > 0, 21 <= key_len <= 4096, a known phase\n");
        return 2;
    }
    return mooncake::Run(o);
}
