// Writes the seed corpora of the fuzz targets, from the real encoders: journal entries from
// AppendPut/AppendDel, headers from SerializeRequest/Response, Thrift calls from the generated
// client talking to the same in-process master the fuzzer drives (so ids and generations in
// later calls are the ones the master handed out). The output is committed under
// fuzz/corpus/; rerun after a wire or format change:
//
//   build-fuzz/bin/fuzz_seed_gen fuzz/corpus
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/transport/TBufferTransports.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/disk/format.h"
#include "fuzz/master_world.h"
#include "fuzz/object_bytes.h"
#include "mooncake_constants.h"
#include "net/data_protocol.h"

namespace fs = std::filesystem;
namespace df = mooncake::disk_format;
using namespace mooncake;

namespace {

fs::path g_root;

void Write(const std::string& target, const std::string& name, const std::string& bytes) {
    fs::path dir = g_root / target;
    fs::create_directories(dir);
    std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// ---------------- name codec ----------------

void NameSeeds() {
    const std::vector<std::pair<std::string, std::string>> seeds = {
        {"plain", "llm/layer-12/block-0042"},
        {"escapes", "a/b%c"},
        {"control", std::string("tab\there\x7f\x01", 10)},
        {"dot", "."},
        {"dotdot", ".."},
        {"dots3", "..."},
        {"escaped_dot", "%2E"},
        {"noncanonical", "%41"},
        {"utf8", "\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87 \xe2\x82\xac~"},
        {"long_plain", std::string(255, 'x')},
        {"long_hashed", std::string(300, 'y')},
        {"long_escapes", std::string(200, '/')},
        {"long_utf8", std::string(126, 'z') + std::string(100, '\xe2') },
        {"hashed_name", std::string(20, 'p') + "%~" + std::string(64, 'a')},
    };
    for (const auto& [name, bytes] : seeds) Write("name_codec_fuzz", name, bytes);
    std::string mixed;
    for (int i = 0; i < 90; ++i) mixed += "\xc3\xa9/";
    Write("name_codec_fuzz", "long_mixed", mixed);
}

// ---------------- config ----------------

void ConfigSeeds(const fs::path& example) {
    std::ifstream in(example);
    std::stringstream buf;
    buf << in.rdbuf();
    Write("config_fuzz", "example_conf", buf.str());
    Write("config_fuzz", "small",
          "role = master\nlisten = 0.0.0.0:50051  # all interfaces\n"
          "dram_size = 4GiB\neviction_high_watermark_ratio = 0.9\neviction_ratio = 0.1\n"
          "promotion_on_hit = true\nlog_level = warn\n");
    Write("config_fuzz", "every_type",
          "enable_offload = off\npromotion_admission_threshold = 0\n"
          "disk_background_bytes_per_sec = 100MiB\neviction_policy = hit_density\n"
          "advertise = node-7.example:50061\r\n\t# comment\n\n");
    Write("config_fuzz", "tune_persist",
          std::string("# tuned\npromotion_queue_limit = 100\nrole = standalone\n") + '\0' +
              "promotion_queue_limit=200\nlog_level=debug\neviction_ratio=0.01\n");
    Write("config_fuzz", "tune_append",
          std::string("dram_size = 1GiB\n") + '\0' + "disk_background_bytes_per_sec= 10 MiB\n");
    Write("config_fuzz", "bad_line", "role = master\nnot a line\n");
    Write("config_fuzz", "cross_knob",
          "eviction_high_watermark_ratio = 0.5\neviction_ratio = 0.6\n");
}

// ---------------- disk records ----------------

df::PutEntry Put(uint64_t id, Generation gen, uint64_t size, uint64_t hash, uint64_t commit,
                 std::vector<df::Extent> extents, std::string key) {
    df::PutEntry p;
    p.object_id = id;
    p.generation = gen;
    p.size = size;
    p.data_hash = hash;
    p.commit_seq = commit;
    p.extents = std::move(extents);
    p.key = std::move(key);
    return p;
}

void DiskRecordSeeds() {
    std::string one;
    df::AppendPut(Put(1, 0x700000001, 100, 0x1234, 1, {{3 << 20, 4096}}, "alpha"), &one);
    Write("disk_record_fuzz", "put", one);
    std::string del;
    df::AppendDel(42, &del);
    Write("disk_record_fuzz", "del", del);
    std::string mixed;
    df::AppendPut(Put(7, 9, 10000, 0xabc, 3, {{1 << 22, 4096}, {1 << 23, 8192}}, "k/with%bytes"),
                  &mixed);
    df::AppendDel(7, &mixed);
    df::AppendPut(Put(8, 10, 0, 0, 3, {}, std::string(300, 'q')), &mixed);
    Write("disk_record_fuzz", "put_del_put", mixed);
    Write("disk_record_fuzz", "empty", "");
}

// disk_recovery_fuzz records (see its header comment). The base image's half 0 holds the
// checkpoint (block 0, lap 1, seq 1) and four appends (blocks 1..4, seqs 2..5, commits 1..4):
// alpha (id 1, [3M, +4K)), beta (id 2, [3M+4K, +8K)), gamma (id 3, [3M+12K, +4K)), del beta.
std::string Record(int half, int flags, bool torn, int block, int lap, int seq, int commit,
                   const std::string& payload) {
    std::string r;
    r.push_back(static_cast<char>(half | (flags & 1 ? 2 : 0) | (flags & 2 ? 4 : 0) |
                                  (torn ? 8 : 0)));
    r.push_back(static_cast<char>(block));
    r.push_back(static_cast<char>(lap));
    r.push_back(static_cast<char>(seq));
    r.push_back(static_cast<char>(commit));
    r.push_back(static_cast<char>(payload.size() & 0xFF));
    r.push_back(static_cast<char>(payload.size() >> 8));
    return r + payload;
}

void DiskRecoverySeeds() {
    constexpr uint64_t kData = 3 << 20;
    const uint64_t alpha_hash = df::Hash(fuzz::ObjectBytes(100, 1));
    const uint64_t gamma_hash = df::Hash(fuzz::ObjectBytes(4096, 3));
    auto put = [](df::PutEntry p) {
        std::string s;
        df::AppendPut(p, &s);
        return s;
    };
    auto del = [](uint64_t id) {
        std::string s;
        df::AppendDel(id, &s);
        return s;
    };
    Write("disk_recovery_fuzz", "base_image", "");
    // A Put whose bytes never reached the disk (newest commit: verified, dropped).
    Write("disk_recovery_fuzz", "append_unwritten_put",
          Record(0, 0, false, 5, 1, 6, 5,
                 put(Put(4, 9, 100, 0x5555, 5, {{kData + 4096, 4096}}, "delta"))));
    // A newer generation of alpha over alpha's own blocks (the older entry loses them).
    Write("disk_recovery_fuzz", "append_newer_generation",
          Record(0, 0, false, 5, 1, 6, 5,
                 put(Put(5, 10, 100, alpha_hash, 5, {{kData, 4096}}, "alpha"))));
    Write("disk_recovery_fuzz", "append_del", Record(0, 0, false, 5, 1, 6, 5, del(3)));
    // Two appends, the second torn.
    Write("disk_recovery_fuzz", "append_then_torn",
          Record(0, 0, false, 5, 1, 6, 5, del(1)) +
              Record(0, 0, true, 6, 1, 7, 6,
                     put(Put(6, 11, 4096, gamma_hash, 6, {{kData + 12288, 4096}}, "gamma2"))));
    // A finished checkpoint in half 1 under lap 2 holding gamma only.
    Write("disk_recovery_fuzz", "checkpoint_other_half",
          Record(1, 3, false, 0, 2, 6, 5,
                 put(Put(3, 3, 4096, gamma_hash, 3, {{kData + 12288, 4096}}, "gamma"))));
    // An interrupted two-batch checkpoint (begin only): recovery keeps half 0.
    Write("disk_recovery_fuzz", "checkpoint_interrupted",
          Record(1, 1, false, 0, 2, 6, 5,
                 put(Put(3, 3, 4096, gamma_hash, 3, {{kData + 12288, 4096}}, "gamma"))));
    // Overlapping extents and an extent outside the data region.
    Write("disk_recovery_fuzz", "append_overlap_and_outside",
          Record(0, 0, false, 5, 1, 6, 5,
                 put(Put(7, 12, 8192, 1, 2, {{kData + 8192, 8192}}, "over")) +
                     put(Put(8, 13, 4096, 1, 2, {{1 << 30, 4096}}, "outside"))));
}

// ---------------- data channel headers ----------------

void DataHeaderSeeds() {
    auto request = [](data::Op op, Tier tier, uint32_t key_length, Generation gen,
                      uint64_t offset, uint64_t length, uint32_t flags = 0) {
        data::RequestHeader h;
        h.flags = flags;
        h.op = op;
        h.tier = tier;
        h.key_length = key_length;
        h.generation = gen;
        h.offset = offset;
        h.length = length;
        auto b = data::SerializeRequest(h);
        return std::string(1, '\0') + std::string(reinterpret_cast<const char*>(b.data()), b.size());
    };
    auto response = [](StatusCode code, uint32_t message_length, uint64_t length) {
        data::ResponseHeader h;
        h.status = code;
        h.message_length = message_length;
        h.length = length;
        auto b = data::SerializeResponse(h);
        return std::string(1, '\1') + std::string(reinterpret_cast<const char*>(b.data()), b.size());
    };
    Write("data_header_fuzz", "hello", request(data::Op::kHello, Tier::kMemory, 0, 0, 0, 32));
    Write("data_header_fuzz", "ping", request(data::Op::kPing, Tier::kMemory, 0, 0, 0, 0));
    Write("data_header_fuzz", "write",
          request(data::Op::kWrite, Tier::kMemory, 12, 0x700000003, 1 << 20, 64 << 10));
    Write("data_header_fuzz", "write_end_put",
          request(data::Op::kWrite, Tier::kMemory, 12, 0x700000003, 1 << 20, 64 << 10,
                  data::kFlagEndPut));
    Write("data_header_fuzz", "read_disk",
          request(data::Op::kRead, Tier::kLocalDisk, 4096, 0x700000009, 0, 1 << 20));
    Write("data_header_fuzz", "response_ok", response(StatusCode::kOk, 0, 4096));
    Write("data_header_fuzz", "response_error",
          response(StatusCode::kStaleGeneration, 40, 0));
}

// ---------------- master RPC ----------------

using apache::thrift::TException;
using fuzz::Protocol;
using fuzz::TMemoryBuffer;

// A Thrift client wired to an in-process master; records the bytes of every call.
class Recorder {
public:
    Recorder()
        : req_(std::make_shared<TMemoryBuffer>()),
          rep_(std::make_shared<TMemoryBuffer>()),
          client_(std::make_shared<Protocol>(rep_), std::make_shared<Protocol>(req_)) {}

    // `call` sends through the client (send_X) and then reads the reply (recv_X).
    void Call(const std::function<void(rpc::MasterServiceClient&)>& send,
              const std::function<void(rpc::MasterServiceClient&)>& recv) {
        req_->resetBuffer();
        send(client_);
        std::string bytes = req_->getBufferAsString();
        recorded_ += bytes;
        auto in = std::make_shared<TMemoryBuffer>(reinterpret_cast<uint8_t*>(bytes.data()),
                                                  static_cast<uint32_t>(bytes.size()),
                                                  TMemoryBuffer::OBSERVE);
        int answered = world_.Run(in, rep_, rpc::kMaxContainerItems, 1);
        if (answered != 1) {
            std::cerr << "seed call was not answered\n";
            std::exit(1);
        }
        try {
            recv(client_);
        } catch (const rpc::StoreError& e) {
            // A refusal is a fine seed too.
            if (std::getenv("SEED_GEN_VERBOSE")) std::cerr << "  refused: " << e.message << "\n";
        }
    }

    const std::string& bytes() const { return recorded_; }

private:
    fuzz::MasterWorld world_;
    std::shared_ptr<TMemoryBuffer> req_, rep_;
    rpc::MasterServiceClient client_;
    std::string recorded_;
};

struct Ctx {
    int64_t client = 0;
    int64_t node = 0;
    int64_t gen_k1 = 0;
    int64_t gen_k2 = 0;
    std::vector<int64_t> batch_gens;
};

using Step = std::pair<std::string, std::function<void(Recorder&, Ctx&)>>;

#define CALL(send_expr, recv_expr) \
    r.Call([&](rpc::MasterServiceClient& c) { c.send_expr; }, [&](rpc::MasterServiceClient& c) { recv_expr; })

std::vector<Step> Steps() {
    std::vector<Step> s;
    s.push_back({"Hello", [](Recorder& r, Ctx& x) {
                     CALL(send_Hello(rpc::g_mooncake_constants.PROTOCOL_VERSION, "", "seed", ""), {
                         rpc::HelloReply h;
                         c.recv_Hello(h);
                         x.client = h.client_id;
                     });
                 }});
    s.push_back({"RegisterNode", [](Recorder& r, Ctx& x) {
                     rpc::NodeSpec spec;
                     spec.name = "node-a:50061";
                     spec.data_address = "127.0.0.1:50062";
                     spec.segment_capacity = 64 << 20;
                     spec.disk_capacity = int64_t{1} << 30;
                     CALL(send_RegisterNode(spec), x.node = c.recv_RegisterNode());
                 }});
    s.push_back({"PutStart", [](Recorder& r, Ctx& x) {
                     CALL(send_PutStart(x.client, "k1", 4096, x.node, rpc::PutConfig()), {
                         rpc::PutStartReply p;
                         c.recv_PutStart(p);
                         x.gen_k1 = p.generation;
                     });
                 }});
    s.push_back({"PutEnd", [](Recorder& r, Ctx& x) {
                     CALL(send_PutEnd(x.client, "k1", x.gen_k1), c.recv_PutEnd());
                 }});
    // ---- the rest, in an order where each does something real ----
    s.push_back({"Heartbeat", [](Recorder& r, Ctx& x) {
                     CALL(send_Heartbeat(x.node, 0), {
                         rpc::HeartbeatReply h;
                         c.recv_Heartbeat(h);
                     });
                 }});
    s.push_back({"PutRevoke", [](Recorder& r, Ctx& x) {
                     CALL(send_PutStart(x.client, "k2", 8192, -1, rpc::PutConfig()), {
                         rpc::PutStartReply p;
                         c.recv_PutStart(p);
                         x.gen_k2 = p.generation;
                     });
                     CALL(send_PutRevoke(x.client, "k2", x.gen_k2), c.recv_PutRevoke());
                 }});
    s.push_back({"GetReplicaList", [](Recorder& r, Ctx&) {
                     CALL(send_GetReplicaList("k1"), {
                         rpc::ObjectInfo o;
                         c.recv_GetReplicaList(o);
                     });
                 }});
    s.push_back({"Exists", [](Recorder& r, Ctx&) { CALL(send_Exists("k1", false), c.recv_Exists()); }});
    s.push_back({"Stat", [](Recorder& r, Ctx&) {
                     CALL(send_Stat("k1"), {
                         rpc::ObjectInfo o;
                         c.recv_Stat(o);
                     });
                 }});
    s.push_back({"BatchPutStart", [](Recorder& r, Ctx& x) {
                     std::vector<rpc::PutStartItem> items(2);
                     items[0].key = "b1";
                     items[0].size = 100;
                     items[1].key = "b2";
                     items[1].size = 200000;
                     CALL(send_BatchPutStart(x.client, items, x.node), {
                         std::vector<rpc::PutStartResult> out;
                         c.recv_BatchPutStart(out);
                         x.batch_gens.clear();
                         for (auto& o : out) x.batch_gens.push_back(o.reply.generation);
                     });
                 }});
    s.push_back({"BatchPutEnd", [](Recorder& r, Ctx& x) {
                     std::vector<rpc::KeyGeneration> items;
                     const char* keys[] = {"b1", "b2"};
                     for (size_t i = 0; i < x.batch_gens.size() && i < 2; ++i) {
                         rpc::KeyGeneration kg;
                         kg.key = keys[i];
                         kg.generation = x.batch_gens[i];
                         items.push_back(kg);
                     }
                     CALL(send_BatchPutEnd(x.client, items), {
                         std::vector<rpc::Outcome> out;
                         c.recv_BatchPutEnd(out);
                     });
                 }});
    s.push_back({"BatchPutRevoke", [](Recorder& r, Ctx& x) {
                     rpc::KeyGeneration kg;
                     kg.key = "zz";
                     kg.generation = 1;
                     CALL(send_BatchPutRevoke(x.client, {kg}), {
                         std::vector<rpc::Outcome> out;
                         c.recv_BatchPutRevoke(out);
                     });
                 }});
    s.push_back({"BatchGetReplicaList", [](Recorder& r, Ctx&) {
                     CALL(send_BatchGetReplicaList({"b1", "b2", "nope"}), {
                         std::vector<rpc::ObjectResult> out;
                         c.recv_BatchGetReplicaList(out);
                     });
                 }});
    s.push_back({"BatchExists", [](Recorder& r, Ctx&) {
                     CALL(send_BatchExists({"b1", "x"}, false), {
                         std::vector<rpc::ExistsResult> out;
                         c.recv_BatchExists(out);
                     });
                 }});
    s.push_back({"List", [](Recorder& r, Ctx&) {
                     rpc::ListRequest req;
                     req.prefix = "b";
                     req.limit = 10;
                     CALL(send_List(req), {
                         rpc::ListReply out;
                         c.recv_List(out);
                     });
                 }});
    s.push_back({"Nodes", [](Recorder& r, Ctx&) {
                     CALL(send_Nodes(), {
                         std::vector<rpc::NodeInfo> out;
                         c.recv_Nodes(out);
                     });
                 }});
    s.push_back({"TuneGet", [](Recorder& r, Ctx&) {
                     CALL(send_TuneGet(), {
                         std::vector<rpc::KnobInfo> out;
                         c.recv_TuneGet(out);
                     });
                 }});
    s.push_back({"TuneSet", [](Recorder& r, Ctx&) {
                     rpc::KnobAssignment a;
                     a.name = "promotion_admission_threshold";
                     a.value = "1";
                     CALL(send_TuneSet({a}, false), {
                         std::vector<rpc::KnobInfo> out;
                         c.recv_TuneSet(out);
                     });
                 }});
    s.push_back({"MetricsText", [](Recorder& r, Ctx&) {
                     CALL(send_MetricsText(), {
                         std::string out;
                         c.recv_MetricsText(out);
                     });
                 }});
    s.push_back({"Offload", [](Recorder& r, Ctx&) {
                     CALL(send_Offload({"k1"}), {
                         std::vector<rpc::ManualResult> out;
                         c.recv_Offload(out);
                     });
                 }});
    s.push_back({"OffloadObjectHeartbeat", [](Recorder& r, Ctx& x) {
                     CALL(send_OffloadObjectHeartbeat(x.node, 16, 0), {
                         std::vector<rpc::OffloadTask> out;
                         c.recv_OffloadObjectHeartbeat(out);
                     });
                 }});
    s.push_back({"NotifyOffloadSuccess", [](Recorder& r, Ctx& x) {
                     CALL(send_NotifyOffloadSuccess(x.node, "k1", x.gen_k1),
                          c.recv_NotifyOffloadSuccess());
                 }});
    s.push_back({"Tasks", [](Recorder& r, Ctx&) {
                     CALL(send_Tasks(), {
                         std::vector<rpc::TaskInfo> out;
                         c.recv_Tasks(out);
                     });
                 }});
    s.push_back({"HeartbeatAgain", [](Recorder& r, Ctx& x) {  // the clock moves 300 ms a call
                     CALL(send_Heartbeat(x.node, 0), {
                         rpc::HeartbeatReply h;
                         c.recv_Heartbeat(h);
                     });
                 }});
    s.push_back({"Evict", [](Recorder& r, Ctx&) {
                     CALL(send_Evict({"k1"}), {
                         std::vector<rpc::ManualResult> out;
                         c.recv_Evict(out);
                     });
                 }});
    s.push_back({"Hot", [](Recorder& r, Ctx&) {
                     CALL(send_GetReplicaList("k1"), {
                         rpc::ObjectInfo o;
                         c.recv_GetReplicaList(o);
                     });
                     CALL(send_Hot(10), {
                         std::vector<rpc::HotKey> out;
                         c.recv_Hot(out);
                     });
                 }});
    s.push_back({"PromotionObjectHeartbeat", [](Recorder& r, Ctx& x) {
                     CALL(send_PromotionObjectHeartbeat(x.node, 16, 0), {
                         std::vector<rpc::PromotionTask> out;
                         c.recv_PromotionObjectHeartbeat(out);
                     });
                 }});
    s.push_back({"PromotionAllocStart", [](Recorder& r, Ctx& x) {
                     CALL(send_PromotionAllocStart(x.node, "k1", x.gen_k1, 4096), {
                         rpc::Replica out;
                         c.recv_PromotionAllocStart(out);
                     });
                 }});
    s.push_back({"NotifyPromotionSuccess", [](Recorder& r, Ctx& x) {
                     CALL(send_NotifyPromotionSuccess(x.node, "k1", x.gen_k1),
                          c.recv_NotifyPromotionSuccess());
                 }});
    s.push_back({"Promote", [](Recorder& r, Ctx&) {
                     CALL(send_Promote({"k1", "b1"}, true), {
                         std::vector<rpc::ManualResult> out;
                         c.recv_Promote(out);
                     });
                 }});
    s.push_back({"NotifyPromotionFailure", [](Recorder& r, Ctx& x) {
                     CALL(send_NotifyPromotionFailure(x.node, "k1", x.gen_k1),
                          c.recv_NotifyPromotionFailure());
                 }});
    s.push_back({"NotifyOffloadFailure", [](Recorder& r, Ctx& x) {
                     CALL(send_Offload({"b1"}), {
                         std::vector<rpc::ManualResult> out;
                         c.recv_Offload(out);
                     });
                     CALL(send_OffloadObjectHeartbeat(x.node, 16, 0), {
                         std::vector<rpc::OffloadTask> out;
                         c.recv_OffloadObjectHeartbeat(out);
                     });
                     int64_t gen = x.batch_gens.empty() ? 1 : x.batch_gens[0];
                     CALL(send_NotifyOffloadFailure(x.node, "b1", gen),
                          c.recv_NotifyOffloadFailure());
                 }});
    s.push_back({"RegisterDiskReplicas", [](Recorder& r, Ctx& x) {
                     rpc::DiskReplicaReport d;
                     d.key = "d1";
                     d.generation = 5;
                     d.size = 4096;
                     CALL(send_RegisterDiskReplicas(x.node, {d}), {
                         std::vector<rpc::Outcome> out;
                         c.recv_RegisterDiskReplicas(out);
                     });
                 }});
    s.push_back({"ReportDiskReplicaDropped", [](Recorder& r, Ctx& x) {
                     CALL(send_ReportDiskReplicaDropped(x.node, "d1", 5),
                          c.recv_ReportDiskReplicaDropped());
                 }});
    s.push_back({"BatchRemove", [](Recorder& r, Ctx&) {
                     CALL(send_BatchRemove({"b1", "nope"}, false), {
                         std::vector<rpc::Outcome> out;
                         c.recv_BatchRemove(out);
                     });
                 }});
    s.push_back({"RemoveByPrefix", [](Recorder& r, Ctx&) {
                     CALL(send_RemoveByPrefix("b", true), {
                         rpc::RemovePrefixReply out;
                         c.recv_RemoveByPrefix(out);
                     });
                 }});
    s.push_back({"CheckInvariants", [](Recorder& r, Ctx&) {
                     CALL(send_CheckInvariants(), {
                         rpc::InvariantReport out;
                         c.recv_CheckInvariants(out);
                     });
                 }});
    s.push_back({"Remove", [](Recorder& r, Ctx&) {
                     CALL(send_Remove("k1", true), c.recv_Remove());
                 }});
    s.push_back({"UnregisterNode", [](Recorder& r, Ctx& x) {
                     CALL(send_UnregisterNode(x.node), c.recv_UnregisterNode());
                 }});
    return s;
}

void MasterRpcSeeds() {
    const std::vector<Step> steps = Steps();
    const size_t setup = 4;  // Hello, RegisterNode, PutStart, PutEnd
    {
        Recorder r;
        Ctx x;
        for (const auto& [name, step] : steps) {
            if (std::getenv("SEED_GEN_VERBOSE")) std::cerr << name << "\n";
            step(r, x);
        }
        Write("master_rpc_fuzz", "all_methods", r.bytes());
    }
    {
        Recorder r;
        Ctx x;
        steps[0].second(r, x);
        Write("master_rpc_fuzz", "hello", r.bytes());
    }
    for (size_t i = 1; i < steps.size(); ++i) {
        Recorder r;
        Ctx x;
        for (size_t j = 0; j < std::min(i, setup); ++j) steps[j].second(r, x);
        if (i >= setup) {
            // Batch steps need the batch put first; promotion steps need the offload/evict.
            for (size_t j = setup; j < i; ++j) {
                const std::string& n = steps[j].first;
                if (n == "BatchPutStart" || n == "Offload" || n == "OffloadObjectHeartbeat" ||
                    n == "NotifyOffloadSuccess" || n == "Evict" || n == "Hot" ||
                    n == "TuneSet" || n == "PromotionObjectHeartbeat" ||
                    n == "PromotionAllocStart" || n == "RegisterDiskReplicas") {
                    steps[j].second(r, x);
                }
            }
        }
        steps[i].second(r, x);
        Write("master_rpc_fuzz", "m" + std::to_string(i) + "_" + steps[i].first, r.bytes());
    }
    // Without Hello first: refused with ILLEGAL_CLIENT.
    {
        Recorder r;
        Ctx x;
        steps[6].second(r, x);
        Write("master_rpc_fuzz", "no_hello", r.bytes());
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: fuzz_seed_gen CORPUS_DIR (fuzz/corpus)\n";
        return 2;
    }
    g_root = argv[1];
    NameSeeds();
    ConfigSeeds(g_root / ".." / ".." / "etc" / "mooncake.conf.example");
    DiskRecordSeeds();
    DiskRecoverySeeds();
    DataHeaderSeeds();
    MasterRpcSeeds();
    std::cout << "seeds written under " << g_root << "\n";
    return 0;
}
