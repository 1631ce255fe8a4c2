// The shared-pool channel (net/shm_channel.h, node/shm_server.h) in process: a real ShmServer
// over a real Segment, asked over its Unix socket as an engine's SharedPoolTransport does.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/base/knobs.h"
#include "core/base/metrics.h"
#include "gtest/gtest.h"
#include "net/shm_channel.h"
#include "node/segment.h"
#include "node/shm_server.h"
#include "tests/free_port.h"

namespace mooncake {
namespace {

std::vector<std::byte> Message(const shm::RequestHeader& h, const std::string& key = "",
                               const std::vector<shm::Piece>& pieces = {}) {
    std::vector<std::byte> m(sizeof(h) + key.size() + pieces.size() * sizeof(shm::Piece));
    std::memcpy(m.data(), &h, sizeof(h));
    std::memcpy(m.data() + sizeof(h), key.data(), key.size());
    if (!pieces.empty()) {
        std::memcpy(m.data() + sizeof(h) + key.size(), pieces.data(),
                    pieces.size() * sizeof(shm::Piece));
    }
    return m;
}

TEST(ShmChannelTest, ParseRequestChecksEveryField) {
    shm::RequestHeader h;
    h.op = static_cast<uint8_t>(shm::Op::kWrite);
    h.key_length = 3;
    h.piece_count = 1;
    auto good = Message(h, "key", {{1, 0, 8}});
    auto parsed = shm::ParseRequest(good);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_EQ(parsed->key, "key");
    ASSERT_EQ(parsed->pieces.size(), 1u);
    EXPECT_EQ(parsed->pieces[0].length, 8u);

    EXPECT_FALSE(shm::ParseRequest(std::span(good).first(10)).ok());  // short
    auto longer = good;
    longer.push_back(std::byte{0});
    EXPECT_FALSE(shm::ParseRequest(longer).ok());  // lengths disagree with the message
    using Spoil = void (*)(shm::RequestHeader&);
    for (Spoil bad : std::initializer_list<Spoil>{[](shm::RequestHeader& b) { b.magic = 1; },
                     [](shm::RequestHeader& b) { b.version = 2; },
                     [](shm::RequestHeader& b) { b.op = 9; },
                     [](shm::RequestHeader& b) { b.tier = 7; },
                     [](shm::RequestHeader& b) { b.piece_count = shm::kMaxPieces + 1; }}) {
        shm::RequestHeader b = h;
        bad(b);
        EXPECT_FALSE(shm::ParseRequest(Message(b, "key", {{1, 0, 8}})).ok());
    }
}

class ShmServerTest : public ::testing::Test {
protected:
    void SetUp() override {
        auto segment = Segment::Create(4 << 20, /*prefault=*/false);
        ASSERT_TRUE(segment.ok());
        segment_ = std::move(*segment);
        options_.data_port = test::FreePort();
        options_.auth_token = "secret";
        server_ = std::make_unique<ShmServer>(options_, *segment_, nullptr, config_, metrics_);
        ASSERT_TRUE(server_->Start().ok());
        pool_fd_ = memfd_create("test-pool", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        ASSERT_EQ(ftruncate(pool_fd_, kPool), 0);
        ASSERT_EQ(fcntl(pool_fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
        pool_ = static_cast<std::byte*>(
            mmap(nullptr, kPool, PROT_READ | PROT_WRITE, MAP_SHARED, pool_fd_, 0));
        ASSERT_NE(pool_, MAP_FAILED);
    }
    void TearDown() override {
        server_->Stop();
        munmap(pool_, kPool);
        close(pool_fd_);
    }
    net::Fd Connect(const std::string& token) {
        auto fd = shm::Connect(options_.data_port, std::chrono::seconds(5));
        EXPECT_TRUE(fd.ok()) << fd.status().ToString();
        shm::RequestHeader h;
        h.op = static_cast<uint8_t>(shm::Op::kHello);
        h.key_length = static_cast<uint32_t>(token.size());
        auto m = Message(h, token);
        iovec part{m.data(), m.size()};
        EXPECT_TRUE(shm::SendMessage(fd->get(), std::span(&part, 1)).ok());
        last_ = shm::RecvAnswer(fd->get());
        return std::move(*fd);
    }
    Status Ask(int fd, const shm::RequestHeader& h, const std::string& key = "",
               const std::vector<shm::Piece>& pieces = {}, int pass = -1) {
        auto m = Message(h, key, pieces);
        iovec part{m.data(), m.size()};
        MC_RETURN_IF_ERROR(shm::SendMessage(fd, std::span(&part, 1), pass));
        return shm::RecvAnswer(fd);
    }
    Status AddPool(int fd, uint64_t id, uint64_t length) {
        shm::RequestHeader h;
        h.op = static_cast<uint8_t>(shm::Op::kAddPool);
        h.pool = id;
        h.length = length;
        return Ask(fd, h, "", {}, pool_fd_);
    }
    Status Transfer(int fd, shm::Op op, const std::string& key, uint64_t offset,
                    const std::vector<shm::Piece>& pieces) {
        shm::RequestHeader h;
        h.op = static_cast<uint8_t>(op);
        h.key_length = static_cast<uint32_t>(key.size());
        h.piece_count = static_cast<uint32_t>(pieces.size());
        h.generation = 7;
        h.offset = offset;
        for (const auto& p : pieces) h.length += p.length;
        return Ask(fd, h, key, pieces);
    }
    double Gauge(const std::string& name) {
        return metrics_.GetGauge(name, "").Value();
    }

    static constexpr uint64_t kPool = 256 << 10;
    Config config_;
    MetricsRegistry metrics_;
    ShmServerOptions options_;
    std::unique_ptr<Segment> segment_;
    std::unique_ptr<ShmServer> server_;
    int pool_fd_ = -1;
    std::byte* pool_ = nullptr;
    Status last_;
};

TEST_F(ShmServerTest, CopiesBetweenTheSegmentAndAPoolItWasHanded) {
    net::Fd conn = Connect("secret");
    ASSERT_TRUE(last_.ok()) << last_.ToString();
    ASSERT_TRUE(AddPool(conn.get(), 1, kPool).ok());
    EXPECT_EQ(Gauge("shm_pools_mapped"), 1);
    for (uint64_t i = 0; i < kPool; ++i) pool_[i] = static_cast<std::byte>(i * 7 + i / 251);
    // A value from two scattered pieces into the segment, then back elsewhere in the pool.
    ASSERT_TRUE(Transfer(conn.get(), shm::Op::kWrite, "k", 4096,
                         {{1, 100, 1000}, {1, 50000, 3000}}).ok());
    std::vector<std::byte> stored(4000);
    ASSERT_TRUE(segment_->Read("k", 7, 4096, stored).ok());
    EXPECT_EQ(std::memcmp(stored.data(), pool_ + 100, 1000), 0);
    EXPECT_EQ(std::memcmp(stored.data() + 1000, pool_ + 50000, 3000), 0);
    ASSERT_TRUE(Transfer(conn.get(), shm::Op::kRead, "k", 4096, {{1, 200000, 4000}}).ok());
    EXPECT_EQ(std::memcmp(pool_ + 200000, stored.data(), 4000), 0);
    // The wrong generation or key reads nothing.
    EXPECT_FALSE(Transfer(conn.get(), shm::Op::kRead, "other", 4096, {{1, 0, 4000}}).ok());
    conn.Reset();  // the engine went away: the pool is unmapped
    for (int i = 0; i < 100 && Gauge("shm_pools_mapped") != 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(Gauge("shm_pools_mapped"), 0);
    EXPECT_EQ(Gauge("shm_pool_bytes_mapped"), 0);
}

TEST_F(ShmServerTest, RefusesWhatIsNotItsToTouch) {
    net::Fd stranger = Connect("wrong");
    EXPECT_TRUE(last_.Is(StatusCode::kIllegalClient)) << last_.ToString();
    net::Fd conn = Connect("secret");
    ASSERT_TRUE(last_.ok());
    EXPECT_TRUE(AddPool(conn.get(), 1, kPool + 1).Is(StatusCode::kInvalidArgument));  // > file
    ASSERT_TRUE(AddPool(conn.get(), 1, kPool).ok());
    std::memset(pool_, 0x5A, kPool);
    // Past the pool's end, a pool never handed, pieces that do not add up: before a byte.
    EXPECT_TRUE(Transfer(conn.get(), shm::Op::kWrite, "k", 0, {{1, kPool - 10, 20}})
                    .Is(StatusCode::kInvalidArgument));
    EXPECT_TRUE(Transfer(conn.get(), shm::Op::kWrite, "k", 0, {{1, UINT64_MAX - 5, 20}})
                    .Is(StatusCode::kInvalidArgument));
    EXPECT_TRUE(Transfer(conn.get(), shm::Op::kRead, "k", 0, {{2, 0, 20}})
                    .Is(StatusCode::kInvalidArgument));
    std::vector<std::byte> landed(20);
    EXPECT_FALSE(segment_->Read("k", 7, 0, landed).ok());  // nothing was written
    // Another connection of the same daemon cannot name this connection's pool.
    net::Fd other = Connect("secret");
    ASSERT_TRUE(last_.ok());
    EXPECT_TRUE(Transfer(other.get(), shm::Op::kRead, "k", 0, {{1, 0, 20}})
                    .Is(StatusCode::kInvalidArgument));
    // An unsealed memfd could be cut short under the mapping: refused.
    int loose = memfd_create("loose", MFD_CLOEXEC);
    ASSERT_EQ(ftruncate(loose, kPool), 0);
    shm::RequestHeader h;
    h.op = static_cast<uint8_t>(shm::Op::kAddPool);
    h.pool = 3;
    h.length = kPool;
    EXPECT_TRUE(Ask(conn.get(), h, "", {}, loose).Is(StatusCode::kInvalidArgument));
    close(loose);
}

}  // namespace
}  // namespace mooncake
