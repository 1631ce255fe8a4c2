// The libaio + O_DIRECT device and DiskStore::Open on a real directory (under /tmp).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/disk/device.h"
#include "core/disk/disk_store.h"
#include "core/disk/format.h"
#include "tests/disk/disk_test_util.h"

namespace mooncake {
namespace {

namespace fs = std::filesystem;
using disk_test::Pattern;
constexpr uint64_t kMiB = 1 << 20;

class AioStoreTest : public ::testing::Test {
  protected:
    void SetUp() override {
        char tmpl[] = "/tmp/mooncake-disk-test-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        root_ = tmpl;
        dir_ = root_ + "/store";
    }
    void TearDown() override { fs::remove_all(root_); }

    DiskStoreOptions Options(uint64_t capacity = 32 * kMiB) const {
        DiskStoreOptions o;
        o.dir = dir_;
        o.capacity = capacity;
        o.queue_depth = 8;
        return o;
    }

    std::string root_;
    std::string dir_;
};

TEST_F(AioStoreTest, DeviceBatchesLargerThanTheQueue) {
    auto dev = OpenAioDevice(root_ + "/dev.img", 4 * kMiB, 4);
    ASSERT_TRUE(dev.ok()) << dev.status().ToString();
    AlignedBuffer buf(64 * kDeviceBlockSize);
    auto pattern = Pattern(buf.size(), 9);
    std::memcpy(buf.data(), pattern.data(), buf.size());
    std::vector<IoRequest> reqs;
    for (uint64_t i = 0; i < 64; ++i) {
        reqs.push_back(
            {(63 - i) * kDeviceBlockSize, buf.data() + i * kDeviceBlockSize, kDeviceBlockSize});
    }
    ASSERT_TRUE((*dev)->WriteV(reqs).ok());
    ASSERT_TRUE((*dev)->Flush().ok());
    AlignedBuffer back(64 * kDeviceBlockSize);
    for (auto& r : reqs) r.buffer = back.data() + (r.buffer - buf.data());
    ASSERT_TRUE((*dev)->ReadV(reqs).ok());
    EXPECT_EQ(std::memcmp(back.data(), buf.data(), buf.size()), 0);
    // Misaligned and out-of-range requests are refused before any I/O.
    IoRequest bad{1, back.data(), kDeviceBlockSize};
    EXPECT_EQ((*dev)->ReadV({&bad, 1}).code(), StatusCode::kInvalidArgument);
    IoRequest past{4 * kMiB, back.data(), kDeviceBlockSize};
    EXPECT_EQ((*dev)->ReadV({&past, 1}).code(), StatusCode::kInvalidArgument);
}

TEST_F(AioStoreTest, RoundTripAndReopen) {
    const std::vector<size_t> sizes = {1, 4096, 64 * 1024 + 7, 10 * kMiB};
    {
        auto store = DiskStore::Open(Options());
        ASSERT_TRUE(store.ok()) << store.status().ToString();
        for (size_t i = 0; i < sizes.size(); ++i) {
            auto data = Pattern(sizes[i], i);
            ASSERT_TRUE(
                (*store)->Write("key" + std::to_string(i), 1, data, IoPriority::kForeground).ok());
        }
        for (size_t i = 0; i < sizes.size(); ++i) {
            // Aligned destination: read straight into it.
            AlignedBuffer out(sizes[i]);
            ASSERT_TRUE(
                (*store)
                    ->Read("key" + std::to_string(i), 1, out.span(), IoPriority::kForeground)
                    .ok());
            auto expected = Pattern(sizes[i], i);
            EXPECT_EQ(std::memcmp(out.data(), expected.data(), sizes[i]), 0) << sizes[i];
        }
    }
    EXPECT_TRUE(fs::exists(dir_ + "/mooncake-disk.img"));
    EXPECT_EQ(fs::file_size(dir_ + "/mooncake-disk.img"), 32 * kMiB);
    auto store = DiskStore::Open(Options());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    EXPECT_EQ((*store)->object_count(), sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i) {
        std::vector<std::byte> out(sizes[i]);  // unaligned-size, heap buffer
        ASSERT_TRUE(
            (*store)->Read("key" + std::to_string(i), 1, out, IoPriority::kBackground).ok());
        EXPECT_EQ(out, Pattern(sizes[i], i));
    }
}

TEST_F(AioStoreTest, SecondOpenIsRefusedWhileLocked) {
    auto first = DiskStore::Open(Options());
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    auto second = DiskStore::Open(Options());
    EXPECT_EQ(second.status().code(), StatusCode::kBusy);
    EXPECT_NE(second.status().message().find(std::to_string(getpid())), std::string::npos)
        << second.status().ToString();
    first->reset();
    EXPECT_TRUE(DiskStore::Open(Options()).ok());
}

TEST_F(AioStoreTest, SurvivesSigkillAfterAcknowledgedWrites) {
    int pipe_fds[2];
    ASSERT_EQ(pipe(pipe_fds), 0);
    constexpr int kAcked = 20;
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        // The child writes forever and reports each acknowledged write; the parent kills it.
        close(pipe_fds[0]);
        auto store = DiskStore::Open(Options());
        if (!store.ok()) _exit(2);
        for (int i = 0;; ++i) {
            auto data = Pattern(100'000 + static_cast<size_t>(i) * 1000, static_cast<uint64_t>(i));
            if (!(*store)
                     ->Write("obj" + std::to_string(i), 1, data, IoPriority::kForeground)
                     .ok()) {
                _exit(3);
            }
            char c = 1;
            if (write(pipe_fds[1], &c, 1) != 1) _exit(4);
        }
    }
    close(pipe_fds[1]);
    for (int i = 0; i < kAcked; ++i) {
        char c;
        ASSERT_EQ(read(pipe_fds[0], &c, 1), 1) << "child stopped early";
    }
    kill(child, SIGKILL);
    int wstatus = 0;
    waitpid(child, &wstatus, 0);
    close(pipe_fds[0]);
    ASSERT_TRUE(WIFSIGNALED(wstatus));

    auto store = DiskStore::Open(Options());  // the dead child's lock is gone
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_GE((*store)->object_count(), static_cast<size_t>(kAcked));
    // Every acknowledged write is there and intact; whatever else survived is intact too.
    for (int i = 0; i < kAcked; ++i) {
        size_t size = 100'000 + static_cast<size_t>(i) * 1000;
        std::vector<std::byte> out(size);
        ASSERT_TRUE((*store)->Read("obj" + std::to_string(i), 1, out, IoPriority::kForeground).ok())
            << i;
        EXPECT_EQ(out, Pattern(size, static_cast<uint64_t>(i)));
    }
    for (const auto& info : (*store)->List()) {
        std::vector<std::byte> out(info.size);
        EXPECT_TRUE((*store)->Read(info.key, 1, out, IoPriority::kForeground).ok()) << info.key;
    }
}

TEST_F(AioStoreTest, BadInputIsRefusedClearly) {
    // Parent directory missing.
    auto o = Options();
    o.dir = root_ + "/no/such/dir";
    auto st = DiskStore::Open(o);
    EXPECT_EQ(st.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.status().message().find("does not exist"), std::string::npos);
    // Not MiB aligned, too small, more than the filesystem has.
    EXPECT_EQ(DiskStore::Open(Options(32 * kMiB + 4096)).status().code(),
              StatusCode::kInvalidArgument);
    EXPECT_EQ(DiskStore::Open(Options(kMiB)).status().code(), StatusCode::kInvalidArgument);
    auto huge = DiskStore::Open(Options(uint64_t{1} << 50));
    EXPECT_EQ(huge.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(huge.status().message().find("free space"), std::string::npos);
    // A directory with someone else's files.
    fs::create_directories(root_ + "/foreign");
    std::ofstream(root_ + "/foreign/notes.txt") << "hello";
    o.dir = root_ + "/foreign";
    auto foreign = DiskStore::Open(o);
    EXPECT_EQ(foreign.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(foreign.status().message().find("notes.txt"), std::string::npos);
    // A file where the directory should be.
    o.dir = root_ + "/foreign/notes.txt";
    EXPECT_EQ(DiskStore::Open(o).status().code(), StatusCode::kInvalidArgument);
    // Unwritable (meaningless for root, who may write anywhere).
    if (geteuid() != 0) {
        fs::create_directories(root_ + "/ro");
        fs::permissions(root_ + "/ro", fs::perms::owner_read | fs::perms::owner_exec);
        o.dir = root_ + "/ro";
        EXPECT_EQ(DiskStore::Open(o).status().code(), StatusCode::kInvalidArgument);
    }
}

TEST_F(AioStoreTest, NewerFormatAndResizeAreRefused) {
    ASSERT_TRUE(DiskStore::Open(Options()).ok());
    EXPECT_EQ(DiskStore::Open(Options(64 * kMiB)).status().code(), StatusCode::kInvalidArgument);
    // Stamp a newer format version into both superblock copies.
    int fd = open((dir_ + "/mooncake-disk.img").c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    uint32_t newer = disk_format::kFormatVersion + 1;
    for (off_t copy = 0; copy < 2; ++copy) {
        ASSERT_EQ(pwrite(fd, &newer, sizeof newer, copy * 4096 + 8), 4);
    }
    close(fd);
    auto st = DiskStore::Open(Options());
    EXPECT_EQ(st.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.status().message().find("newer"), std::string::npos) << st.status().ToString();
}

}  // namespace
}  // namespace mooncake
