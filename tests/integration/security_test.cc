// The access token (issue #13), against real daemons on loopback:
//   (a) a session without the token is read-only: every call that needs the token is refused
//       (one assertion per call, driven by the access table so a new method cannot be missed),
//       reads and inspection work, the data channel refuses bytes;
//   (b) a wrong token is refused at Hello (control RPC, data channel, node service);
//   (c) the right token (and the client-side ways to give it) allows everything;
//   (d) mooncaked refuses to listen beyond loopback without --auth_token_file;
//   (e) a cluster with a token works end to end; a node with a wrong token or none cannot
//       register.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TSocket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "MasterService.h"
#include "NodeService.h"
#include "node/access.h"
#include "gtest/gtest.h"
#include "mooncake_constants.h"
#include "tests/integration/harness.h"
#include "thrift/auth_token.h"
#include "net/data_protocol.h"

namespace mooncake::test {
namespace {

using apache::thrift::protocol::TBinaryProtocol;
using apache::thrift::transport::TFramedTransport;
using apache::thrift::transport::TSocket;

constexpr const char* kToken = "correct horse battery staple";

std::string WriteTokenFile(const TempDir& dir, const std::string& name, const std::string& text) {
    std::string path = dir.Sub(name);
    std::ofstream(path) << text;
    return path;
}

template <typename Conn>
struct Raw {
    Raw(uint16_t port) {
        socket = std::make_shared<TSocket>("127.0.0.1", port);
        socket->setRecvTimeout(5000);
        transport = std::make_shared<TFramedTransport>(socket);
        client = std::make_unique<Conn>(std::make_shared<TBinaryProtocol>(transport));
        transport->open();
    }
    std::shared_ptr<TSocket> socket;
    std::shared_ptr<TFramedTransport> transport;
    std::unique_ptr<Conn> client;
};
using RawMaster = Raw<rpc::MasterServiceClient>;
using RawNode = Raw<rpc::NodeServiceClient>;

// The StoreError `call` throws; code OK (and a failure) if it throws none.
template <typename Fn>
rpc::StoreError ErrorOf(Fn&& call) {
    try {
        call();
    } catch (const rpc::StoreError& e) {
        return e;
    }
    rpc::StoreError none;
    none.code = rpc::ErrorCode::OK;
    return none;
}

bool IsTokenRefusal(const Status& st) {
    return st.Is(StatusCode::kIllegalClient) &&
           st.message().find("needs the access token") != std::string::npos;
}

#define EXPECT_TOKEN_REFUSAL(status_expr)                                   \
    do {                                                                    \
        Status st_ = (status_expr);                                         \
        EXPECT_TRUE(IsTokenRefusal(st_)) << #status_expr << ": " << st_.ToString(); \
    } while (0)

void SendAll(int fd, std::string_view bytes) {
    ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
}

void SendData(int fd, const data::RequestHeader& h, std::string_view key = {},
              std::string_view payload = {}) {
    auto bytes = data::SerializeRequest(h);
    SendAll(fd, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    if (!key.empty()) SendAll(fd, key);
    if (!payload.empty()) SendAll(fd, payload);
}

// One response: its status and message; kIoError when the peer closed instead.
Status ReadData(int fd, std::string* payload = nullptr) {
    data::ResponseBytes raw;
    size_t got = 0;
    while (got < raw.size()) {
        ssize_t n = ::recv(fd, raw.data() + got, raw.size() - got, 0);
        if (n <= 0) return Status::IoError("closed");
        got += static_cast<size_t>(n);
    }
    auto h = data::ParseResponse(raw);
    if (!h.ok()) return h.status();
    std::string rest(h->message_length + h->length, '\0');
    size_t m = 0;
    while (m < rest.size()) {
        ssize_t n = ::recv(fd, rest.data() + m, rest.size() - m, 0);
        if (n <= 0) return Status::IoError("short response");
        m += static_cast<size_t>(n);
    }
    if (payload != nullptr) *payload = rest.substr(h->message_length);
    return Status(h->status, rest.substr(0, h->message_length));
}

bool PeerCloses(int fd) {
    char buf[256];
    for (;;) {
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n == 0) return true;
        if (n < 0) return errno == ECONNRESET;
    }
}

std::string KnobValue(Client& client, const std::string& name) {
    auto knobs = client.TuneGet();
    if (!knobs.ok()) return "<" + knobs.status().ToString() + ">";
    for (const KnobInfo& k : *knobs) {
        if (k.name == name) return k.value;
    }
    return "<missing>";
}

class SecurityTest : public ::testing::Test {
protected:
    void SetUp() override {
        token_file_ = WriteTokenFile(tokens_, "token", std::string(kToken) + "\n");
        server_ = std::make_unique<Standalone>(
            std::vector<std::string>{"--dram_size=32MiB", "--enable_offload",
                                     "--default_kv_lease_ttl=100",
                                     "--auth_token_file=" + token_file_},
            "64MiB");
        // The harness's client presents no token: a read-only session.
        ASSERT_NE(server_->client, nullptr) << server_->daemon->Log();
        ClientOptions options;
        options.auth_token = kToken;
        auto admin = Client::Connect(server_->address, options);
        ASSERT_TRUE(admin.ok()) << admin.status().ToString();
        admin_ = std::move(*admin);
        ASSERT_TRUE(admin_->Put("canary", Pattern(9, 100000)).ok());
        canary_ = *admin_->Stat("canary");
    }
    Client& reader() { return *server_->client; }

    // Nothing a refused call could have touched changed, and the store still serves.
    void ExpectUnchanged() {
        EXPECT_EQ(server_->daemon->ExitedWith(), -1) << "daemon exited";
        auto now = admin_->Stat("canary");
        ASSERT_TRUE(now.ok()) << now.status().ToString();
        EXPECT_EQ(now->object.generation, canary_.object.generation);
        EXPECT_EQ(now->object.replicas.size(), canary_.object.replicas.size());
        auto got = admin_->Get("canary");
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        EXPECT_TRUE(*got == Pattern(9, 100000));
        EXPECT_EQ(KnobValue(*admin_, "promotion_admission_threshold"), "2");
        auto nodes = admin_->Nodes();
        ASSERT_TRUE(nodes.ok());
        EXPECT_EQ(nodes->size(), 1u);  // no fake node registered
        EXPECT_FALSE(*admin_->Exists("intruder"));
    }

    TempDir tokens_;
    std::string token_file_;
    std::unique_ptr<Standalone> server_;
    std::unique_ptr<Client> admin_;
    ObjectInfo canary_;
};

// (a) through the client library: each mutating or admin call, one assertion each.
TEST_F(SecurityTest, ReadOnlySessionIsRefusedEveryMutatingCallOfTheClientLibrary) {
    const std::string key = "intruder";
    const std::vector<std::string> keys = {"canary"};
    EXPECT_TOKEN_REFUSAL(reader().Put(key, "bytes"));
    std::string v = "bytes";
    std::vector<std::pair<std::string, std::span<const std::byte>>> items = {
        {key, std::as_bytes(std::span(v.data(), v.size()))}};
    auto batch = reader().BatchPut(items);
    ASSERT_EQ(batch.size(), 1u);
    EXPECT_TOKEN_REFUSAL(batch[0]);
    EXPECT_TOKEN_REFUSAL(reader().Remove("canary", /*force=*/true));
    auto removed = reader().BatchRemove(keys, true);
    ASSERT_EQ(removed.size(), 1u);
    EXPECT_TOKEN_REFUSAL(removed[0]);
    EXPECT_TOKEN_REFUSAL(reader().RemoveByPrefix("", true).status());
    EXPECT_TOKEN_REFUSAL(reader().TuneSet({{"promotion_admission_threshold", "9"}}).status());
    EXPECT_TOKEN_REFUSAL(reader().Promote(keys, true).status());
    EXPECT_TOKEN_REFUSAL(reader().Offload(keys).status());
    EXPECT_TOKEN_REFUSAL(reader().Evict(keys).status());
    EXPECT_TOKEN_REFUSAL(reader().Scrub(kNoNode, std::chrono::seconds(10)).status());
    EXPECT_TOKEN_REFUSAL(reader().TenantSet("alpha", 0, 0).status());
    EXPECT_TOKEN_REFUSAL(reader().TenantRemove("alpha", false).status());
    // Bytes: the data channel refuses a read without the token.
    auto got = reader().Get("canary");
    EXPECT_TOKEN_REFUSAL(got.status());
    ExpectUnchanged();
}

// (a) on the wire: every method the access table says needs the token is refused to a
// read-only session. The table drives the loop, so a method added without a case here fails.
TEST_F(SecurityTest, ReadOnlySessionIsRefusedEveryTokenMethodOnTheWire) {
    RawMaster raw(server_->rpc_port);
    rpc::HelloReply hello;
    raw.client->Hello(hello, rpc::g_mooncake_constants.PROTOCOL_VERSION, "", "read-only", "");
    const int64_t gen = static_cast<int64_t>(canary_.object.generation);
    const int64_t cid = hello.client_id;
    auto& c = *raw.client;
    rpc::NodeSpec spec;
    spec.name = "intruder:1";
    spec.data_address = "127.0.0.1:9";
    spec.segment_capacity = 1 << 20;
    rpc::KeyGeneration kg;
    kg.key = "canary";
    kg.generation = gen;
    rpc::PutStartItem item;
    item.key = "intruder";
    item.size = 10;
    rpc::DiskReplicaReport report;
    report.key = "intruder";
    report.generation = 1;
    report.size = 10;
    rpc::MemoryReplicaReport range;
    range.key = "intruder";
    range.generation = 1;
    range.size = 10;
    range.offset = 0;
    rpc::KnobAssignment assign;
    assign.name = "promotion_admission_threshold";
    assign.value = "9";
    const NodeId node = canary_.object.replicas[0].node;
    const auto n = static_cast<int64_t>(node);

    const std::map<std::string, std::function<void()>> calls = {
        {"PutStart", [&] { rpc::PutStartReply r; c.PutStart(r, cid, "intruder", 10, 0, {}); }},
        {"PutEnd", [&] { c.PutEnd(cid, "canary", gen); }},
        {"PutRevoke", [&] { c.PutRevoke(cid, "canary", gen); }},
        {"Remove", [&] { c.Remove("canary", true); }},
        {"BatchPutStart", [&] { std::vector<rpc::PutStartResult> r; c.BatchPutStart(r, cid, {item}, 0); }},
        {"BatchPutEnd", [&] { std::vector<rpc::Outcome> r; c.BatchPutEnd(r, cid, {kg}); }},
        {"BatchPutRevoke", [&] { std::vector<rpc::Outcome> r; c.BatchPutRevoke(r, cid, {kg}); }},
        {"BatchRemove", [&] { std::vector<rpc::Outcome> r; c.BatchRemove(r, {"canary"}, true); }},
        {"RemoveByPrefix", [&] { rpc::RemovePrefixReply r; c.RemoveByPrefix(r, "", true); }},
        {"RegisterNode", [&] { c.RegisterNode(spec); }},
        {"Heartbeat", [&] { rpc::HeartbeatReply r; c.Heartbeat(r, n, 0); }},
        {"UnregisterNode", [&] { c.UnregisterNode(n); }},
        {"RegisterDiskReplicas", [&] { std::vector<rpc::Outcome> r; c.RegisterDiskReplicas(r, n, {report}); }},
        {"RegisterMemoryReplicas", [&] { std::vector<rpc::Outcome> r; c.RegisterMemoryReplicas(r, n, {range}); }},
        {"ReportDiskReplicaDropped", [&] { c.ReportDiskReplicaDropped(n, "canary", gen); }},
        {"ReportNodeHealth", [&] { c.ReportNodeHealth(n, rpc::NodeHealth{}); }},
        {"OffloadObjectHeartbeat", [&] { std::vector<rpc::OffloadTask> r; c.OffloadObjectHeartbeat(r, n, 10, 0); }},
        {"NotifyOffloadSuccess", [&] { c.NotifyOffloadSuccess(n, "canary", gen); }},
        {"NotifyOffloadFailure", [&] { c.NotifyOffloadFailure(n, "canary", gen); }},
        {"PromotionObjectHeartbeat", [&] { std::vector<rpc::PromotionTask> r; c.PromotionObjectHeartbeat(r, n, 10, 0); }},
        {"PromotionAllocStart", [&] { rpc::Replica r; c.PromotionAllocStart(r, n, "canary", gen, 100000); }},
        {"NotifyPromotionSuccess", [&] { c.NotifyPromotionSuccess(n, "canary", gen); }},
        {"NotifyPromotionFailure", [&] { c.NotifyPromotionFailure(n, "canary", gen); }},
        {"TuneSet", [&] { std::vector<rpc::KnobInfo> r; c.TuneSet(r, {assign}, false); }},
        {"Promote", [&] { std::vector<rpc::ManualResult> r; c.Promote(r, {"canary"}, true); }},
        {"Offload", [&] { std::vector<rpc::ManualResult> r; c.Offload(r, {"canary"}); }},
        {"Evict", [&] { std::vector<rpc::ManualResult> r; c.Evict(r, {"canary"}); }},
        {"Scrub", [&] { std::vector<rpc::ScrubReply> r; c.Scrub(r, 0); }},
        {"TenantSet", [&] { rpc::TenantReport r; c.TenantSet(r, "alpha", 0, 0); }},
        {"TenantRemove", [&] { rpc::TenantReport r; c.TenantRemove(r, "alpha", false); }},
    };
    size_t checked = 0;
    for (const MethodPermission& m : MasterMethodPermissions()) {
        if (m.needs != Permission::kToken && m.needs != Permission::kCluster) continue;
        SCOPED_TRACE(std::string(m.method));
        auto it = calls.find(std::string(m.method));
        ASSERT_NE(it, calls.end()) << "no refusal case for " << m.method;
        rpc::StoreError e = ErrorOf(it->second);
        EXPECT_EQ(e.code, rpc::ErrorCode::ILLEGAL_CLIENT) << m.method << ": " << e.message;
        EXPECT_NE(e.message.find(std::string(m.method) + " needs the access token"),
                  std::string::npos)
            << e.message;
        ++checked;
    }
    EXPECT_EQ(checked, calls.size());
    ExpectUnchanged();
}

// (a) reads and inspection work without the token.
TEST_F(SecurityTest, ReadOnlySessionReadsAndInspects) {
    auto stat = reader().Stat("canary");
    ASSERT_TRUE(stat.ok()) << stat.status().ToString();
    EXPECT_EQ(stat->object.size, 100000u);
    auto replicas = reader().GetReplicaList("canary");
    ASSERT_TRUE(replicas.ok()) << replicas.status().ToString();
    EXPECT_FALSE(replicas->object.replicas.empty());
    EXPECT_TRUE(*reader().Exists("canary"));
    const std::vector<std::string> keys = {"canary", "absent"};
    auto exists = reader().BatchExists(keys);
    ASSERT_EQ(exists.size(), 2u);
    EXPECT_TRUE(exists[0].ok() && *exists[0]);
    auto list = reader().ListAll(ListOptions{});
    ASSERT_TRUE(list.ok()) << list.status().ToString();
    EXPECT_EQ(list->size(), 1u);
    auto nodes = reader().Nodes();
    ASSERT_TRUE(nodes.ok());
    EXPECT_EQ(nodes->size(), 1u);
    EXPECT_TRUE(reader().Tasks().ok());
    EXPECT_TRUE(reader().Hot(10).ok());
    EXPECT_EQ(KnobValue(reader(), "promotion_admission_threshold"), "2");
    auto metrics = reader().MetricsText();
    ASSERT_TRUE(metrics.ok());
    EXPECT_NE(metrics->find("rpc_request_seconds"), std::string::npos);
    ExpectUnchanged();
}

// (a) the data channel: a tokenless hello opens a connection that may only ping; reads and
// writes are refused (and the stream stays in sync).
TEST_F(SecurityTest, DataChannelRefusesBytesWithoutTheToken) {
    int fd = RawConnect(server_->data_port);
    ASSERT_GE(fd, 0);
    data::RequestHeader hello;
    hello.op = data::Op::kHello;
    SendData(fd, hello);
    ASSERT_TRUE(ReadData(fd).ok());

    const ReplicaDesc& r = canary_.object.replicas[0];
    data::RequestHeader read;
    read.op = data::Op::kRead;
    read.key_length = 6;
    read.generation = canary_.object.generation;
    read.offset = r.offset;
    read.length = 100;
    SendData(fd, read, "canary");
    Status st = ReadData(fd);
    EXPECT_TOKEN_REFUSAL(st);

    data::RequestHeader write = read;
    write.op = data::Op::kWrite;
    write.length = 10;
    SendData(fd, write, "canary", "0123456789");
    st = ReadData(fd);
    EXPECT_TOKEN_REFUSAL(st);

    data::RequestHeader ping;
    ping.op = data::Op::kPing;
    SendData(fd, ping);
    EXPECT_TRUE(ReadData(fd).ok()) << "the connection should stay usable";
    ::close(fd);

    // With the token, the same read is served.
    fd = RawConnect(server_->data_port);
    ASSERT_GE(fd, 0);
    hello.length = std::string_view(kToken).size();
    SendData(fd, hello, {}, kToken);
    ASSERT_TRUE(ReadData(fd).ok());
    SendData(fd, read, "canary");
    std::string bytes;
    ASSERT_TRUE(ReadData(fd, &bytes).ok());
    EXPECT_EQ(bytes, Pattern(9, 100000).substr(0, 100));
    ::close(fd);
    ExpectUnchanged();
}

// (b) a wrong token: refused at Hello on the control wire and on the data channel.
TEST_F(SecurityTest, WrongTokenIsRefusedAtHello) {
    ClientOptions options;
    options.auth_token = "not the token";
    auto wrong = Client::Connect(server_->address, options);
    ASSERT_FALSE(wrong.ok());
    EXPECT_TRUE(wrong.status().Is(StatusCode::kIllegalClient)) << wrong.status().ToString();
    EXPECT_NE(wrong.status().message().find("auth token refused"), std::string::npos);
    // A prefix, and the token plus a byte: both wrong (no length games).
    options.auth_token = std::string(kToken).substr(0, 5);
    EXPECT_TRUE(Client::Connect(server_->address, options).status().Is(StatusCode::kIllegalClient));
    options.auth_token = std::string(kToken) + "x";
    EXPECT_TRUE(Client::Connect(server_->address, options).status().Is(StatusCode::kIllegalClient));

    RawMaster raw(server_->rpc_port);
    rpc::HelloReply hello;
    rpc::StoreError e = ErrorOf([&] {
        raw.client->Hello(hello, rpc::g_mooncake_constants.PROTOCOL_VERSION, "wrong", "t", "");
    });
    EXPECT_EQ(e.code, rpc::ErrorCode::ILLEGAL_CLIENT);
    // Still not greeted: even a read is refused on that connection.
    e = ErrorOf([&] { raw.client->Exists("canary", false); });
    EXPECT_EQ(e.code, rpc::ErrorCode::ILLEGAL_CLIENT);

    int fd = RawConnect(server_->data_port);
    ASSERT_GE(fd, 0);
    data::RequestHeader dh;
    dh.op = data::Op::kHello;
    dh.length = 5;
    SendData(fd, dh, {}, "wrong");
    Status st = ReadData(fd);
    EXPECT_TRUE(st.Is(StatusCode::kIllegalClient)) << st.ToString();
    EXPECT_TRUE(PeerCloses(fd));
    ::close(fd);
    ExpectUnchanged();
}

// (c) the right token: everything works.
TEST_F(SecurityTest, RightTokenAllowsEverything) {
    Client& c = *admin_;
    ASSERT_TRUE(c.Put("k1", Pattern(1, 5000)).ok());
    EXPECT_EQ(*c.Get("k1"), Pattern(1, 5000));
    const std::vector<std::string> keys = {"k1"};
    auto off = c.Offload(keys);
    ASSERT_TRUE(off.ok()) << off.status().ToString();
    EXPECT_TRUE((*off)[0].status.ok()) << (*off)[0].status.ToString();
    ASSERT_TRUE(WaitFor([&] {
        auto i = c.Stat("k1");
        return i.ok() && HasTier(*i, Tier::kLocalDisk);
    }));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the Get's lease ends
    auto ev = c.Evict(keys);
    ASSERT_TRUE(ev.ok());
    EXPECT_TRUE((*ev)[0].status.ok()) << (*ev)[0].status.ToString();
    ASSERT_TRUE(WaitFor([&] {
        auto i = c.Stat("k1");
        return i.ok() && !HasTier(*i, Tier::kMemory);
    }));
    EXPECT_EQ(*c.Get("k1"), Pattern(1, 5000));  // a LOCAL_DISK read, with the token
    auto pr = c.Promote(keys, true);
    ASSERT_TRUE(pr.ok());
    EXPECT_TRUE((*pr)[0].status.ok()) << (*pr)[0].status.ToString();
    ASSERT_TRUE(c.TuneSet({{"promotion_admission_threshold", "3"}}).ok());
    EXPECT_EQ(KnobValue(c, "promotion_admission_threshold"), "3");
    ASSERT_TRUE(c.TuneSet({{"promotion_admission_threshold", "2"}}).ok());
    EXPECT_TRUE(c.Remove("k1", true).ok());
    EXPECT_FALSE(*c.Exists("k1"));
    ExpectUnchanged();
}

// (c) where a client takes its token from: the flag's file, then $MOONCAKE_AUTH_TOKEN_FILE,
// then $MOONCAKE_AUTH_TOKEN; never argv (there is no such flag; see the bats tests).
TEST(ClientTokenTest, FlagFileThenEnvFileThenEnvToken) {
    TempDir dir;
    std::string a = WriteTokenFile(dir, "a", "from-flag\n");
    std::string b = WriteTokenFile(dir, "b", "from-env-file\r\n");
    std::string empty = WriteTokenFile(dir, "empty", "\n");
    unsetenv("MOONCAKE_AUTH_TOKEN_FILE");
    unsetenv("MOONCAKE_AUTH_TOKEN");
    EXPECT_EQ(*ResolveClientToken(""), "");
    setenv("MOONCAKE_AUTH_TOKEN", "from-env", 1);
    EXPECT_EQ(*ResolveClientToken(""), "from-env");
    setenv("MOONCAKE_AUTH_TOKEN_FILE", b.c_str(), 1);
    EXPECT_EQ(*ResolveClientToken(""), "from-env-file");
    EXPECT_EQ(*ResolveClientToken(a), "from-flag");
    setenv("MOONCAKE_AUTH_TOKEN_FILE", dir.Sub("missing").c_str(), 1);
    auto missing = ResolveClientToken("");
    EXPECT_TRUE(missing.status().Is(StatusCode::kInvalidArgument));
    EXPECT_NE(missing.status().message().find("MOONCAKE_AUTH_TOKEN_FILE"), std::string::npos);
    auto blank = ResolveClientToken(empty);
    EXPECT_TRUE(blank.status().Is(StatusCode::kInvalidArgument));
    EXPECT_NE(blank.status().message().find("holds no token"), std::string::npos);
    unsetenv("MOONCAKE_AUTH_TOKEN_FILE");
    unsetenv("MOONCAKE_AUTH_TOKEN");
}

TEST(ClientTokenTest, TokenComparisonIsExact) {
    EXPECT_TRUE(TokenMatches("abc", "abc"));
    EXPECT_FALSE(TokenMatches("abc", "abd"));
    EXPECT_FALSE(TokenMatches("abc", "ab"));
    EXPECT_FALSE(TokenMatches("abc", "abcd"));
    EXPECT_FALSE(TokenMatches("abc", ""));
    EXPECT_FALSE(TokenMatches("a\0c", std::string_view("a\0d", 3)));
    EXPECT_TRUE(Authenticate("", "anything")->authorized);
    EXPECT_FALSE(Authenticate("tok", "")->authorized);
    EXPECT_TRUE(Authenticate("tok", "")->greeted);
    EXPECT_TRUE(Authenticate("tok", "tok")->authorized);
    EXPECT_TRUE(Authenticate("tok", "bad").status().Is(StatusCode::kIllegalClient));
    // Fail closed: a method the table does not know is refused even to a full session.
    EXPECT_TRUE(CheckAccess(MasterMethodPermissions(), "NoSuchCall", Credentials{true, true, {}})
                    .Is(StatusCode::kIllegalClient));
}

int WaitExit(Daemon& d) {
    int rc = -1;
    EXPECT_TRUE(WaitFor([&] { return (rc = d.ExitedWith()) >= 0; })) << d.Log();
    return rc;
}

// (d) beyond loopback only with a token; a token file that cannot be used stops the start.
TEST(SecurityFlagsTest, ListeningBeyondLoopbackNeedsATokenFile) {
    TempDir dir;
    const std::string port = std::to_string(FreePort());
    Daemon open("open", {"--listen=0.0.0.0:" + port, "--advertise=127.0.0.1:" + port,
                         "--metrics_port=0"},
                dir);
    ASSERT_TRUE(open.Start());
    EXPECT_EQ(WaitExit(open), 2);
    EXPECT_NE(open.Log().find("beyond loopback) needs --auth_token_file"), std::string::npos)
        << open.Log();

    Daemon missing("missing", {"--auth_token_file=" + dir.Sub("nope")}, dir);
    ASSERT_TRUE(missing.Start());
    EXPECT_EQ(WaitExit(missing), 2);
    EXPECT_NE(missing.Log().find("cannot read --auth_token_file"), std::string::npos)
        << missing.Log();

    std::string blank = WriteTokenFile(dir, "blank", " \n");
    Daemon empty("empty", {"--auth_token_file=" + blank}, dir);
    ASSERT_TRUE(empty.Start());
    EXPECT_EQ(WaitExit(empty), 2);
    EXPECT_NE(empty.Log().find("holds no token"), std::string::npos) << empty.Log();

    // With a token it starts on the wildcard address and enforces it.
    std::string token = WriteTokenFile(dir, "token", kToken);
    Daemon wide("wide", {"--listen=0.0.0.0:" + port, "--advertise=127.0.0.1:" + port,
                         "--data_port=" + std::to_string(FreePort()), "--metrics_port=0",
                         "--dram_size=8MiB", "--auth_token_file=" + token},
                dir);
    ASSERT_TRUE(wide.Start());
    ClientOptions options;
    options.auth_token = kToken;
    auto client = ConnectWhenUp("127.0.0.1:" + port, std::chrono::seconds(10), options);
    ASSERT_NE(client, nullptr) << wide.Log();
    ASSERT_TRUE(WaitFor([&] { auto n = client->Nodes(); return n.ok() && n->size() == 1; }));
    EXPECT_TRUE(client->Put("wide", "open").ok());
    auto reader = Client::Connect("127.0.0.1:" + port);
    ASSERT_TRUE(reader.ok());
    EXPECT_TOKEN_REFUSAL((*reader)->Put("wide2", "x"));
}

// (e) a cluster with a token: the node authenticates to the master and serves bytes to
// clients holding the token; nodes without the right token never register.
TEST(SecurityClusterTest, ClusterWithATokenWorksAndForeignNodesCannotJoin) {
    TempDir tokens;
    std::string token = WriteTokenFile(tokens, "token", std::string(kToken) + "\n");
    std::string wrong = WriteTokenFile(tokens, "wrong", "not the token\n");
    Cluster c({"--auth_token_file=" + token, "--enable_offload", "--default_kv_lease_ttl=100"});
    ASSERT_NE(c.client, nullptr) << c.master->Log();
    auto& node = c.AddNode("8MiB", true, {"--auth_token_file=" + token});
    ASSERT_TRUE(c.WaitForNodes(1)) << node.daemon->Log();

    ClientOptions options;
    options.auth_token = kToken;
    auto admin = Client::Connect(c.master_address, options);
    ASSERT_TRUE(admin.ok()) << admin.status().ToString();
    Client& a = **admin;
    ASSERT_TRUE(a.Put("clustered", Pattern(5, 200000)).ok());
    EXPECT_EQ(*a.Get("clustered"), Pattern(5, 200000));
    // Offload runs over the node's authenticated master link; the disk read over its data
    // channel with the token.
    const std::vector<std::string> keys = {"clustered"};
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the Get's lease ends
    auto evicted = a.Evict(keys);
    ASSERT_TRUE(evicted.ok()) << evicted.status().ToString();
    EXPECT_TRUE((*evicted)[0].status.ok()) << (*evicted)[0].status.ToString();
    ASSERT_TRUE(WaitFor([&] {
        auto i = a.Stat("clustered");
        return i.ok() && HasTier(*i, Tier::kLocalDisk) && !HasTier(*i, Tier::kMemory);
    })) << node.daemon->Log();
    EXPECT_EQ(*a.Get("clustered"), Pattern(5, 200000));
    // Without the token: metadata yes, bytes no.
    EXPECT_TRUE(c.client->Stat("clustered").ok());
    EXPECT_TOKEN_REFUSAL(c.client->Get("clustered").status());

    // The node's own service: a wrong token is refused at Hello, none gives a read-only view.
    RawNode raw(static_cast<uint16_t>(std::stoi(node.name.substr(node.name.rfind(':') + 1))));
    rpc::HelloReply hello;
    rpc::StoreError e = ErrorOf([&] {
        raw.client->Hello(hello, rpc::g_mooncake_constants.PROTOCOL_VERSION, "wrong", "t");
    });
    EXPECT_EQ(e.code, rpc::ErrorCode::ILLEGAL_CLIENT);
    raw.client->Hello(hello, rpc::g_mooncake_constants.PROTOCOL_VERSION, "", "t");
    rpc::NodeStatus status;
    raw.client->GetStatus(status);
    EXPECT_TRUE(status.registered);

    // A node with the wrong token: refused at Hello, exits 1, never listed.
    auto& intruder = c.AddNode("8MiB", false, {"--auth_token_file=" + wrong});
    EXPECT_EQ(WaitExit(*intruder.daemon), 1);
    EXPECT_NE(intruder.daemon->Log().find("auth token refused"), std::string::npos)
        << intruder.daemon->Log();
    // A node with no token: a read-only session, so RegisterNode is refused; exits 1.
    auto& anonymous = c.AddNode("8MiB", false);
    EXPECT_EQ(WaitExit(*anonymous.daemon), 1);
    EXPECT_NE(anonymous.daemon->Log().find("RegisterNode needs the access token"),
              std::string::npos)
        << anonymous.daemon->Log();
    auto nodes = a.Nodes();
    ASSERT_TRUE(nodes.ok());
    ASSERT_EQ(nodes->size(), 1u);
    EXPECT_EQ((*nodes)[0].spec.name, node.name);
    EXPECT_EQ(*a.Get("clustered"), Pattern(5, 200000));
}

// Tenants' own tokens (issue 34): a client holding one acts in that tenant only, on the
// control wire and on the data channel; the cluster's token stays the administrator's.
class TenantTokenTest : public ::testing::Test {
protected:
    static constexpr const char* kTokenA = "token of tenant a";
    static constexpr const char* kTokenB = "token of tenant b";
    void SetUp() override {
        const std::string cluster = WriteTokenFile(dir_, "token", std::string(kToken) + "\n");
        const std::string tenants = WriteTokenFile(
            dir_, "tenants",
            std::string("# tenant token\n\ntenant-a ") + kTokenA + "\ntenant-b " + kTokenB + "\n");
        server_ = std::make_unique<Standalone>(std::vector<std::string>{
            "--auth_token_file=" + cluster, "--tenant_tokens_file=" + tenants});
        ASSERT_NE(server_->client, nullptr) << server_->daemon->Log();
    }
    Result<std::unique_ptr<Client>> As(const std::string& token, const std::string& tenant) {
        ClientOptions options;
        options.auth_token = token;
        options.tenant = tenant;
        return Client::Connect(server_->address, options);
    }
    double Refused() {
        auto admin = As(kToken, "");
        if (!admin.ok()) return -1;
        return MetricValue(*(*admin)->MetricsText(), "mooncake_tenant_refused_total");
    }
    TempDir dir_;
    std::unique_ptr<Standalone> server_;
};

TEST_F(TenantTokenTest, ATenantsTokenActsInThatTenantOnly) {
    auto a = As(kTokenA, "tenant-a");
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_TRUE((*a)->Put("k", Pattern(1, 5000)).ok());
    // The token alone says the tenant.
    auto implied = As(kTokenA, "");
    ASSERT_TRUE(implied.ok());
    EXPECT_EQ(*(*implied)->Get("k"), Pattern(1, 5000));
    // Naming another tenant is refused, counted and logged.
    for (const std::string& other : {std::string("tenant-b"), std::string("tenant-c")}) {
        auto cross = As(kTokenA, other);
        ASSERT_FALSE(cross.ok()) << other;
        EXPECT_TRUE(cross.status().Is(StatusCode::kIllegalClient)) << cross.status().ToString();
        EXPECT_NE(cross.status().message().find("the token of tenant 'tenant-a' does not grant "
                                                "tenant '" + other + "'"),
                  std::string::npos)
            << cross.status().message();
    }
    EXPECT_EQ(Refused(), 2);
    EXPECT_NE(server_->daemon->Log().find("does not grant tenant 'tenant-b'"), std::string::npos);
    // b's token in b: a's key is not there.
    auto b = As(kTokenB, "tenant-b");
    ASSERT_TRUE(b.ok());
    EXPECT_TRUE((*b)->Get("k").status().Is(StatusCode::kNotFound));
    // No cluster calls with a tenant's token.
    auto tune = (*a)->TuneSet({{"promotion_admission_threshold", "3"}}, false);
    ASSERT_FALSE(tune.ok());
    EXPECT_NE(tune.status().message().find("needs the cluster's token"), std::string::npos)
        << tune.status().message();
    // Without a token, a tenant cannot be named at all, and stored keys cannot be.
    auto anonymous = As("", "tenant-a");
    ASSERT_FALSE(anonymous.ok());
    EXPECT_TRUE(anonymous.status().Is(StatusCode::kIllegalClient));
    EXPECT_TRUE(server_->client->Stat(std::string("\0tenant-a\0k", 11))
                    .status().Is(StatusCode::kInvalidArgument));
    // The administrator may name any tenant.
    auto admin = As(kToken, "tenant-a");
    ASSERT_TRUE(admin.ok());
    EXPECT_EQ(*(*admin)->Get("k"), Pattern(1, 5000));
}

TEST_F(TenantTokenTest, DataChannelServesATenantsTokenItsOwnKeysOnly) {
    auto a = As(kTokenA, "tenant-a");
    auto b = As(kTokenB, "tenant-b");
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_TRUE((*a)->Put("k", Pattern(2, 3000)).ok());
    ASSERT_TRUE((*b)->Put("k", Pattern(3, 3000)).ok());
    int fd = RawConnect(server_->data_port);
    ASSERT_GE(fd, 0);
    data::RequestHeader hello;
    hello.op = data::Op::kHello;
    hello.length = std::string_view(kTokenA).size();
    SendData(fd, hello, {}, kTokenA);
    ASSERT_TRUE(ReadData(fd).ok());
    data::RequestHeader read;
    read.op = data::Op::kRead;
    read.flags = data::kFlagByKey;
    read.length = 1 << 20;
    const std::string own("\0tenant-a\0k", 11), other("\0tenant-b\0k", 11);
    read.key_length = static_cast<uint32_t>(other.size());
    SendData(fd, read, other);
    Status st = ReadData(fd);
    EXPECT_TRUE(st.Is(StatusCode::kIllegalClient)) << st.ToString();
    EXPECT_NE(st.message().find("does not grant"), std::string::npos) << st.message();
    read.key_length = static_cast<uint32_t>(own.size());
    SendData(fd, read, own);
    std::string bytes;
    ASSERT_TRUE(ReadData(fd, &bytes).ok());
    EXPECT_EQ(bytes, Pattern(2, 3000));
    ::close(fd);
}

TEST(TenantTokenFileTest, BadFilesStopTheDaemonWithTheLine) {
    TempDir dir;
    const std::string cluster = WriteTokenFile(dir, "token", "cluster\n");
    struct Case {
        std::string text;
        std::string says;
    };
    for (const Case& c : {Case{"a/b t1\n", "line 1: tenant name"},
                          Case{"a t1\nb\n", "line 2: a tenant without a token"},
                          Case{"a t1\na t2\n", "line 2: tenant 'a' named twice"},
                          Case{"a t1\nb t1\n", "has the token of 'a'"},
                          Case{"default t1\n", "the default tenant's token is the cluster's"}}) {
        const std::string file = WriteTokenFile(dir, "tenants", c.text);
        Daemon d("bad-tenants",
                 {"--role=standalone", "--listen=127.0.0.1:" + std::to_string(FreePort()),
                  "--data_port=" + std::to_string(FreePort()), "--metrics_port=0",
                  "--auth_token_file=" + cluster, "--tenant_tokens_file=" + file},
                 dir);
        ASSERT_TRUE(d.Start());
        int code = -1;
        ASSERT_TRUE(WaitFor([&] { return (code = d.ExitedWith()) != -1; })) << c.text;
        EXPECT_EQ(code, 2) << c.text;
        EXPECT_NE(d.Log().find(c.says), std::string::npos) << c.text << d.Log();
    }
    // Tenants' tokens without the administrator's.
    const std::string file = WriteTokenFile(dir, "tenants", "a t1\n");
    Daemon d("no-cluster-token",
             {"--role=standalone", "--listen=127.0.0.1:" + std::to_string(FreePort()),
              "--data_port=" + std::to_string(FreePort()), "--metrics_port=0",
              "--tenant_tokens_file=" + file},
             dir);
    ASSERT_TRUE(d.Start());
    int code = -1;
    ASSERT_TRUE(WaitFor([&] { return (code = d.ExitedWith()) != -1; }));
    EXPECT_EQ(code, 2);
    EXPECT_NE(d.Log().find("--tenant_tokens_file needs --auth_token_file"), std::string::npos);
}

}  // namespace
}  // namespace mooncake::test
