// The master's node directory (node id -> name and data address, for the replica locations in
// RPC replies). A put may be allocated on a node the moment the store registers it, before
// MasterService::RegisterNode has told the directory: the directory must still answer with
// the node's data address, never an empty one (which the client reports as "the node holding
// the allocated range is gone").
#include "daemon/node_directory.h"

#include "core/base/clock.h"
#include "core/base/knobs.h"
#include "core/base/metrics.h"
#include "core/master/master_store.h"
#include "gtest/gtest.h"

namespace mooncake {
namespace {

class NodeDirectoryTest : public ::testing::Test {
protected:
    Config config_;
    ManualClock clock_;
    MetricsRegistry metrics_;
    MasterStore store_{config_, clock_, metrics_, 1};
    NodeDirectory directory_{store_};
};

TEST_F(NodeDirectoryTest, NodeRegisteredInTheStoreButNotYetRememberedIsLocated) {
    directory_.Refresh();  // a refresh a moment before the registration
    Result<NodeId> id = store_.RegisterNode({"n1:1", "127.0.0.1:4000", 1 << 20, 0});
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    rpc::NodeLocation where = directory_.Locate(*id);
    EXPECT_EQ(where.name, "n1:1");
    EXPECT_EQ(where.data_address, "127.0.0.1:4000");
}

TEST_F(NodeDirectoryTest, DepartedNodeIsForgottenAtTheNextRefresh) {
    Result<NodeId> id = store_.RegisterNode({"n1:1", "127.0.0.1:4000", 1 << 20, 0});
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    EXPECT_EQ(directory_.Locate(*id).data_address, "127.0.0.1:4000");
    ASSERT_TRUE(store_.UnregisterNode(*id).ok());
    directory_.Refresh();
    EXPECT_EQ(directory_.Locate(*id).data_address, "");
    EXPECT_EQ(directory_.Locate(*id + 100).data_address, "");  // never registered
}

}  // namespace
}  // namespace mooncake
