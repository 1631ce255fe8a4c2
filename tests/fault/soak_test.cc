// Concurrency soak (issue #12): a standalone mooncaked with 4 MiB of DRAM over a LOCAL_DISK,
// and several client PROCESSES (tests/fault/soak_client.cc) doing put/get/rm over thousands of
// keys for a bounded time, with offload (DRAM far smaller than the working set) and promotion
// (admission threshold 1, reads skewed to a hot tenth) churning underneath.
//
// Properties:
//   - every Get during the run that returned bytes returned the bytes of the key's last
//     acknowledged Put (each client owns its keys, so "last" is exact): never wrong bytes, never
//     a removed key's bytes;
//   - after the run, every key whose last acknowledged op was a Put reads back byte-identical,
//     every removed key reads NotFound. The disk here holds the whole working set, so the
//     documented rule for a missing acknowledged key (its only copy evicted from a full
//     LOCAL_DISK; or dropped from DRAM with offload off) never applies: missing == 0;
//   - the store settles clean: DRAM used == live allocations, no pins, no tasks, funnels hold.
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "gtest/gtest.h"
#include "tests/fault/fault_util.h"

namespace mooncake::test {
namespace {

constexpr int kClients = 4;
constexpr int kKeysPerClient = 600;
constexpr int kSeconds = 30;

// "#summary a=1 b=2 ..." -> {a:1, b:2}
std::map<std::string, uint64_t> ParseSummary(const std::string& line) {
    std::map<std::string, uint64_t> out;
    std::istringstream in(line.substr(line.find(' ') + 1));
    for (std::string kv; in >> kv;) {
        auto eq = kv.find('=');
        if (eq != std::string::npos) out[kv.substr(0, eq)] = std::stoull(kv.substr(eq + 1));
    }
    return out;
}

TEST(SoakFaultTest, ClientsChurnPutGetRemoveWithOffloadAndPromotion) {
    Standalone s({"--dram_size=4MiB", "--promotion_admission_threshold=1",
                  "--default_kv_lease_ttl=100", "--put_wait_for_offload_ms=3000",
                  "--log_level=info"},
                 "256MiB");
    ASSERT_NE(s.client, nullptr);

    std::vector<std::unique_ptr<Daemon>> clients;
    for (int i = 0; i < kClients; ++i) {
        clients.push_back(std::make_unique<Daemon>(
            "soak-client" + std::to_string(i),
            std::vector<std::string>{s.address, std::to_string(i),
                                     std::to_string(kKeysPerClient), std::to_string(kSeconds),
                                     s.dir.Sub("soak-" + std::to_string(i) + ".txt")},
            s.dir));
        clients.back()->UseBinary(SOAK_CLIENT_PATH);
        ASSERT_TRUE(clients.back()->Start());
    }
    std::vector<int> exit_codes(kClients, -1);
    ASSERT_TRUE(WaitFor(
        [&] {
            bool all = true;
            for (int i = 0; i < kClients; ++i) {
                if (exit_codes[i] < 0) exit_codes[i] = clients[i]->ExitedWith();
                all = all && exit_codes[i] >= 0;
            }
            return all;
        },
        std::chrono::seconds(kSeconds + 90)))
        << "soak clients did not finish";

    std::map<std::string, uint64_t> total;
    std::vector<WrittenKey> keys;
    size_t uncertain = 0;
    for (int i = 0; i < kClients; ++i) {
        EXPECT_EQ(exit_codes[i], 0) << "client " << i << ":\n" << clients[i]->Log();
        std::ifstream in(s.dir.Sub("soak-" + std::to_string(i) + ".txt"));
        ASSERT_TRUE(in.good()) << "client " << i << " wrote no report";
        for (std::string line; std::getline(in, line);) {
            if (line.rfind("#summary", 0) == 0) {
                for (const auto& [k, v] : ParseSummary(line)) total[k] += v;
                continue;
            }
            std::istringstream fields(line);
            WrittenKey k;
            int present = 0, unsure = 0;
            fields >> k.key >> k.seed >> k.size >> present >> unsure;
            if (unsure) {
                ++uncertain;  // a failed put whose fate no read settled: either answer is right
                continue;
            }
            k.survives = present == 1;
            keys.push_back(k);
        }
    }
    ASSERT_EQ(keys.size() + uncertain, static_cast<size_t>(kClients * kKeysPerClient));
    EXPECT_EQ(total["wrong"], 0u) << "a Get returned bytes other than the last acknowledged Put's";
    EXPECT_EQ(total["resurrected"], 0u);
    EXPECT_EQ(total["missing"], 0u) << "acknowledged Puts went missing with room on the disk";
    EXPECT_GT(total["puts_ok"], static_cast<uint64_t>(kKeysPerClient));
    EXPECT_GT(total["hits"], 0u);

    auto metrics = s.client->MetricsText();
    ASSERT_TRUE(metrics.ok());
    const double offloads = MetricValue(*metrics, "mooncake_offload_completed_total");
    const double promotions = MetricValue(*metrics, "mooncake_promotion_completed_total");
    EXPECT_GT(offloads, 0) << "no offload churn";
    EXPECT_GT(promotions, 0) << "no promotion churn";

    const size_t reads = SettleAndCheck(*s.client, keys, "soak", std::chrono::seconds(60));
    size_t present = 0;
    for (const WrittenKey& k : keys) present += k.survives;
    std::printf("[ figures  ] soak: %d clients x %d keys, %d s: %llu ops (%llu puts acked, %llu "
                "NoSpace, %llu failed; %llu gets, %llu hits; %llu rms ok, %llu leased), "
                "%.0f offloads, %.0f promotions; final check %zu reads (%zu present, %zu "
                "uncertain); wrong %llu, missing %llu\n",
                kClients, kKeysPerClient, kSeconds,
                static_cast<unsigned long long>(total["ops"]),
                static_cast<unsigned long long>(total["puts_ok"]),
                static_cast<unsigned long long>(total["puts_nospace"]),
                static_cast<unsigned long long>(total["puts_failed"]),
                static_cast<unsigned long long>(total["gets"]),
                static_cast<unsigned long long>(total["hits"]),
                static_cast<unsigned long long>(total["rms_ok"]),
                static_cast<unsigned long long>(total["rms_leased"]), offloads, promotions, reads,
                present, uncertain, static_cast<unsigned long long>(total["wrong"]),
                static_cast<unsigned long long>(total["missing"]));
    Figures f;
    f.keys = keys.size();
    f.operations = total["ops"] + reads;
    f.Print("soak");
}

}  // namespace
}  // namespace mooncake::test
