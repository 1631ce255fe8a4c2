// What a key's file says and which extended attributes it carries (fuse/render.h), and the
// inode table's lookup counting (fuse/inode_table.h).
#include "fuse/render.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "fuse/inode_table.h"

namespace mooncake::tierfs {
namespace {

ObjectInfo TwoTierObject() {
    ObjectInfo info;
    info.object.key = "a/b%c";
    info.object.size = 4096;
    info.object.generation = 77;
    info.object.sketch_estimate = 3;
    // The master's order need not be MEMORY first: display order is.
    info.object.replicas.push_back({Tier::kLocalDisk, ReplicaState::kComplete, 1, 0, 4096, 0});
    info.object.replicas.push_back({Tier::kMemory, ReplicaState::kComplete, 2, 8192, 4096, 0});
    info.locations.push_back({"127.0.0.1:7001", "127.0.0.1:7002"});
    info.locations.push_back({"", ""});
    return info;
}

TEST(TierFsRender, TiersMemoryFirst) {
    EXPECT_EQ(TiersText(TwoTierObject().object), "MEMORY,LOCAL_DISK");
    ObjectInfo info = TwoTierObject();
    info.object.replicas[1].state = ReplicaState::kProcessing;
    EXPECT_EQ(TiersText(info.object), "LOCAL_DISK");
}

TEST(TierFsRender, Description) {
    EXPECT_EQ(Describe(TwoTierObject()),
              "key: a%2Fb%25c\n"
              "size: 4096\n"
              "tiers: MEMORY,LOCAL_DISK\n"
              "generation: 77\n"
              "sketch_estimate: 3\n"
              "promotion_in_flight: false\n"
              "offload_in_flight: false\n"
              "last_promotion: none\n"
              "replicas:\n"
              "  MEMORY COMPLETE node=node#2\n"
              "  LOCAL_DISK COMPLETE node=127.0.0.1:7001\n");
}

TEST(TierFsRender, DescriptionOfALongKeyIsNotHashed) {
    ObjectInfo info = TwoTierObject();
    info.object.key = std::string(300, 'k');
    EXPECT_NE(Describe(info).find("key: " + std::string(300, 'k') + "\n"), std::string::npos);
}

TEST(TierFsRender, Xattrs) {
    ObjectInfo info = TwoTierObject();
    info.object.key = std::string("raw\x01key", 7);
    auto attrs = KeyXattrs(info);
    ASSERT_EQ(attrs.size(), KeyXattrNames().size());
    for (size_t i = 0; i < attrs.size(); ++i) EXPECT_EQ(attrs[i].first, KeyXattrNames()[i]);
    EXPECT_EQ(attrs[0].first, "user.mooncake.key");
    EXPECT_EQ(attrs[0].second, std::string("raw\x01key", 7));
    EXPECT_EQ(attrs[1].first, "user.mooncake.tiers");
    EXPECT_EQ(attrs[1].second, "MEMORY,LOCAL_DISK");
    EXPECT_EQ(attrs[2].first, "user.mooncake.size");
    EXPECT_EQ(attrs[2].second, "4096");
    EXPECT_EQ(attrs[3].first, "user.mooncake.replicas");
    EXPECT_EQ(attrs[3].second, "MEMORY:COMPLETE@node#2,LOCAL_DISK:COMPLETE@127.0.0.1:7001");
    EXPECT_EQ(attrs[4].second, "77");
    EXPECT_EQ(attrs[5].second, "3");
    EXPECT_EQ(attrs[6].second, "false");
    EXPECT_EQ(attrs[7].second, "false");
    EXPECT_EQ(attrs[8].first, "user.mooncake.promotion");
    EXPECT_EQ(attrs[8].second, "none");
}

// "Why is this key not in MEMORY?": the last decision, read count against the threshold, and
// (in the xattr only, so the file's size holds still) how long ago.
TEST(TierFsRender, LastPromotionDecision) {
    ObjectInfo info = TwoTierObject();
    info.object.last_promotion =
        PromotionDecision{PromotionOutcome::kGateRefused, 3, 2, -std::chrono::milliseconds(4500)};
    EXPECT_NE(Describe(info).find("last_promotion: gate_refused reads=3 threshold=2\n"),
              std::string::npos)
        << Describe(info);
    EXPECT_EQ(KeyXattrs(info)[8].second, "gate_refused reads=3 threshold=2 age_s=4");
}

TEST(TierFsRender, Errnos) {
    EXPECT_EQ(ErrnoOf(Status::NotFound("x")), ENOENT);
    EXPECT_EQ(ErrnoOf(Status::InvalidArgument("x")), EINVAL);
    EXPECT_EQ(ErrnoOf(Status::Unavailable("x")), ENOTCONN);
    EXPECT_EQ(ErrnoOf(Status::Timeout("x")), EIO);
    EXPECT_EQ(ErrnoOf(Status::IoError("x")), EIO);
    EXPECT_EQ(ErrnoOf(Status::Internal("x")), EIO);
}

TEST(TierFsInodeTable, FixedInodes) {
    InodeTable table;
    EXPECT_EQ(table.Get(kRootIno)->kind, NodeKind::kRoot);
    EXPECT_EQ(table.Get(kMemoryDirIno)->kind, NodeKind::kMemoryDir);
    EXPECT_EQ(table.Get(kStatsIno)->kind, NodeKind::kStats);
    table.Forget(kRootIno, 100);  // never dropped
    EXPECT_EQ(table.Get(kRootIno)->kind, NodeKind::kRoot);
    EXPECT_FALSE(table.Get(kFirstDynamicIno).has_value());
}

TEST(TierFsInodeTable, LookupCountsAndForget) {
    InodeTable table;
    uint64_t a = table.Ref(NodeKind::kKeyFile, NodeKind::kKeysDir, "k");
    EXPECT_GE(a, kFirstDynamicIno);
    EXPECT_EQ(table.Ref(NodeKind::kKeyFile, NodeKind::kKeysDir, "k"), a);
    EXPECT_EQ(table.lookups(a), 2u);
    // The same key in another directory is another file.
    uint64_t m = table.Ref(NodeKind::kKeyFile, NodeKind::kMemoryDir, "k");
    EXPECT_NE(m, a);
    EXPECT_EQ(table.Peek(NodeKind::kKeyFile, NodeKind::kMemoryDir, "k"), m);
    EXPECT_EQ(table.size(), 2u);

    table.Forget(a, 1);
    ASSERT_TRUE(table.Get(a).has_value());
    EXPECT_EQ(table.Get(a)->name, "k");
    table.Forget(a, 1);
    EXPECT_FALSE(table.Get(a).has_value());
    EXPECT_EQ(table.Peek(NodeKind::kKeyFile, NodeKind::kKeysDir, "k"), 0u);
    // Numbers are not reused.
    uint64_t again = table.Ref(NodeKind::kKeyFile, NodeKind::kKeysDir, "k");
    EXPECT_NE(again, a);
    // Forgetting more than was looked up drops it (and never underflows).
    table.Forget(again, 5);
    table.Forget(m, 1);
    EXPECT_EQ(table.size(), 0u);
    table.Forget(m, 1);  // unknown: no-op
}

}  // namespace
}  // namespace mooncake::tierfs
