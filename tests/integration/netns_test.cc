// Master and nodes in separate network namespaces, joined by a bridge in the test's own
// namespace (where the client runs). Needs root (CI runs as root); skipped cleanly otherwise.
#include <unistd.h>

#include <fstream>
#include <set>

#include "gtest/gtest.h"
#include "tests/integration/harness.h"

namespace mooncake::test {
namespace {

TEST(NetnsTest, MasterAndNodesInSeparateNamespaces) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root for ip netns";
    if (!Shell("command -v ip")) GTEST_SKIP() << "iproute2 not installed";
    Topology topo(3);
    if (!topo.ok()) GTEST_SKIP() << "cannot build network namespaces here";

    TempDir dir;
    std::string token_file = dir.Sub("token");
    std::ofstream(token_file) << "s3cret-token\n";
    const std::string master = topo.ip(0) + ":7000";
    Daemon m("master",
             {"--role=master", "--listen=" + master, "--metrics_port=0",
              "--auth_token_file=" + token_file, "--log_level=debug"},
             dir, topo.Exec(0));
    ASSERT_TRUE(m.Start());
    std::vector<std::unique_ptr<Daemon>> nodes;
    for (int i = 1; i <= 2; ++i) {
        nodes.push_back(std::make_unique<Daemon>(
            "node" + std::to_string(i),
            std::vector<std::string>{"--role=node", "--listen=" + topo.ip(i) + ":7100",
                                     "--master=" + master, "--metrics_port=0",
                                     "--auth_token_file=" + token_file, "--dram_size=2MiB",
                                     "--disk_dir=" + dir.Sub("disk" + std::to_string(i)),
                                     "--disk_size=64MiB", "--log_level=debug"},
            dir, topo.Exec(i)));
        ASSERT_TRUE(nodes.back()->Start());
    }

    ClientOptions options;
    options.auth_token = "s3cret-token";
    auto client = ConnectWhenUp(master, std::chrono::seconds(10), options);
    ASSERT_NE(client, nullptr) << "master unreachable across namespaces";
    ASSERT_TRUE(WaitFor([&] {
        auto n = client->Nodes();
        return n.ok() && n->size() == 2;
    }));

    // A wrong token is refused with a clear error.
    ClientOptions wrong;
    wrong.auth_token = "guess";
    auto refused = Client::Connect(master, wrong);
    EXPECT_TRUE(refused.status().Is(StatusCode::kIllegalClient)) << refused.status().ToString();

    // 40 x 128 KiB into 4 MiB of DRAM: spread over both nodes, overflow to their disks.
    const size_t n = 40, size = 128 * 1024;
    for (size_t i = 0; i < n; ++i) {
        Status st = client->Put("ns/" + std::to_string(i), Pattern(i, size));
        ASSERT_TRUE(st.ok()) << i << ": " << st.ToString();
    }
    std::set<NodeId> holders;
    size_t disk_only = 0;
    for (size_t i = 0; i < n; ++i) {
        std::string key = "ns/" + std::to_string(i);
        auto info = client->Stat(key);
        ASSERT_TRUE(info.ok());
        for (const auto& r : info->object.replicas) holders.insert(r.node);
        if (!HasTier(*info, Tier::kMemory)) ++disk_only;
        auto got = client->Get(key);
        ASSERT_TRUE(got.ok()) << key << ": " << got.status().ToString();
        ASSERT_TRUE(*got == Pattern(i, size)) << key;
    }
    EXPECT_EQ(holders.size(), 2u);
    EXPECT_GT(disk_only, 0u);
}

}  // namespace
}  // namespace mooncake::test
