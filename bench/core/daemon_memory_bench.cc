// daemon_memory_bench: a real master's RSS per object, from outside.
//
//   build/bin/daemon_memory_bench [--objects=200000] [--key_len=32] [--value_size=8]
//                                 [--granularity=B]   (the master's dram_alloc_granularity)
//
// Starts `mooncaked --role master` and one `--role node` (256 MiB DRAM, no disk) through the
// integration harness, BatchPuts N small values through the client library (1000 a call),
// and reads the master's resident set (/proc/<pid>/statm) before and after: the growth per
// object minus the key length is what the master keeps for each (its table, replica records,
// eviction links, and whatever its allocator does not give back). The node's RSS says nothing
// here (it prefaults its whole segment), so the DRAM the values take is the master's
// segment_used for the node: dram_alloc_granularity granules (64 B by default; the former
// 4 KiB units would take 4096 per value).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/integration/harness.h"

namespace {

uint64_t RssOf(pid_t pid) {
    long pages_total = 0;
    long pages_resident = 0;
    const std::string path = "/proc/" + std::to_string(pid) + "/statm";
    if (FILE* f = std::fopen(path.c_str(), "r")) {
        if (std::fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2) pages_resident = 0;
        std::fclose(f);
    }
    return static_cast<uint64_t>(pages_resident) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

std::string KeyOf(size_t i, size_t key_len) {
    std::string digits = std::to_string(i);
    std::string key(key_len, '0');
    key[0] = 'k';
    std::memcpy(key.data() + key_len - digits.size(), digits.data(), digits.size());
    return key;
}

}  // namespace

int main(int argc, char** argv) {
    size_t objects = 200000;
    size_t key_len = 32;
    size_t value_size = 8;
    std::string granularity;  // "": the knob's default
    for (int i = 1; i < argc; ++i) {
        if (std::strncmp(argv[i], "--objects=", 10) == 0) {
            objects = std::strtoull(argv[i] + 10, nullptr, 10);
        } else if (std::strncmp(argv[i], "--key_len=", 10) == 0) {
            key_len = std::strtoull(argv[i] + 10, nullptr, 10);
        } else if (std::strncmp(argv[i], "--value_size=", 13) == 0) {
            value_size = std::strtoull(argv[i] + 13, nullptr, 10);
        } else if (std::strncmp(argv[i], "--granularity=", 14) == 0) {
            granularity = argv[i] + 14;
        } else {
            std::fprintf(stderr, "usage: daemon_memory_bench [--objects=N] [--key_len=L] "
                                 "[--value_size=B] [--granularity=B]\n");
            return 2;
        }
    }
    if (objects == 0 || key_len < 21 || key_len > 4096 || value_size == 0) {
        std::fprintf(stderr, "daemon_memory_bench: need objects > 0, 21 <= key_len <= 4096\n");
        return 2;
    }
    std::vector<std::string> master_args{"--default_kv_lease_ttl", "0"};
    if (!granularity.empty()) {
        master_args.push_back("--dram_alloc_granularity");
        master_args.push_back(granularity);
    }
    mooncake::test::Cluster cluster(master_args);
    cluster.AddNode("256MiB", /*with_disk=*/false);
    if (!cluster.WaitForNodes(1)) {
        std::fprintf(stderr, "daemon_memory_bench: the node did not register\n");
        return 1;
    }
    const pid_t master = cluster.master->pid();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // start-up settles
    const uint64_t master_before = RssOf(master);

    const std::string value(value_size, 'v');
    const auto bytes = std::as_bytes(std::span(value.data(), value.size()));
    constexpr size_t kChunk = 1000;
    for (size_t start = 0; start < objects; start += kChunk) {
        std::vector<std::pair<std::string, std::span<const std::byte>>> items;
        for (size_t i = start; i < std::min(objects, start + kChunk); ++i) {
            items.emplace_back(KeyOf(i, key_len), bytes);
        }
        for (const mooncake::Status& st : cluster.client->BatchPut(items)) {
            if (!st.ok()) {
                std::fprintf(stderr, "daemon_memory_bench: put: %s\n", st.ToString().c_str());
                return 1;
            }
        }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const uint64_t master_after = RssOf(master);
    mooncake::Result<std::vector<mooncake::NodeInfo>> nodes = cluster.client->Nodes();
    if (!nodes.ok() || nodes->size() != 1) {
        std::fprintf(stderr, "daemon_memory_bench: Nodes failed\n");
        return 1;
    }
    const uint64_t dram_used = (*nodes)[0].segment_used;
    const double n = static_cast<double>(objects);
    std::printf("objects %zu, key %zu B, value %zu B (mooncaked master + 1 node, BatchPut)\n",
                objects, key_len, value_size);
    std::printf("  master rss %8.1f B/object beyond the key (%.1f MiB growth)\n",
                static_cast<double>(master_after - master_before) / n - static_cast<double>(key_len),
                static_cast<double>(master_after - master_before) / (1 << 20));
    std::printf("  DRAM       %8.1f B/object for %zu-byte values (%.1f MiB segment used)\n",
                static_cast<double>(dram_used) / n, value_size,
                static_cast<double>(dram_used) / (1 << 20));
    return 0;
}
