// Streamed values (net/byte_stream.h, net/stream_io.h, Client::PutFrom/GetTo): a value that
// spans many chunks arrives byte for byte through every source and sink kind (sendfile from a
// file, splice from a pipe, copy from memory; splice into a file, /dev/null or a pipe, copy
// into memory); a peer that dies mid-stream is a clear error; a source that fails mid-put
// leaves nothing readable and the put revoked.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "net/byte_stream.h"
#include "net/data_protocol.h"
#include "net/data_transport.h"
#include "net/net.h"
#include "net/stream_io.h"
#include "tests/integration/harness.h"

namespace mooncake {
namespace {

using test::Pattern;
using test::TempDir;

// Many chunks and a ragged tail.
constexpr size_t kValueBytes = 5 * kChunkBytes + 12345;

std::span<const std::byte> Bytes(const std::string& s) {
    return std::as_bytes(std::span(s.data(), s.size()));
}

std::string ReadFile(const std::string& path) {
    std::string out;
    int fd = ::open(path.c_str(), O_RDONLY);
    char buf[65536];
    for (ssize_t n; fd >= 0 && (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, n);
    if (fd >= 0) ::close(fd);
    return out;
}

void WriteFile(const std::string& path, const std::string& data) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    for (size_t at = 0; at < data.size();) {
        ssize_t n = ::write(fd, data.data() + at, data.size() - at);
        ASSERT_GT(n, 0);
        at += static_cast<size_t>(n);
    }
    ::close(fd);
}

struct SocketPair {
    SocketPair() {
        int fds[2];
        EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
        a = net::Fd(fds[0]);
        b = net::Fd(fds[1]);
        (void)net::SetTimeouts(a.get(), std::chrono::seconds(10));
        (void)net::SetTimeouts(b.get(), std::chrono::seconds(10));
    }
    net::Fd a, b;
};

// Sends `value` from `source` on one thread, receives into `sink` on this one.
Status Transfer(ByteSource& source, ByteSink& sink, uint64_t length) {
    SocketPair p;
    Status sent;
    std::thread sender([&] { sent = net::SendStream(p.a.get(), source, length); });
    Status got = net::RecvStream(p.b.get(), sink, length);
    sender.join();
    return sent.ok() ? got : sent;
}

TEST(StreamIoTest, EverySourceAndSinkKindCarriesExactBytes) {
    TempDir dir;
    const std::string value = Pattern(1, kValueBytes);
    WriteFile(dir.Sub("in"), value);

    // File (sendfile) -> file (socket -> pipe -> file).
    {
        int in = ::open(dir.Sub("in").c_str(), O_RDONLY);
        int out = ::open(dir.Sub("out1").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        FdSource source(in);
        FdSink sink(out);
        ASSERT_TRUE(Transfer(source, sink, value.size()).ok());
        EXPECT_EQ(sink.taken(), value.size());
        ::close(in);
        ::close(out);
        EXPECT_TRUE(ReadFile(dir.Sub("out1")) == value);
    }
    // Memory (copy) -> memory (copy).
    {
        SpanSource source(Bytes(value));
        std::string back(value.size(), '\0');
        SpanSink sink(std::as_writable_bytes(std::span(back.data(), back.size())));
        ASSERT_TRUE(Transfer(source, sink, value.size()).ok());
        EXPECT_TRUE(back == value);
    }
    // Pipe (splice) -> pipe (splice), with a reader on the far end of the pipe.
    {
        int in[2], out[2];
        ASSERT_EQ(::pipe(in), 0);
        ASSERT_EQ(::pipe(out), 0);
        std::thread writer([&] {
            (void)!::write(in[1], value.data(), value.size());
            ::close(in[1]);
        });
        std::string back;
        std::thread reader([&] {
            char buf[65536];
            for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) back.append(buf, n);
        });
        FdSource source(in[0]);
        FdSink sink(out[1]);
        EXPECT_FALSE(source.Rewind());  // a pipe cannot start again
        ASSERT_TRUE(Transfer(source, sink, value.size()).ok());
        ::close(out[1]);
        writer.join();
        reader.join();
        ::close(in[0]);
        ::close(out[0]);
        EXPECT_TRUE(back == value);
    }
    // Into /dev/null: taken, and rewinds trivially.
    {
        int null = ::open("/dev/null", O_WRONLY);
        SpanSource source(Bytes(value));
        FdSink sink(null);
        ASSERT_TRUE(Transfer(source, sink, value.size()).ok());
        EXPECT_EQ(sink.taken(), value.size());
        EXPECT_TRUE(sink.Restart());
        ::close(null);
    }
}

TEST(StreamIoTest, ARegularFileSinkRewindsToWhereItStarted) {
    TempDir dir;
    int fd = ::open(dir.Sub("f").c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
    ASSERT_EQ(::write(fd, "head", 4), 4);
    FdSink sink(fd);
    ASSERT_TRUE(sink.Take(Bytes(std::string("partial"))).ok());
    EXPECT_TRUE(sink.Restart());
    ASSERT_TRUE(sink.Take(Bytes(std::string("whole"))).ok());
    ::close(fd);
    EXPECT_EQ(ReadFile(dir.Sub("f")), "headwhole");
}

TEST(StreamIoTest, APeerThatDiesMidStreamIsAClearError) {
    const std::string value = Pattern(2, kValueBytes);
    SocketPair p;
    std::thread sender([&] {
        (void)net::SendAll(p.a.get(), value.data(), 3 * kChunkBytes + 7);
        p.a.Reset();  // dies mid-value
    });
    std::string back(value.size(), '\0');
    SpanSink sink(std::as_writable_bytes(std::span(back.data(), back.size())));
    Status st = net::RecvStream(p.b.get(), sink, value.size());
    sender.join();
    EXPECT_TRUE(st.Is(StatusCode::kIoError)) << st.ToString();
    EXPECT_NE(st.message().find("mid-message"), std::string::npos) << st.ToString();
    EXPECT_TRUE(sink.write_error().ok());  // the connection failed, not the destination
}

TEST(StreamIoTest, ASourceThatEndsShortSaysSo) {
    const std::string value = Pattern(3, 1000);
    SpanSource source(Bytes(value));
    SocketPair p;
    bool source_failed = false;
    std::thread drain([&] { (void)net::Discard(p.b.get(), 1000); });
    Status st = net::SendStream(p.a.get(), source, 5000, &source_failed);
    p.a.Reset();
    drain.join();
    EXPECT_TRUE(source_failed);
    EXPECT_NE(st.message().find("ended after 1000 of 5000 bytes"), std::string::npos)
        << st.ToString();
}

// A source that fails after `good` bytes (the disk under a file went bad, say).
class FailingSource final : public ByteSource {
public:
    FailingSource(std::string value, size_t good) : value_(std::move(value)), good_(good) {}
    Result<size_t> Read(std::span<std::byte> out) override {
        if (at_ >= good_) return Status::IoError("source broke");
        size_t n = std::min(out.size(), good_ - at_);
        std::memcpy(out.data(), value_.data() + at_, n);
        at_ += n;
        return n;
    }

private:
    std::string value_;
    size_t good_;
    size_t at_ = 0;
};

TEST(StreamClientTest, PutFromAndGetToCarryAManyChunkValue) {
    test::Standalone s({"--dram_size=64MiB"});
    ASSERT_NE(s.client, nullptr);
    const std::string value = Pattern(4, kValueBytes);
    WriteFile(s.dir.Sub("in"), value);
    int in = ::open(s.dir.Sub("in").c_str(), O_RDONLY);
    FdSource source(in);
    ASSERT_TRUE(s.client->PutFrom("stream/file", value.size(), source).ok());
    ::close(in);

    int out = ::open(s.dir.Sub("out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    FdSink file_sink(out);
    Tier from = Tier::kLocalDisk;
    auto size = s.client->GetTo("stream/file", file_sink, &from);
    ::close(out);
    ASSERT_TRUE(size.ok()) << size.status().ToString();
    EXPECT_EQ(*size, value.size());
    EXPECT_EQ(from, Tier::kMemory);
    EXPECT_TRUE(ReadFile(s.dir.Sub("out")) == value);

    // From memory, through the copying path, back through Get.
    SpanSource mem(Bytes(value));
    ASSERT_TRUE(s.client->PutFrom("stream/mem", value.size(), mem).ok());
    auto back = s.client->Get("stream/mem");
    ASSERT_TRUE(back.ok());
    EXPECT_TRUE(*back == value);
}

TEST(StreamClientTest, ASourceThatFailsMidPutLeavesNothingAndIsRevoked) {
    test::Standalone s({"--dram_size=16MiB"});
    ASSERT_NE(s.client, nullptr);
    const std::string value = Pattern(5, kValueBytes);
    FailingSource broken(value, 2 * kChunkBytes + 3);
    Status st = s.client->PutFrom("stream/broken", value.size(), broken);
    EXPECT_TRUE(st.Is(StatusCode::kIoError)) << st.ToString();
    EXPECT_NE(st.message().find("source broke"), std::string::npos) << st.ToString();
    auto exists = s.client->Exists("stream/broken");
    ASSERT_TRUE(exists.ok());
    EXPECT_FALSE(*exists);
    EXPECT_TRUE(s.client->Get("stream/broken").status().Is(StatusCode::kNotFound));
    // Revoked at once (not at put_timeout_sec): the key can be put again, and its DRAM was
    // given back (16 MiB holds one 5 MiB value at a time only twice over).
    SpanSource good(Bytes(value));
    Status again = s.client->PutFrom("stream/broken", value.size(), good);
    ASSERT_TRUE(again.ok()) << again.ToString();
    auto back = s.client->Get("stream/broken");
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_TRUE(*back == value);
}

TEST(StreamClientTest, ASourceShorterThanItsSizeFailsThePut) {
    test::Standalone s({"--dram_size=16MiB"});
    ASSERT_NE(s.client, nullptr);
    const std::string value = Pattern(6, 3 * kChunkBytes);
    SpanSource shorter(Bytes(value));
    Status st = s.client->PutFrom("stream/short", value.size() + 100, shorter);
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("ended after"), std::string::npos) << st.ToString();
    auto exists = s.client->Exists("stream/short");
    ASSERT_TRUE(exists.ok());
    EXPECT_FALSE(*exists);
}

// A data node that answers a read with a header promising `length` bytes, sends part of
// them and dies: the transport's ReadTo must fail clearly, never report success.
TEST(StreamTransportTest, ANodeThatDiesMidReadIsAClearError) {
    auto listener = net::ListenTcp({"127.0.0.1", 0});
    ASSERT_TRUE(listener.ok());
    uint16_t port = *net::BoundPort(listener->get());
    const uint64_t length = kValueBytes;
    std::thread node([&] {
        net::Fd conn(::accept(listener->get(), nullptr, nullptr));
        auto answer = [&](uint64_t payload) {
            data::RequestBytes raw;
            if (!net::RecvAll(conn.get(), raw.data(), raw.size()).ok()) return false;
            auto h = data::ParseRequest(raw);
            if (!h.ok()) return false;
            (void)net::Discard(conn.get(), h->key_length + (h->op == data::Op::kHello ? h->length : 0));
            data::ResponseHeader r;
            r.length = payload;
            auto bytes = data::SerializeResponse(r);
            return net::SendAll(conn.get(), bytes.data(), bytes.size()).ok();
        };
        if (!answer(0)) return;       // hello
        if (!answer(length)) return;  // the read: promise it all...
        std::string part = Pattern(7, 2 * kChunkBytes);
        (void)net::SendAll(conn.get(), part.data(), part.size());  // ...send some, then die
    });
    auto transport = NewTcpTransport({});
    std::string back(length, '\0');
    SpanSink sink(std::as_writable_bytes(std::span(back.data(), back.size())));
    Status st = transport->ReadTo("127.0.0.1:" + std::to_string(port), Tier::kMemory, "k", 1, 0,
                                  length, sink);
    node.join();
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("mid-message"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace mooncake
