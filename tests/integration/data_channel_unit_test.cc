// In-process checks of the data channel's pieces: the header codec (round trip, and any
// bytes either parse or are refused, never crash) and the segment's range records (a reader
// gets the right bytes or an error, never a torn mix, while the range is reused).
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <thread>

#include "daemon/config_file.h"
#include "node/segment.h"
#include "net/buffered_reader.h"
#include "net/net.h"
#include "gtest/gtest.h"
#include "net/data_protocol.h"

namespace mooncake {
namespace {

TEST(DataProtocolTest, RequestRoundTrips) {
    data::RequestHeader h;
    h.op = data::Op::kWrite;
    h.tier = Tier::kMemory;
    h.key_length = 17;
    h.generation = 0x123456789ABCDEFull;
    h.offset = 1ull << 40;
    h.length = 64ull << 20;
    auto bytes = data::SerializeRequest(h);
    auto back = data::ParseRequest(bytes);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->op, h.op);
    EXPECT_EQ(back->tier, h.tier);
    EXPECT_EQ(back->key_length, h.key_length);
    EXPECT_EQ(back->generation, h.generation);
    EXPECT_EQ(back->offset, h.offset);
    EXPECT_EQ(back->length, h.length);
}

TEST(DataProtocolTest, ResponseRoundTrips) {
    data::ResponseHeader h;
    h.status = StatusCode::kStaleGeneration;
    h.message_length = 33;
    auto back = data::ParseResponse(data::SerializeResponse(h));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->status, StatusCode::kStaleGeneration);
    EXPECT_EQ(back->message_length, 33u);
}

TEST(DataProtocolTest, MalformedHeadersAreRefusedWithReasons) {
    data::RequestHeader h;
    h.op = data::Op::kRead;
    h.key_length = 0;  // reads need a key
    h.generation = 1;
    EXPECT_FALSE(data::ParseRequest(data::SerializeRequest(h)).ok());
    h.key_length = 5000;
    EXPECT_FALSE(data::ParseRequest(data::SerializeRequest(h)).ok());
    h.key_length = 3;
    h.generation = 0;
    EXPECT_FALSE(data::ParseRequest(data::SerializeRequest(h)).ok());
    h.generation = 1;
    h.offset = ~0ull;
    h.length = 2;
    EXPECT_FALSE(data::ParseRequest(data::SerializeRequest(h)).ok());
    h.offset = 0;
    h.op = data::Op::kWrite;
    h.tier = Tier::kLocalDisk;  // only MEMORY is written
    EXPECT_FALSE(data::ParseRequest(data::SerializeRequest(h)).ok());
    auto bytes = data::SerializeRequest({});
    bytes[4] = std::byte{9};  // version
    auto st = data::ParseRequest(bytes);
    EXPECT_NE(st.status().message().find("version"), std::string::npos);
    EXPECT_FALSE(data::ParseRequest(std::span(bytes).first(10)).ok());
}

TEST(DataProtocolTest, EndPutFlagRoundTripsOnAWriteAsVersion2) {
    data::RequestHeader h;
    h.op = data::Op::kWrite;
    h.key_length = 9;
    h.generation = 42;
    h.offset = 4096;
    h.length = 65536;
    h.flags = data::kFlagEndPut;
    auto bytes = data::SerializeRequest(h);
    EXPECT_EQ(std::to_integer<int>(bytes[4]), data::kVersionFlags);  // version 2 on the wire
    auto back = data::ParseRequest(bytes);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->flags, data::kFlagEndPut);
    EXPECT_EQ(data::ExtraRequestBytes(*back), data::kClientIdBytes);
    EXPECT_EQ(data::SerializeRequest(*back), bytes);

    // Without flags a write stays version 1: a node that predates flags still takes it.
    h.flags = 0;
    auto plain = data::SerializeRequest(h);
    EXPECT_EQ(std::to_integer<int>(plain[4]), data::kVersion);
    ASSERT_TRUE(data::ParseRequest(plain).ok());
    EXPECT_EQ(data::ExtraRequestBytes(*data::ParseRequest(plain)), 0u);
}

TEST(DataProtocolTest, EndPutFlagIsRefusedOffAWriteOrOutOfVersion) {
    auto refused = [](const data::RequestBytes& bytes, std::string_view why) {
        auto st = data::ParseRequest(bytes);
        ASSERT_FALSE(st.ok());
        EXPECT_NE(st.status().message().find(why), std::string::npos) << st.status().message();
    };
    data::RequestHeader h;
    h.op = data::Op::kRead;
    h.key_length = 3;
    h.generation = 1;
    h.length = 10;
    h.flags = data::kFlagEndPut;
    refused(data::SerializeRequest(h), "only valid on a write");
    data::RequestHeader ping;
    ping.flags = data::kFlagEndPut;
    refused(data::SerializeRequest(ping), "only valid on a write");
    data::RequestHeader hello;
    hello.op = data::Op::kHello;
    hello.flags = data::kFlagEndPut;
    refused(data::SerializeRequest(hello), "only valid on a write");

    // An unknown bit, even next to a known one.
    h.op = data::Op::kWrite;
    h.flags = data::kFlagEndPut | 0x80;
    refused(data::SerializeRequest(h), "unknown request flags 0x80");

    // Flags in a version 1 header (what an old peer must never see as valid), and version 2
    // without flags (one encoding per header).
    h.flags = data::kFlagEndPut;
    auto v1 = data::SerializeRequest(h);
    v1[4] = std::byte{1};
    refused(v1, "flags must be 0 in a version 1 header");
    h.flags = 0;
    auto v2 = data::SerializeRequest(h);
    v2[4] = std::byte{2};
    refused(v2, "version 2 header carries flags");
    auto v3 = data::SerializeRequest(h);
    v3[4] = std::byte{3};
    refused(v3, "version 3 is not supported");

    // Truncated: a flagged header is still exactly 40 bytes.
    h.flags = data::kFlagEndPut;
    auto full = data::SerializeRequest(h);
    EXPECT_FALSE(data::ParseRequest(std::span(full).first(data::kRequestHeaderSize - 1)).ok());
}

TEST(DataProtocolTest, ByKeyRequestsNameAKeyAndNoRange) {
    auto refused = [](const data::RequestHeader& h, std::string_view why) {
        auto st = data::ParseRequest(data::SerializeRequest(h));
        ASSERT_FALSE(st.ok());
        EXPECT_NE(st.status().message().find(why), std::string::npos) << st.status().message();
    };
    data::RequestHeader h;
    h.op = data::Op::kRead;
    h.flags = data::kFlagByKey;
    h.key_length = 5;
    h.length = UINT64_MAX;  // a reader that takes any size
    auto bytes = data::SerializeRequest(h);
    EXPECT_EQ(std::to_integer<int>(bytes[4]), data::kVersionFlags);
    auto read = data::ParseRequest(bytes);
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    EXPECT_EQ(read->flags, data::kFlagByKey);
    EXPECT_EQ(data::ExtraRequestBytes(*read), 0u);  // a read names no client
    h.op = data::Op::kWrite;
    h.length = 4096;
    auto write = data::ParseRequest(data::SerializeRequest(h));
    ASSERT_TRUE(write.ok()) << write.status().ToString();
    EXPECT_EQ(data::ExtraRequestBytes(*write), data::kClientIdBytes);  // the writer's id

    // The server finds the range: a request naming one is refused, as are 0 bytes, the flag
    // beside another, and the flag on an op without a key.
    data::RequestHeader bad = h;
    bad.generation = 7;
    refused(bad, "names no generation, offset or tier");
    bad = h;
    bad.offset = 4096;
    refused(bad, "names no generation, offset or tier");
    bad = h;
    bad.tier = Tier::kLocalDisk;
    refused(bad, "names no generation, offset or tier");
    bad = h;
    bad.length = 0;
    refused(bad, "of 0 bytes");
    bad = h;
    bad.flags = data::kFlagByKey | data::kFlagEndPut;
    refused(bad, "goes alone");
    data::RequestHeader ping;
    ping.flags = data::kFlagByKey;
    refused(ping, "only valid on a read or a write");
    // The more flag (a pipelined batch) may go beside it, and beside end-put, not on a ping.
    bad = h;
    bad.flags = data::kFlagByKey | data::kFlagMore;
    EXPECT_TRUE(data::ParseRequest(data::SerializeRequest(bad)).ok());
    ping.flags = data::kFlagMore;
    refused(ping, "more flag is only valid on a read or a write");
}

TEST(DataProtocolTest, ResponsesNameTheServedTierOnlyWhenOk) {
    data::ResponseHeader h;
    h.length = 10;
    EXPECT_FALSE(data::ParseResponse(data::SerializeResponse(h))->served_from.has_value());
    for (Tier tier : {Tier::kMemory, Tier::kLocalDisk}) {
        h.served_from = tier;
        auto back = data::ParseResponse(data::SerializeResponse(h));
        ASSERT_TRUE(back.ok()) << back.status().ToString();
        EXPECT_EQ(back->served_from, tier);
    }
    auto bytes = data::SerializeResponse(h);
    bytes[12] = std::byte{3};  // no such tier
    EXPECT_FALSE(data::ParseResponse(bytes).ok());
    data::ResponseHeader error;
    error.status = StatusCode::kNotFound;
    bytes = data::SerializeResponse(error);
    bytes[12] = std::byte{1};
    auto refused = data::ParseResponse(bytes);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("names no served tier"), std::string::npos);
    bytes[12] = std::byte{0};
    bytes[13] = std::byte{1};  // still reserved
    EXPECT_FALSE(data::ParseResponse(bytes).ok());
}

TEST(DataProtocolTest, RandomBytesNeverCrashTheParsers) {
    std::mt19937_64 rng(7);
    size_t accepted = 0;
    for (int i = 0; i < 200000; ++i) {
        data::RequestBytes req;
        for (auto& b : req) b = static_cast<std::byte>(rng());
        // Half the time keep the magic and version so the deeper checks run.
        if (i % 2 == 0) {
            auto good = data::SerializeRequest({});
            std::copy(good.begin(), good.begin() + 6, req.begin());
        }
        if (data::ParseRequest(req).ok()) ++accepted;
        data::ResponseBytes resp;
        for (auto& b : resp) b = static_cast<std::byte>(rng());
        (void)data::ParseResponse(resp);
    }
    SUCCEED() << accepted << " random headers passed the structural checks";
}

// Values are written trimmed (the store accepted them with surrounding blanks).
// The data server's reader: small fields come out of one recv, a large read goes past the
// buffer, small payloads make the recvs large and a large one small again, and none of it
// loses or reorders a byte whichever way the bytes arrive.
TEST(BufferedReaderTest, FieldsAndPayloadsComeOutInOrderWhateverTheArrival) {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    net::Fd reader_fd(sv[0]);
    net::Fd writer_fd(sv[1]);
    std::string stream;
    for (int i = 0; i < 400000; ++i) stream.push_back(static_cast<char>(i * 7 + i / 251));
    // The writer sends in odd-sized pieces, with pauses, so reads see partial arrivals.
    std::thread writer([&] {
        size_t at = 0;
        for (size_t piece = 1; at < stream.size(); piece = piece * 3 % 9001 + 1) {
            size_t n = std::min(piece, stream.size() - at);
            ASSERT_TRUE(net::SendAll(writer_fd.get(), stream.data() + at, n).ok());
            at += n;
            if (piece % 5 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    });
    net::BufferedReader in(reader_fd.get());
    ASSERT_TRUE(in.WaitForData(std::chrono::seconds(5)).ok());
    std::string got;
    size_t at = 0;
    // Field sizes: small (through the buffer), large (straight from the socket), skipped;
    // payloads small (copied out of large recvs) and large (straight from the socket).
    for (size_t step = 0; at < stream.size(); ++step) {
        const bool payload = step % 4 == 1;
        const size_t payload_size = step % 24 == 1 ? 70000 : 2000 + step % 5 * 1000;
        size_t n = std::min<size_t>(stream.size() - at, payload  ? payload_size
                                                        : step % 4 == 3 ? 20000
                                                                        : step % 13 + 1);
        if (payload) {
            std::string value(n, '\0');
            ASSERT_TRUE(in.RecvPayload(value.data(), n).ok()) << "at " << at;
            got += value;
        } else if (step % 7 == 6) {
            ASSERT_TRUE(in.Discard(n).ok());
            got.append(stream, at, n);  // skipped bytes are the stream's by construction
        } else {
            std::string field(n, '\0');
            ASSERT_TRUE(in.RecvAll(field.data(), n).ok()) << "at " << at;
            got += field;
        }
        at += n;
    }
    writer.join();
    EXPECT_EQ(got, stream);
    // Then the peer closes: a waiting reader hears it, a reader mid-field is told mid-message.
    writer_fd.Reset();
    char byte;
    EXPECT_TRUE(in.WaitForData(std::chrono::seconds(5)).Is(StatusCode::kUnavailable));
    EXPECT_FALSE(in.RecvAll(&byte, 1).ok());
}

TEST(ConfigFileTest, RewriteReplacesActiveLinesAndAppendsTheRest) {
    std::string text =
        "# a comment\n"
        "# promotion_on_hit = true\n"
        "  eviction_ratio=0.05   # inline\n"
        "dram_size = 8MiB\n";
    std::string out = RewriteConfigText(
        text, {{"eviction_ratio", "0.1"}, {"promotion_on_hit", " false\t"}, {"eviction_ratio", "0.2"}});
    EXPECT_EQ(out,
              "# a comment\n"
              "# promotion_on_hit = true\n"
              "eviction_ratio = 0.2\n"
              "dram_size = 8MiB\n"
              "\n# set at runtime (mooncakectl tune set --persist)\n"
              "promotion_on_hit = false\n");
}

TEST(SegmentTest, ReadsNameTheirKeyAndGeneration) {
    auto segment = Segment::Create(1 << 20, /*prefault=*/false);
    ASSERT_TRUE(segment.ok());
    Segment& s = **segment;
    std::string v(5000, 'a');
    ASSERT_TRUE(s.Write("k", 7, 8192, std::as_bytes(std::span(v))).ok());
    std::vector<std::byte> out(5000);
    EXPECT_TRUE(s.Read("k", 7, 8192, out).ok());
    EXPECT_TRUE(s.Read("k", 6, 8192, out).Is(StatusCode::kStaleGeneration));
    EXPECT_TRUE(s.Read("j", 7, 8192, out).Is(StatusCode::kNotFound));
    EXPECT_TRUE(s.Read("k", 7, 0, out).Is(StatusCode::kNotFound));
    std::vector<std::byte> tail(100);
    EXPECT_TRUE(s.Read("k", 7, 8192 + 4900, tail).ok());  // inside the record
    EXPECT_FALSE(s.Read("k", 7, 8192 + 4901, tail).ok());  // past its end
    // A release for an older occupant leaves the new one alone.
    ASSERT_TRUE(s.Write("k2", 9, 8192, std::as_bytes(std::span(v))).ok());
    s.Release("k", 7, 8192);
    EXPECT_TRUE(s.Read("k2", 9, 8192, out).ok());
    s.Release("k2", 9, 8192);
    EXPECT_TRUE(s.Read("k2", 9, 8192, out).Is(StatusCode::kNotFound));
    EXPECT_EQ(s.bytes_held(), 0u);
    EXPECT_FALSE(s.Write("x", 1, (1 << 20) - 10, std::as_bytes(std::span(v))).ok());
}

TEST(SegmentTest, AnAbandonedWriteLeavesNothingReadable) {
    auto segment = Segment::Create(1 << 20, false);
    Segment& s = **segment;
    {
        auto lease = s.BeginWrite("half", 3, 0, 4096);
        ASSERT_TRUE(lease.ok());
        std::memset(lease->data(), 1, 100);
    }  // not committed
    std::vector<std::byte> out(4096);
    EXPECT_FALSE(s.Read("half", 3, 0, out).ok());
    EXPECT_EQ(s.records(), 0u);
}

// A put revoked while its bytes were still on their way, the key put again into the same
// range: the late bytes of the old generation must not replace the new record (which a Get of
// the key would then miss). Another key's older write still takes a range (the master freed it).
TEST(SegmentTest, ALateWriteOfAnOlderGenerationOfTheKeyIsRefused) {
    auto segment = Segment::Create(1 << 20, false);
    Segment& s = **segment;
    std::string fresh(4096, 'n'), stale(4096, 'o');
    ASSERT_TRUE(s.Write("k", 12, 0, std::as_bytes(std::span(fresh))).ok());
    EXPECT_TRUE(s.Write("k", 11, 0, std::as_bytes(std::span(stale)))
                    .Is(StatusCode::kStaleGeneration));
    std::vector<std::byte> out(4096);
    ASSERT_TRUE(s.Read("k", 12, 0, out).ok());
    EXPECT_EQ(std::memcmp(out.data(), fresh.data(), out.size()), 0);
    EXPECT_EQ(s.records(), 1u);
    ASSERT_TRUE(s.Write("other", 5, 0, std::as_bytes(std::span(stale))).ok());
    EXPECT_TRUE(s.Read("other", 5, 0, out).ok());
}

// Readers of (a, 1) race a writer that keeps reusing the range for other objects. Every read
// either fails or returns exactly a's bytes.
TEST(SegmentTest, ReuseNeverTearsAConcurrentRead) {
    auto segment = Segment::Create(4 << 20, false);
    Segment& s = **segment;
    const size_t size = 256 << 10;
    std::vector<std::byte> a(size, std::byte{0xAA}), b(size, std::byte{0xBB});
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> good{0}, refused{0}, torn{0};
    std::atomic<int> started{0};
    std::vector<std::thread> readers;
    for (int t = 0; t < 3; ++t) {
        readers.emplace_back([&] {
            std::vector<std::byte> out(size);
            ++started;
            while (!stop.load()) {
                Status st = s.Read("a", 1, 0, out);
                if (!st.ok()) {
                    ++refused;
                    continue;
                }
                bool all_a = std::all_of(out.begin(), out.end(),
                                         [](std::byte x) { return x == std::byte{0xAA}; });
                ++(all_a ? good : torn);
            }
        });
    }
    // On a busy machine the readers may not run at all during 100 rounds (seen in CI: 0 good,
    // 0 refused): start once they are running, and go on until both outcomes were seen.
    while (started.load() < 3) std::this_thread::yield();
    for (int round = 0;
         round < 100 || ((good.load() == 0 || refused.load() == 0) && round < 200000); ++round) {
        ASSERT_TRUE(s.Write("a", 1, 0, a).ok());
        std::this_thread::yield();
        // The range is reused by another object, overlapping a's record partly.
        ASSERT_TRUE(s.Write("b", 2 + round, 4096 * (round % 3), b).ok());
    }
    stop.store(true);
    for (auto& th : readers) th.join();
    EXPECT_EQ(torn.load(), 0u);
    EXPECT_GT(good.load(), 0u);
    EXPECT_GT(refused.load(), 0u);
}

}  // namespace
}  // namespace mooncake
