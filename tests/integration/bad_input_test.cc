// Bad input on every port: a clear error, the daemon keeps serving, metadata unchanged.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TSocket.h>

#include <fstream>
#include <functional>

#include "MasterService.h"
#include "gtest/gtest.h"
#include "mooncake_constants.h"
#include "tests/integration/harness.h"
#include "net/data_protocol.h"
#include "thrift/rpc_limits.h"

namespace mooncake::test {
namespace {

using apache::thrift::protocol::TBinaryProtocol;
using apache::thrift::transport::TFramedTransport;
using apache::thrift::transport::TSocket;

// A bare Thrift connection to a master: no Hello unless the test says so.
struct RawMaster {
    explicit RawMaster(uint16_t port) {
        socket = std::make_shared<TSocket>("127.0.0.1", port);
        socket->setRecvTimeout(5000);
        transport = std::make_shared<TFramedTransport>(socket);
        client = std::make_unique<rpc::MasterServiceClient>(
            std::make_shared<TBinaryProtocol>(transport));
        transport->open();
    }
    void Hello() {
        rpc::HelloReply reply;
        client->Hello(reply, rpc::g_mooncake_constants.PROTOCOL_VERSION, "", "test", "");
    }
    std::shared_ptr<TSocket> socket;
    std::shared_ptr<TFramedTransport> transport;
    std::unique_ptr<rpc::MasterServiceClient> client;
};

// Runs `call`, expecting a StoreError with `code`.
template <typename Fn>
void ExpectStoreError(rpc::ErrorCode::type code, Fn&& call) {
    try {
        call();
        ADD_FAILURE() << "expected StoreError " << code;
    } catch (const rpc::StoreError& e) {
        EXPECT_EQ(e.code, code) << e.message;
        EXPECT_FALSE(e.message.empty());
    }
}

// True if the peer closes the connection (reads end) within a few seconds.
bool PeerCloses(int fd) {
    char buf[4096];
    for (;;) {
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n == 0) return true;
        if (n < 0) return errno == ECONNRESET;
    }
}

// Reads one data channel response header and its message.
Result<std::pair<data::ResponseHeader, std::string>> ReadDataResponse(int fd) {
    data::ResponseBytes raw;
    size_t got = 0;
    while (got < raw.size()) {
        ssize_t n = ::recv(fd, raw.data() + got, raw.size() - got, 0);
        if (n <= 0) return Status::IoError("no response");
        got += static_cast<size_t>(n);
    }
    auto h = data::ParseResponse(raw);
    if (!h.ok()) return h.status();
    std::string message(h->message_length, '\0');
    size_t m = 0;
    while (m < message.size()) {
        ssize_t n = ::recv(fd, message.data() + m, message.size() - m, 0);
        if (n <= 0) return Status::IoError("short message");
        m += static_cast<size_t>(n);
    }
    return std::make_pair(*h, message);
}

void SendAll(int fd, const void* p, size_t n) {
    ASSERT_EQ(::send(fd, p, n, MSG_NOSIGNAL), static_cast<ssize_t>(n));
}

void SendDataRequest(int fd, const data::RequestHeader& h, std::string_view key = {},
                     std::string_view payload = {}) {
    auto bytes = data::SerializeRequest(h);
    SendAll(fd, bytes.data(), bytes.size());
    if (!key.empty()) SendAll(fd, key.data(), key.size());
    if (!payload.empty()) SendAll(fd, payload.data(), payload.size());
}

class BadInputTest : public ::testing::Test {
protected:
    void SetUp() override {
        server_ = std::make_unique<Standalone>(std::vector<std::string>{"--dram_size=32MiB"});
        ASSERT_NE(server_->client, nullptr);
        ASSERT_TRUE(client().Put("canary", Pattern(9, 100000)).ok());
        canary_ = *client().Stat("canary");
    }
    Client& client() { return *server_->client; }
    // The daemon still serves and the canary's metadata did not change.
    void ExpectStillServing() {
        EXPECT_EQ(server_->daemon->ExitedWith(), -1) << "daemon exited";
        auto got = client().Get("canary");
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        EXPECT_TRUE(*got == Pattern(9, 100000));
        auto now = client().Stat("canary");
        ASSERT_TRUE(now.ok());
        EXPECT_EQ(now->object.generation, canary_.object.generation);
        EXPECT_EQ(now->object.replicas.size(), canary_.object.replicas.size());
        ASSERT_TRUE(client().Put("after/" + std::to_string(++puts_), "ok").ok());
    }
    std::unique_ptr<Standalone> server_;
    ObjectInfo canary_;
    int puts_ = 0;
};

TEST_F(BadInputTest, GarbageOnTheRpcPortDropsOnlyThatConnection) {
    int fd = RawConnect(server_->rpc_port);
    ASSERT_GE(fd, 0);
    std::string garbage = "GET / HTTP/1.1\r\nHost: x\r\n\r\n" + Pattern(1, 3000);
    SendAll(fd, garbage.data(), garbage.size());
    EXPECT_TRUE(PeerCloses(fd));
    ::close(fd);
    ExpectStillServing();
}

TEST_F(BadInputTest, OversizedRpcFrameIsRefused) {
    int fd = RawConnect(server_->rpc_port);
    ASSERT_GE(fd, 0);
    uint32_t frame = htonl(0x7FFFFFF0u);  // ~2 GiB frame announced
    SendAll(fd, &frame, sizeof frame);
    std::string some(1000, 'x');
    SendAll(fd, some.data(), some.size());
    EXPECT_TRUE(PeerCloses(fd));
    ::close(fd);
    ExpectStillServing();
}

TEST_F(BadInputTest, CallsBeforeHelloAndWrongVersionsAreRefused) {
    RawMaster raw(server_->rpc_port);
    ExpectStoreError(rpc::ErrorCode::ILLEGAL_CLIENT,
                     [&] { raw.client->Exists("canary", false); });
    ExpectStoreError(rpc::ErrorCode::ILLEGAL_CLIENT, [&] { raw.client->Remove("canary", true); });
    rpc::HelloReply reply;
    ExpectStoreError(rpc::ErrorCode::INVALID_ARGUMENT,
                     [&] { raw.client->Hello(reply, 999, "", "from the future", ""); });
    raw.Hello();
    EXPECT_TRUE(raw.client->Exists("canary", false));
    ExpectStillServing();
}

TEST_F(BadInputTest, UnknownNodeIdsAreRefused) {
    RawMaster raw(server_->rpc_port);
    raw.Hello();
    rpc::HeartbeatReply hb;
    ExpectStoreError(rpc::ErrorCode::UNKNOWN_NODE, [&] { raw.client->Heartbeat(hb, 424242, 0); });
    rpc::Replica staged;
    EXPECT_THROW(raw.client->PromotionAllocStart(staged, 424242, "canary",
                                                 static_cast<int64_t>(canary_.object.generation),
                                                 100000),
                 rpc::StoreError);
    EXPECT_THROW(raw.client->NotifyOffloadSuccess(424242, "canary",
                                                  static_cast<int64_t>(canary_.object.generation)),
                 rpc::StoreError);
    EXPECT_THROW(raw.client->ReportDiskReplicaDropped(
                     424242, "canary", static_cast<int64_t>(canary_.object.generation)),
                 rpc::StoreError);
    std::vector<rpc::PromotionTask> tasks;
    raw.client->PromotionObjectHeartbeat(tasks, 424242, 10, 0);
    EXPECT_TRUE(tasks.empty());
    ExpectStillServing();
}

TEST_F(BadInputTest, ANodeCannotReportAnotherNodesReplicas) {
    RawMaster raw(server_->rpc_port);
    raw.Hello();
    // Two fake nodes (their data ports are never dialled in this test).
    rpc::NodeSpec a, b;
    a.name = "fake-a:1";
    a.data_address = "127.0.0.1:9";
    a.segment_capacity = 0;
    a.disk_capacity = 1 << 20;
    b = a;
    b.name = "fake-b:1";
    int64_t ida = raw.client->RegisterNode(a);
    int64_t idb = raw.client->RegisterNode(b);
    // Node a adopts a disk-only object; node b then claims things about it.
    rpc::DiskReplicaReport report;
    report.key = "adopted";
    report.generation = 77;
    report.size = 1000;
    std::vector<rpc::Outcome> outcomes;
    raw.client->RegisterDiskReplicas(outcomes, ida, {report});
    ASSERT_EQ(outcomes.size(), 1u);
    ASSERT_EQ(outcomes[0].code, rpc::ErrorCode::OK) << outcomes[0].message;
    auto before = client().Stat("adopted");
    ASSERT_TRUE(before.ok());
    // A drop report for a record the node does not hold is refused (NOT_FOUND) and a's
    // replica survives it (checked below).
    ExpectStoreError(rpc::ErrorCode::NOT_FOUND,
                     [&] { raw.client->ReportDiskReplicaDropped(idb, "adopted", 77); });
    EXPECT_THROW(raw.client->NotifyOffloadSuccess(idb, "adopted", 77), rpc::StoreError);
    raw.client->RegisterDiskReplicas(outcomes, idb, {report});
    ASSERT_EQ(outcomes.size(), 1u);
    EXPECT_NE(outcomes[0].code, rpc::ErrorCode::OK) << "b claimed a's record";
    // A stale generation from the rightful holder does not drop the current record either.
    try {
        raw.client->ReportDiskReplicaDropped(ida, "adopted", 76);
    } catch (const rpc::StoreError&) {
    }
    auto after = client().Stat("adopted");
    ASSERT_TRUE(after.ok());
    ASSERT_EQ(after->object.replicas.size(), before->object.replicas.size());
    EXPECT_EQ(after->object.replicas[0].node, static_cast<NodeId>(ida));
    raw.client->UnregisterNode(ida);
    raw.client->UnregisterNode(idb);
    ExpectStillServing();
}

TEST_F(BadInputTest, GarbageOnTheDataPortGetsAnErrorAndAClose) {
    int fd = RawConnect(server_->data_port);
    ASSERT_GE(fd, 0);
    std::string garbage = Pattern(3, 40);
    SendAll(fd, garbage.data(), garbage.size());
    auto response = ReadDataResponse(fd);
    ASSERT_TRUE(response.ok()) << response.status().ToString();
    EXPECT_EQ(response->first.status, StatusCode::kInvalidArgument);
    EXPECT_NE(response->second.find("magic"), std::string::npos) << response->second;
    EXPECT_TRUE(PeerCloses(fd));
    ::close(fd);
    ExpectStillServing();
}

TEST_F(BadInputTest, DataRequestsBeforeHelloAreRefused) {
    int fd = RawConnect(server_->data_port);
    ASSERT_GE(fd, 0);
    data::RequestHeader read;
    read.op = data::Op::kRead;
    read.key_length = 6;
    read.generation = canary_.object.generation;
    read.offset = canary_.object.replicas[0].offset;
    read.length = 100;
    SendDataRequest(fd, read, "canary");
    auto response = ReadDataResponse(fd);
    ASSERT_TRUE(response.ok());
    EXPECT_EQ(response->first.status, StatusCode::kIllegalClient);
    ::close(fd);
    ExpectStillServing();
}

TEST_F(BadInputTest, OversizedAndOutOfRangeDataWritesAreRefused) {
    int fd = RawConnect(server_->data_port);
    ASSERT_GE(fd, 0);
    data::RequestHeader hello;
    hello.op = data::Op::kHello;
    SendDataRequest(fd, hello);
    ASSERT_EQ(ReadDataResponse(fd)->first.status, StatusCode::kOk);

    // Past the segment's end: refused, payload drained, connection still usable.
    data::RequestHeader write;
    write.op = data::Op::kWrite;
    write.key_length = 3;
    write.generation = 1;
    write.offset = 32ull << 20;
    write.length = 10;
    SendDataRequest(fd, write, "bad", "0123456789");
    auto response = ReadDataResponse(fd);
    ASSERT_TRUE(response.ok());
    EXPECT_EQ(response->first.status, StatusCode::kInvalidArgument);
    data::RequestHeader ping;
    ping.op = data::Op::kPing;
    SendDataRequest(fd, ping);
    EXPECT_EQ(ReadDataResponse(fd)->first.status, StatusCode::kOk);

    // Over max_value_size (1 GiB default): refused at once and the connection closed.
    write.offset = 0;
    write.length = 4ull << 30;
    SendDataRequest(fd, write, "bad");
    response = ReadDataResponse(fd);
    ASSERT_TRUE(response.ok());
    EXPECT_EQ(response->first.status, StatusCode::kInvalidArgument);
    EXPECT_TRUE(PeerCloses(fd));
    ::close(fd);
    ExpectStillServing();
}

TEST_F(BadInputTest, StaleGenerationsAndForeignKeysNeverGetBytes) {
    // The canary's range, read under another generation or another key's name.
    TcpTransportOptions options;
    auto transport = NewTcpTransport(options);
    const ReplicaDesc& r = canary_.object.replicas[0];
    const std::string& address = canary_.locations[0].data_address;
    std::vector<std::byte> out(r.size);
    ASSERT_TRUE(transport->Read(address, Tier::kMemory, "canary", canary_.object.generation,
                                r.offset, out)
                    .ok());
    Status stale = transport->Read(address, Tier::kMemory, "canary",
                                   canary_.object.generation - 1, r.offset, out);
    EXPECT_TRUE(stale.Is(StatusCode::kStaleGeneration)) << stale.ToString();
    Status foreign = transport->Read(address, Tier::kMemory, "other", canary_.object.generation,
                                     r.offset, out);
    EXPECT_TRUE(foreign.Is(StatusCode::kNotFound)) << foreign.ToString();
    Status past = transport->Read(address, Tier::kMemory, "canary", canary_.object.generation,
                                  r.offset + 4096, out);  // runs past the object's range
    EXPECT_FALSE(past.ok());

    // A removed and re-put key: the old generation is refused even if the range is reused.
    ASSERT_TRUE(client().Put("reused", Pattern(1, 50000)).ok());
    auto old = client().Stat("reused");
    ASSERT_TRUE(old.ok());
    ASSERT_TRUE(client().Remove("reused", true).ok());
    ASSERT_TRUE(client().Put("reused", Pattern(2, 50000)).ok());
    std::vector<std::byte> buf(50000);
    Status st = transport->Read(old->locations[0].data_address, Tier::kMemory, "reused",
                                old->object.generation, old->object.replicas[0].offset, buf);
    EXPECT_FALSE(st.ok()) << "read an older incarnation's range";
    ExpectStillServing();
}

// ---- the bad-input matrix (docs/BAD_INPUT.md): one named test per row group ----

TEST_F(BadInputTest, TruncatedRpcFramesDropOnlyThatConnection) {
    // A frame announcing 100 bytes, 10 sent, then silence: the server waits, then the close
    // ends it.
    int fd = RawConnect(server_->rpc_port);
    ASSERT_GE(fd, 0);
    uint32_t frame = htonl(100);
    SendAll(fd, &frame, sizeof frame);
    SendAll(fd, "0123456789", 10);
    ::close(fd);
    // A whole frame holding half a Thrift message (strict version word, then nothing): that
    // connection waits for the rest (until the peer closes it or the server's idle timeout),
    // and every other connection is served meanwhile.
    int half = RawConnect(server_->rpc_port);
    ASSERT_GE(half, 0);
    unsigned char message[8] = {0, 0, 0, 4, 0x80, 0x01, 0x00, 0x01};
    SendAll(half, message, sizeof message);
    ExpectStillServing();
    ::close(half);
    // A frame shorter than its own length word.
    fd = RawConnect(server_->rpc_port);
    ASSERT_GE(fd, 0);
    SendAll(fd, "\x00\x00", 2);
    ::close(fd);
    ExpectStillServing();
}

TEST_F(BadInputTest, BadKeysSizesAndBatchesInRpcsAreRefused) {
    RawMaster raw(server_->rpc_port);
    raw.Hello();
    rpc::HelloReply hello;
    raw.client->Hello(hello, rpc::g_mooncake_constants.PROTOCOL_VERSION, "", "bad-input", "");
    const int64_t cid = hello.client_id;
    rpc::PutStartReply put;
    // Negative and zero sizes.
    ExpectStoreError(rpc::ErrorCode::INVALID_ARGUMENT,
                     [&] { raw.client->PutStart(put, cid, "neg", -1, 0, {}); });
    ExpectStoreError(rpc::ErrorCode::INVALID_ARGUMENT,
                     [&] { raw.client->PutStart(put, cid, "zero", 0, 0, {}); });
    rpc::Replica staged;
    ExpectStoreError(rpc::ErrorCode::INVALID_ARGUMENT,
                     [&] { raw.client->PromotionAllocStart(staged, 1, "k", 1, -5); });
    rpc::PutStartItem item;
    item.key = "neg-batch";
    item.size = -7;
    std::vector<rpc::PutStartResult> results;
    raw.client->BatchPutStart(results, cid, {item}, 0);
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].outcome.code, rpc::ErrorCode::INVALID_ARGUMENT);
    // Empty, oversized and NUL-bearing keys.
    ExpectStoreError(rpc::ErrorCode::INVALID_ARGUMENT,
                     [&] { raw.client->PutStart(put, cid, "", 10, 0, {}); });
    ExpectStoreError(rpc::ErrorCode::INVALID_ARGUMENT,
                     [&] { raw.client->PutStart(put, cid, std::string(4097, 'k'), 10, 0, {}); });
    ExpectStoreError(rpc::ErrorCode::INVALID_ARGUMENT,
                     [&] { raw.client->PutStart(put, cid, std::string("a\0b", 3), 10, 0, {}); });
    rpc::ObjectInfo info;
    ExpectStoreError(rpc::ErrorCode::INVALID_ARGUMENT, [&] { raw.client->Stat(info, ""); });
    ExpectStoreError(rpc::ErrorCode::INVALID_ARGUMENT,
                     [&] { raw.client->GetReplicaList(info, std::string(5000, 'x')); });
    // Unknown keys.
    ExpectStoreError(rpc::ErrorCode::NOT_FOUND, [&] { raw.client->Stat(info, "no-such-key"); });
    ExpectStoreError(rpc::ErrorCode::NOT_FOUND,
                     [&] { raw.client->GetReplicaList(info, "no-such-key"); });
    ExpectStoreError(rpc::ErrorCode::NOT_FOUND, [&] { raw.client->Remove("no-such-key", true); });
    EXPECT_FALSE(raw.client->Exists("no-such-key", false));
    std::vector<rpc::ManualResult> manual;
    raw.client->Promote(manual, {"no-such-key"}, false);
    ASSERT_EQ(manual.size(), 1u);
    EXPECT_EQ(manual[0].outcome.code, rpc::ErrorCode::NOT_FOUND);
    // PutEnd for a key never started, and with the wrong generation.
    ExpectStoreError(rpc::ErrorCode::NOT_FOUND, [&] { raw.client->PutEnd(cid, "never", 1); });
    raw.client->PutStart(put, cid, "half", 100, 0, {});
    EXPECT_THROW(raw.client->PutEnd(cid, "half", put.generation + 1), rpc::StoreError);
    // Another (unknown) client id cannot finish or revoke it.
    EXPECT_THROW(raw.client->PutEnd(cid + 12345, "half", put.generation), rpc::StoreError);
    EXPECT_THROW(raw.client->PutRevoke(cid + 12345, "half", put.generation), rpc::StoreError);
    raw.client->PutRevoke(cid, "half", put.generation);
    EXPECT_FALSE(raw.client->Exists("half", false));
    // Batches over the limit, unknown tiers, bad knobs.
    std::vector<std::string> many(rpc::kMaxBatchKeys + 1, "k");
    std::vector<rpc::ObjectResult> objects;
    ExpectStoreError(rpc::ErrorCode::INVALID_ARGUMENT,
                     [&] { raw.client->BatchGetReplicaList(objects, many); });
    rpc::ListRequest list;
    list.__set_tier(static_cast<rpc::Tier::type>(7));
    rpc::ListReply page;
    ExpectStoreError(rpc::ErrorCode::INVALID_ARGUMENT, [&] { raw.client->List(page, list); });
    std::vector<rpc::KnobInfo> knobs;
    rpc::KnobAssignment a;
    a.name = "no_such_knob";
    a.value = "1";
    ExpectStoreError(rpc::ErrorCode::INVALID_ARGUMENT,
                     [&] { raw.client->TuneSet(knobs, {a}, false); });
    a.name = "promotion_admission_threshold";
    a.value = "-1";
    ExpectStoreError(rpc::ErrorCode::INVALID_ARGUMENT,
                     [&] { raw.client->TuneSet(knobs, {a}, false); });
    ExpectStoreError(rpc::ErrorCode::INVALID_ARGUMENT,
                     [&] { raw.client->TuneSet(knobs, {}, false); });
    ExpectStillServing();
}

TEST_F(BadInputTest, OversizedRpcStringIsRefused) {
    // A key of 9 MiB is over the protocol's string limit (8 MiB): the connection is dropped
    // before the handler runs.
    RawMaster raw(server_->rpc_port);
    raw.Hello();
    EXPECT_ANY_THROW(raw.client->Exists(std::string(9 << 20, 'k'), false));
    ExpectStillServing();
}

// Each malformed data header: an INVALID_ARGUMENT response naming the problem, then a close.
TEST_F(BadInputTest, MalformedDataHeadersAreRefusedAndClosed) {
    data::RequestHeader read;
    read.op = data::Op::kRead;
    read.key_length = 6;
    read.generation = canary_.object.generation;
    read.length = 10;
    struct Case {
        const char* what;
        std::function<void(data::RequestBytes&)> poke;
        const char* says;
    };
    auto set32 = [](data::RequestBytes& b, size_t at, uint32_t v) {
        for (int i = 0; i < 4; ++i) b[at + i] = static_cast<std::byte>((v >> (8 * i)) & 0xFF);
    };
    auto set64 = [](data::RequestBytes& b, size_t at, uint64_t v) {
        for (int i = 0; i < 8; ++i) b[at + i] = static_cast<std::byte>((v >> (8 * i)) & 0xFF);
    };
    const std::vector<Case> cases = {
        {"version", [](auto& b) { b[4] = std::byte{9}; }, "version 9"},
        {"op", [](auto& b) { b[6] = std::byte{77}; }, "unknown data channel op"},
        {"tier", [](auto& b) { b[7] = std::byte{5}; }, "unknown tier"},
        {"flags in version 1", [&](auto& b) { set32(b, 12, 1); }, "flags must be 0 in a version 1"},
        {"end-put flag on a read", [&](auto& b) {
             b[4] = std::byte{2};
             set32(b, 12, data::kFlagEndPut);
         }, "only valid on a write"},
        {"unknown flag on a write", [&](auto& b) {
             b[4] = std::byte{2};
             b[6] = std::byte{2};  // write
             set32(b, 12, 0x100);
         }, "unknown request flags"},
        {"version 2 without flags", [](auto& b) { b[4] = std::byte{2}; }, "version 2 header"},
        {"key length 0", [&](auto& b) { set32(b, 8, 0); }, "key length 0"},
        {"key length 5000", [&](auto& b) { set32(b, 8, 5000); }, "key length 5000"},
        {"generation 0", [&](auto& b) { set64(b, 16, 0); }, "no generation"},
        {"overflow", [&](auto& b) { set64(b, 24, ~0ull); }, "overflows"},
        {"token too long", [&](auto& b) {
             b[6] = std::byte{1};  // hello
             set32(b, 8, 0);
             set64(b, 32, 5000);
         }, "token too long"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.what);
        int fd = RawConnect(server_->data_port);
        ASSERT_GE(fd, 0);
        auto bytes = data::SerializeRequest(read);
        c.poke(bytes);
        SendAll(fd, bytes.data(), bytes.size());
        auto response = ReadDataResponse(fd);
        ASSERT_TRUE(response.ok()) << response.status().ToString();
        EXPECT_EQ(response->first.status, StatusCode::kInvalidArgument);
        EXPECT_NE(response->second.find(c.says), std::string::npos) << response->second;
        EXPECT_TRUE(PeerCloses(fd));
        ::close(fd);
    }
    ExpectStillServing();
}

TEST_F(BadInputTest, ShortDataRequestsLoseNothing) {
    // Half a header, then a close.
    int fd = RawConnect(server_->data_port);
    ASSERT_GE(fd, 0);
    auto hello_bytes = data::SerializeRequest(data::RequestHeader{data::Op::kHello});
    SendAll(fd, hello_bytes.data(), 20);
    ::close(fd);
    // A write into a staged put's range that stops after 100 of 1000 bytes: the put cannot
    // complete with those bytes readable, and nothing else is touched.
    RawMaster raw(server_->rpc_port);
    rpc::HelloReply hello;
    raw.client->Hello(hello, rpc::g_mooncake_constants.PROTOCOL_VERSION, "", "short", "");
    rpc::PutStartReply put;
    raw.client->PutStart(put, hello.client_id, "short", 1000, 0, {});
    fd = RawConnect(server_->data_port);
    ASSERT_GE(fd, 0);
    SendDataRequest(fd, data::RequestHeader{data::Op::kHello});
    ASSERT_EQ(ReadDataResponse(fd)->first.status, StatusCode::kOk);
    data::RequestHeader write;
    write.op = data::Op::kWrite;
    write.key_length = 5;
    write.generation = static_cast<Generation>(put.generation);
    write.offset = static_cast<uint64_t>(put.replica.offset);
    write.length = 1000;
    SendDataRequest(fd, write, "short", std::string(100, 'x'));
    ::close(fd);
    // A short read request (key cut off) on another connection.
    fd = RawConnect(server_->data_port);
    ASSERT_GE(fd, 0);
    SendDataRequest(fd, data::RequestHeader{data::Op::kHello});
    ASSERT_EQ(ReadDataResponse(fd)->first.status, StatusCode::kOk);
    data::RequestHeader read;
    read.op = data::Op::kRead;
    read.key_length = 6;
    read.generation = canary_.object.generation;
    read.offset = canary_.object.replicas[0].offset;
    read.length = 10;
    SendDataRequest(fd, read, "can");
    ::close(fd);
    raw.client->PutRevoke(hello.client_id, "short", put.generation);
    auto exists = client().Exists("short");
    EXPECT_TRUE(exists.ok() && !*exists);
    ExpectStillServing();
}

TEST(BadConfigFileTest, EachBadFileStopsTheDaemonWithExitCode2AndTheLine) {
    TempDir dir;
    struct Case {
        const char* name;
        const char* text;
        const char* says;
    };
    const Case cases[] = {
        {"unknown", "enable_offload = true\nno_such_knob = 1\n", "unknown.conf:2: unknown knob"},
        {"badvalue", "dram_size = lots\n", "badvalue.conf:1:"},
        {"badbool", "enable_offload = maybe\n", "badbool.conf:1:"},
        {"duplicate", "promotion_queue_limit = 10\n# again\npromotion_queue_limit = 20\n",
         "duplicate.conf:3: 'promotion_queue_limit' is already set on line 1"},
        {"range", "promotion_admission_threshold = 300\n", "0..255"},
        {"noequals", "promotion_queue_limit 10\n", "noequals.conf:1: expected 'name = value'"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        std::string path = dir.Sub(std::string(c.name) + ".conf");
        std::ofstream(path) << c.text;
        Daemon d(c.name, {"--config=" + path}, dir);
        ASSERT_TRUE(d.Start());
        int rc = -1;
        ASSERT_TRUE(WaitFor([&] { return (rc = d.ExitedWith()) >= 0; }));
        EXPECT_EQ(rc, 2);
        EXPECT_NE(d.Log().find(c.says), std::string::npos) << d.Log();
    }
    // Missing, and a directory where the file should be.
    for (std::string path : {dir.Sub("missing.conf"), dir.path()}) {
        Daemon d("unreadable", {"--config=" + path}, dir);
        ASSERT_TRUE(d.Start());
        int rc = -1;
        ASSERT_TRUE(WaitFor([&] { return (rc = d.ExitedWith()) >= 0; }));
        EXPECT_EQ(rc, 2) << d.Log();
        EXPECT_NE(d.Log().find("--config"), std::string::npos) << d.Log();
    }
}

TEST(BadFlagsTest, OutOfRangeKnobsAndBadConfigFilesStopTheDaemonWithExitCode2) {
    TempDir dir;
    Daemon bad_flag("bad-flag", {"--promotion_admission_threshold=256"}, dir);
    ASSERT_TRUE(bad_flag.Start());
    ASSERT_TRUE(WaitFor([&] { return !bad_flag.running() || bad_flag.ExitedWith() >= 0; }));
    EXPECT_NE(bad_flag.Log().find("0..255"), std::string::npos) << bad_flag.Log();

    std::string conf = dir.Sub("bad.conf");
    std::ofstream(conf) << "# comment\nenable_offload = true\neviction_ratio = 2\n";
    Daemon bad_file("bad-file", {"--config=" + conf}, dir);
    ASSERT_TRUE(bad_file.Start());
    int rc = -1;
    ASSERT_TRUE(WaitFor([&] { return (rc = bad_file.ExitedWith()) >= 0; }));
    EXPECT_EQ(rc, 2);
    EXPECT_NE(bad_file.Log().find("bad.conf:3"), std::string::npos) << bad_file.Log();

    Daemon unknown("unknown-flag", {"--no_such_knob=1"}, dir);
    ASSERT_TRUE(unknown.Start());
    ASSERT_TRUE(WaitFor([&] { return (rc = unknown.ExitedWith()) >= 0; }));
    EXPECT_EQ(rc, 2);

    // Listening beyond loopback without a token is refused.
    Daemon open("no-token", {"--listen=0.0.0.0:" + std::to_string(FreePort())}, dir);
    ASSERT_TRUE(open.Start());
    ASSERT_TRUE(WaitFor([&] { return (rc = open.ExitedWith()) >= 0; }));
    EXPECT_EQ(rc, 2);
    EXPECT_NE(open.Log().find("auth_token_file"), std::string::npos) << open.Log();
}

TEST(BadFlagsTest, ConfigFileIsReadAndFlagsOverrideIt) {
    TempDir dir;
    uint16_t port = FreePort();
    std::string conf = dir.Sub("good.conf");
    std::ofstream(conf) << "promotion_admission_threshold = 7\n"
                        << "dram_size = 8MiB\nmetrics_port = 0\n"
                        << "data_port = " << FreePort() << "\n";
    Daemon d("configured",
             {"--config=" + conf, "--listen=127.0.0.1:" + std::to_string(port),
              "--promotion_admission_threshold=9", "--promotion_on_hit",
              "--enable_offload=false"},
             dir);
    ASSERT_TRUE(d.Start());
    auto client = ConnectWhenUp("127.0.0.1:" + std::to_string(port));
    ASSERT_NE(client, nullptr) << d.Log();
    auto knobs = client->TuneGet();
    ASSERT_TRUE(knobs.ok());
    std::map<std::string, std::string> values;
    for (const KnobInfo& k : *knobs) values[k.name] = k.value;
    EXPECT_EQ(values["promotion_admission_threshold"], "9");
    EXPECT_EQ(values["dram_size"], "8MiB");
    EXPECT_EQ(values["promotion_on_hit"], "true");
    EXPECT_EQ(values["enable_offload"], "false");

    // tune set --persist writes the file: the knob's line in place, a new knob appended.
    ASSERT_TRUE(client->TuneSet({{"promotion_admission_threshold", "5"},
                                 {"eviction_ratio", "0.1"}},
                                /*persist=*/true)
                    .ok());
    std::ifstream in(conf);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text.rfind("promotion_admission_threshold = 5\n", 0), 0u) << text;
    EXPECT_NE(text.find("\neviction_ratio = 0.1\n"), std::string::npos) << text;
    EXPECT_NE(text.find("dram_size = 8MiB"), std::string::npos) << text;
    // Refused values change neither the daemon nor the file.
    auto bad = client->TuneSet({{"promotion_admission_threshold", "999"}}, true);
    EXPECT_TRUE(bad.status().Is(StatusCode::kInvalidArgument));
    std::ifstream again(conf);
    std::string after((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>());
    EXPECT_EQ(after, text);
}

TEST(BadFlagsTest, PersistWithoutAConfigFileIsRefused) {
    Standalone s({"--dram_size=8MiB"});
    ASSERT_NE(s.client, nullptr);
    auto r = s.client->TuneSet({{"promotion_admission_threshold", "3"}}, true);
    EXPECT_TRUE(r.status().Is(StatusCode::kInvalidArgument)) << r.status().ToString();
    auto knobs = s.client->TuneGet();
    for (const KnobInfo& k : *knobs) {
        if (k.name == "promotion_admission_threshold") {
            EXPECT_EQ(k.value, "2");  // nothing applied
        }
    }
}

}  // namespace
}  // namespace mooncake::test
