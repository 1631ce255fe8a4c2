// daemon_memory_bench: a real master's RSS per object, from outside.
//
//   build/bin/daemon_memory_bench [--objects=200000] [--key_len=32] [--value_size=8]
//
// Starts `mooncaked --role master` and one `--role node` (256 MiB DRAM, no disk) through the
// integration harness, BatchPuts N small values through the client library (1000 a call),
// and reads the master's resident set (/proc/<pid>/statm) before and after: the growth per
// object minus the key length is what the master keeps for each (its table, replica records,
// eviction links, and whatever its allocator does not give back). The node's growth is shown
// too: it holds the values themselves, in dram_alloc_granularity granules.
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
    for (int i = 1; i < argc; ++i) {
        if (std::strncmp(argv[i], "--objects=", 10) == 0) {
            objects = std::strtoull(argv[i] + 10, nullptr, 10);
        } else if (std::strncmp(argv[i], "--key_len=", 10) == 0) {
            key_len = std::strtoull(argv[i] + 10, nullptr, 10);
        } else if (std::strncmp(argv[i], "--value_size=", 13) == 0) {
            value_size = std::strtoull(argv[i] + 13, nullptr, 10);
        } else {
            std::fprintf(stderr, "usage: daemon_memory_bench [--objects=N] [--key_len=L] "
                                 "[--value_size=B]\n");
            return 2;
        }
    }
    if (objects == 0 || key_len < 21 || key_len > 4096 || value_size == 0) {
        std::fprintf(stderr, "daemon_memory_bench: need objects > 0, 21 <= key_len <= 4096\n");
        return 2;
    }
    mooncake::test::Cluster cluster({"--default_kv_lease_ttl", "0"});
    auto& node = cluster.AddNode("256MiB", /*with_disk=*/false);
    if (!cluster.WaitForNodes(1)) {
        std::fprintf(stderr, "daemon_memory_bench: the node did not register\n");
        return 1;
    }
    const pid_t master = cluster.master->pid();
    const pid_t node_pid = node.daemon->pid();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // start-up settles
    const uint64_t master_before = RssOf(master);
    const uint64_t node_before = RssOf(node_pid);

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
    const uint64_t node_after = RssOf(node_pid);
    const double n = static_cast<double>(objects);
    std::printf("objects %zu, key %zu B, value %zu B (mooncaked master + 1 node, BatchPut)\n",
                objects, key_len, value_size);
    std::printf("  master rss %8.1f B/object beyond the key (%.1f MiB growth)\n",
                static_cast<double>(master_after - master_before) / n - static_cast<double>(key_len),
                static_cast<double>(master_after - master_before) / (1 << 20));
    std::printf("  node   rss %8.1f B/object (values in DRAM granules; %.1f MiB growth)\n",
                static_cast<double>(node_after - node_before) / n,
                static_cast<double>(node_after - node_before) / (1 << 20));
    return 0;
}
