// The table that owns what open/opendir hand the kernel (fuse/open_handles.h): a release frees
// its handle once, and the handles still open when a session ends are freed with the table.
#include "fuse/open_handles.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace mooncake::tierfs {
namespace {

struct Probe {
    explicit Probe(int* freed) : freed(freed) {}
    ~Probe() { ++*freed; }
    int* freed;
    std::string content = "x";
};

TEST(TierFsOpenHandles, ReleaseFreesTheHandleOnce) {
    int freed = 0;
    OpenHandles handles;
    uint64_t fh = handles.Adopt(std::make_unique<Probe>(&freed));
    EXPECT_EQ(OpenHandles::Get<Probe>(fh)->content, "x");
    EXPECT_EQ(handles.size(), 1u);
    handles.Release(fh);
    EXPECT_EQ(freed, 1);
    EXPECT_EQ(handles.size(), 0u);
    handles.Release(fh);  // a second release of the same fh is not a double free
    EXPECT_EQ(freed, 1);
}

// The kernel's releases are asynchronous: a session stopped by SIGTERM right after a close()
// may never see them. The handles are freed with the table instead of leaking.
TEST(TierFsOpenHandles, HandlesStillOpenAreFreedWithTheTable) {
    int freed = 0;
    {
        OpenHandles handles;
        handles.Adopt(std::make_unique<Probe>(&freed));
        uint64_t released = handles.Adopt(std::make_unique<Probe>(&freed));
        handles.Adopt(std::make_unique<Probe>(&freed));
        handles.Release(released);
        EXPECT_EQ(freed, 1);
    }
    EXPECT_EQ(freed, 3);
}

}  // namespace
}  // namespace mooncake::tierfs
