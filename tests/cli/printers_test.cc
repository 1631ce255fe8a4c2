#include "cli/printers.h"

#include <gtest/gtest.h>

#include "cli/batch.h"
#include "cli/progress.h"
#include "cli/tier_move.h"

namespace mooncake::cli {
namespace {

using namespace std::chrono_literals;

ObjectInfo TwoTierObject(std::string key) {
    ObjectInfo info;
    info.object.key = std::move(key);
    info.object.generation = 42;
    info.object.size = 1536;
    // Stat lists every replica; LOCAL_DISK first here to check tiers come out MEMORY first.
    info.object.replicas.push_back({Tier::kLocalDisk, ReplicaState::kComplete, 1, 0, 1536, 0});
    info.object.replicas.push_back({Tier::kMemory, ReplicaState::kComplete, 1, 4096, 1536, 1});
    info.object.replicas.push_back({Tier::kMemory, ReplicaState::kProcessing, 2, 0, 1536, 0});
    info.object.lease_expiry = 1500ms;
    info.object.sketch_estimate = 3;
    info.object.promotion_in_flight = true;
    info.locations = {{"n1:50051", "n1:50052"}, {"n1:50051", "n1:50052"}, {"", ""}};
    return info;
}

TEST(RenderStat, JsonHasTheContractFields) {
    std::string out = RenderStat(TwoTierObject("a/b c"), Format::kJson);
    EXPECT_EQ(out, R"({
  "key": "a/b c",
  "size": 1536,
  "generation": 42,
  "tiers": ["MEMORY", "LOCAL_DISK"],
  "replicas": [
    {
      "tier": "LOCAL_DISK",
      "status": "COMPLETE",
      "node": "n1:50051",
      "node_id": 1,
      "size": 1536,
      "pins": 0
    },
    {
      "tier": "MEMORY",
      "status": "COMPLETE",
      "node": "n1:50051",
      "node_id": 1,
      "size": 1536,
      "pins": 1
    },
    {
      "tier": "MEMORY",
      "status": "PROCESSING",
      "node": "",
      "node_id": 2,
      "size": 1536,
      "pins": 0
    }
  ],
  "lease_remaining_ms": 1500,
  "soft_pinned": false,
  "soft_pin_ms_remaining": 0,
  "hard_pinned": false,
  "group": null,
  "recency": 0,
  "sketch_estimate": 3,
  "promotion_in_flight": true,
  "offload_in_flight": false,
  "last_promotion": null
}
)");
}

TEST(RenderStat, TableShowsTiersAndReplicas) {
    std::string out = RenderStat(TwoTierObject("k"), Format::kTable);
    EXPECT_NE(out.find("key:         k\n"), std::string::npos) << out;
    EXPECT_NE(out.find("size:        1.5 KiB (1536 bytes)\n"), std::string::npos) << out;
    EXPECT_NE(out.find("tiers:       MEMORY, LOCAL_DISK\n"), std::string::npos) << out;
    EXPECT_NE(out.find("lease:       1.5s remaining\n"), std::string::npos) << out;
    EXPECT_NE(out.find("tasks:       promotion in flight\n"), std::string::npos) << out;
    EXPECT_NE(out.find("pin:         none\n"), std::string::npos) << out;
    EXPECT_NE(out.find("  TIER        STATUS      NODE              SIZE  PINS\n"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("  MEMORY      PROCESSING  node 2 (gone)  1.5 KiB     0\n"),
              std::string::npos)
        << out;
}

// ReplicateConfig's pins: soft with its time left (lapsed at 0), hard.
TEST(RenderStat, ShowsPins) {
    ObjectInfo info = TwoTierObject("k");
    info.object.soft_pinned = true;
    info.object.soft_pin_expiry = std::chrono::seconds(90);
    info.object.hard_pinned = true;
    std::string table = RenderStat(info, Format::kTable);
    EXPECT_NE(table.find("pin:         hard (never evicted), soft, "), std::string::npos) << table;
    std::string json = RenderStat(info, Format::kJson);
    EXPECT_NE(json.find("\"soft_pinned\": true,\n  \"soft_pin_ms_remaining\": 90000,\n"
                        "  \"hard_pinned\": true"),
              std::string::npos)
        << json;
    info.object.hard_pinned = false;
    info.object.soft_pin_expiry = Nanos(0);
    EXPECT_NE(RenderStat(info, Format::kTable).find("pin:         soft, lapsed\n"),
              std::string::npos);
}

// ReplicateConfig.group_ids: the object's group, none when ungrouped.
TEST(RenderStat, ShowsTheGroup) {
    ObjectInfo info = TwoTierObject("k");
    EXPECT_NE(RenderStat(info, Format::kTable).find("group:       none\n"), std::string::npos);
    info.object.group = "page-7";
    EXPECT_NE(RenderStat(info, Format::kTable).find("group:       page-7\n"), std::string::npos)
        << RenderStat(info, Format::kTable);
    EXPECT_NE(RenderStat(info, Format::kJson).find("\"group\": \"page-7\","), std::string::npos)
        << RenderStat(info, Format::kJson);
}

TEST(RenderList, JsonAddsBase64ForNonUtf8Keys) {
    std::vector<ObjectInfo> objects = {TwoTierObject("ok"), TwoTierObject("bad\xff")};
    std::string out = RenderList(objects, Format::kJson);
    EXPECT_EQ(out, R"([
  {
    "key": "ok",
    "size": 1536,
    "tiers": ["MEMORY", "LOCAL_DISK"]
  },
  {
    "key": "bad\udcff",
    "key_base64": "YmFk/w==",
    "size": 1536,
    "tiers": ["MEMORY", "LOCAL_DISK"]
  }
]
)");
}

TEST(RenderList, TableAlignsColumns) {
    std::vector<ObjectInfo> objects = {TwoTierObject("a"), TwoTierObject("caf\xc3\xa9-long")};
    objects[0].object.size = 10;
    EXPECT_EQ(RenderList(objects, Format::kTable),
              "KEY           SIZE  TIERS\n"
              "a             10 B  MEMORY,LOCAL_DISK\n"
              "caf\xc3\xa9-long  1.5 KiB  MEMORY,LOCAL_DISK\n");
}

TEST(RenderList, EmptyIsAnEmptyArray) {
    EXPECT_EQ(RenderList({}, Format::kJson), "[]\n");
    EXPECT_EQ(RenderList({}, Format::kTable), "KEY  SIZE  TIERS\n");
}

TEST(RenderNodes, JsonAndTable) {
    NodeInfo n;
    n.id = 1;
    n.spec = {"127.0.0.1:50051", "127.0.0.1:50052", 64ull << 20, 256ull << 20};
    n.segment_used = 16ull << 20;
    n.memory_objects = 16;
    n.disk_used = 1ull << 20;
    n.disk_objects = 1;
    n.last_heartbeat = 250ms;
    std::string json = RenderNodes({n}, Format::kJson);
    EXPECT_NE(json.find("\"memory_capacity\": 67108864"), std::string::npos) << json;
    EXPECT_NE(json.find("\"memory_used\": 16777216"), std::string::npos) << json;
    EXPECT_NE(json.find("\"local_disk_capacity\": 268435456"), std::string::npos) << json;
    EXPECT_NE(json.find("\"ms_since_heartbeat\": 250"), std::string::npos) << json;
    std::string table = RenderNodes({n}, Format::kTable);
    EXPECT_NE(table.find("16 MiB / 64 MiB (25%)"), std::string::npos) << table;
    EXPECT_NE(table.find("250ms ago"), std::string::npos) << table;
}

TEST(RenderTasks, NamesNodesAndStates) {
    TaskView t;
    t.kind = TaskKind::kPromotion;
    t.key = "k";
    t.size = 4096;
    t.node = 7;
    t.age = 2500ms;
    t.delivered = true;
    std::string json = RenderTasks({t}, {{7, "n7:1"}}, Format::kJson);
    EXPECT_NE(json.find("\"kind\": \"promotion\""), std::string::npos) << json;
    EXPECT_NE(json.find("\"node\": \"n7:1\""), std::string::npos) << json;
    EXPECT_NE(json.find("\"age_ms\": 2500"), std::string::npos) << json;
    EXPECT_NE(json.find("\"state\": \"delivered\""), std::string::npos) << json;
    std::string table = RenderTasks({t}, {}, Format::kTable);
    EXPECT_NE(table.find("promotion  k    4 KiB  7     2.5s  delivered"), std::string::npos)
        << table;
}

TEST(RenderHot, Shapes) {
    std::string json = RenderHot({{"h", 100, 9, std::nullopt}}, Format::kJson);
    EXPECT_EQ(json,
              "[\n  {\n    \"key\": \"h\",\n    \"size\": 100,\n    \"estimate\": 9,\n"
              "    \"last_promotion\": null\n  }\n]\n");
    HotKey refused{"r", 100, 1,
                   PromotionDecision{PromotionOutcome::kAdmissionGated, 1, 2,
                                     -std::chrono::milliseconds(1500)}};
    json = RenderHot({refused}, Format::kJson);
    EXPECT_NE(json.find("\"last_promotion\": {\n      \"outcome\": \"admission_gated\",\n"
                        "      \"refused\": true,\n"),
              std::string::npos)
        << json;
    EXPECT_NE(json.find("\"reads\": 1,\n      \"threshold\": 2,\n      \"age_ms\": 1500\n"),
              std::string::npos)
        << json;
    std::string table = RenderHot({refused}, Format::kTable);
    EXPECT_NE(table.find("admission_gated, 1.5s ago"), std::string::npos) << table;
}

TEST(RenderStat, SaysWhyAKeyIsNotInMemory) {
    ObjectInfo info;
    info.object.key = "k";
    info.object.size = 4096;
    info.object.replicas.push_back({Tier::kLocalDisk, ReplicaState::kComplete, 1, 0, 4096, 0});
    info.locations.push_back({"127.0.0.1:7001", "127.0.0.1:7002"});
    info.object.last_promotion =
        PromotionDecision{PromotionOutcome::kNoRoom, 4, 2, -std::chrono::milliseconds(20)};
    std::string table = RenderStat(info, Format::kTable);
    EXPECT_NE(table.find("promotion:   no_room (DRAM is full and nothing in it can be evicted "
                         "now); 4 reads, threshold 2;"),
              std::string::npos)
        << table;
    std::string json = RenderStat(info, Format::kJson);
    EXPECT_NE(json.find("\"outcome\": \"no_room\""), std::string::npos) << json;
    EXPECT_NE(json.find("\"age_ms\": 20"), std::string::npos) << json;
    info.object.last_promotion.reset();
    EXPECT_NE(RenderStat(info, Format::kJson).find("\"last_promotion\": null"), std::string::npos);
}

TEST(RenderScrub, NamesEveryCorruptKeyAndEveryNodeNotScrubbed) {
    ScrubResult ok{"127.0.0.1:7001", 12, 12 * 4096, 1, {{"bad", 7}}, ""};
    ScrubResult down{"127.0.0.1:7002", 0, 0, 0, {}, "Unavailable: connect refused"};
    std::string table = RenderScrub({ok, down}, Format::kTable);
    EXPECT_EQ(table,
              "node 127.0.0.1:7001: 12 records (48 KiB) read, 1 corrupt, 1 unreadable\n"
              "  corrupt: 'bad' generation 7 (dropped; the key is removed)\n"
              "node 127.0.0.1:7002: not scrubbed: Unavailable: connect refused\n");
    std::string json = RenderScrub({ok, down}, Format::kJson);
    EXPECT_NE(json.find("\"corrupt\": [\n      {\n        \"key\": \"bad\",\n"
                        "        \"generation\": 7\n"),
              std::string::npos)
        << json;
    EXPECT_NE(json.find("\"error\": \"Unavailable: connect refused\""), std::string::npos) << json;
    // A node that was scrubbed carries no "error" field.
    EXPECT_EQ(json.find("\"error\""), json.rfind("\"error\""));
}

TEST(RenderMasters, LeaderAndStandbyWithIsoTimes) {
    std::vector<ha::MasterListing> masters = {{"10.0.0.1:50051", true, 4, 1764617400123},
                                              {"10.0.0.2:50051", false, 4, 1764617300000}};
    std::string json = RenderMasters(masters, Format::kJson);
    EXPECT_NE(json.find("\"role\": \"leader\",\n    \"epoch\": 4,\n"
                        "    \"since\": \"2025-12-01T19:30:00.123Z\",\n"
                        "    \"since_ms\": 1764617400123"),
              std::string::npos)
        << json;
    EXPECT_NE(json.find("\"role\": \"standby\""), std::string::npos) << json;
    std::string table = RenderMasters(masters, Format::kTable);
    EXPECT_NE(table.find("10.0.0.1:50051  leader       4  2025-12-01T19:30:00.123Z"),
              std::string::npos)
        << table;
}

std::vector<KnobInfo> Knobs() {
    return {
        {"promotion_on_hit", "true", "true", "true|false", "bool", true, ""},
        {"promotion_admission_threshold", "2", "2", "0..255", "int", true, ""},
        {"eviction_ratio", "0.05", "0.05", "0.0..1.0", "double", true, ""},
        {"dram_size", "64MiB", "256MiB", "0..16TiB", "size", false, ""},
        {"role", "standalone", "standalone", "standalone|master|node", "enum", false, ""},
        {"advertise", "", "", "any text", "string", false, ""},
    };
}

TEST(RenderKnobs, JsonIsAFlatTypedObject) {
    EXPECT_EQ(RenderKnobs(Knobs(), Format::kJson), R"({
  "promotion_on_hit": true,
  "promotion_admission_threshold": 2,
  "eviction_ratio": 0.05,
  "dram_size": 67108864,
  "role": "standalone",
  "advertise": ""
}
)");
}

TEST(RenderKnobs, TableShowsValueDefaultRangeTunable) {
    std::string table = RenderKnobs(Knobs(), Format::kTable);
    EXPECT_EQ(
        table.substr(0, table.find('\n')),
        "NAME                           VALUE       DEFAULT     RANGE                   TUNABLE");
    EXPECT_NE(table.find("dram_size                      64MiB       256MiB      0..16TiB  "
                         "              no (start-up)"),
              std::string::npos)
        << table;
}

TEST(RenderKnobChanges, OldAndNew) {
    auto before = Knobs();
    auto after = Knobs();
    after[1].value = "5";
    std::vector<std::string> names = {"promotion_admission_threshold"};
    EXPECT_EQ(RenderKnobChanges(before, after, names, Format::kTable),
              "NAME                           OLD  NEW\n"
              "promotion_admission_threshold  2    5\n");
    EXPECT_EQ(RenderKnobChanges(before, after, names, Format::kJson),
              "{\n  \"promotion_admission_threshold\": 5\n}\n");
}

TEST(RenderKeyResults, OutcomesAndErrors) {
    std::vector<KeyResult> results = {
        {"a", Status::Ok(), "already", "already in MEMORY"},
        {"b", Status::NoSpace("DRAM is full"), "", ""},
        {"c", Status::NotFound("key 'c' does not exist"), "", ""},
    };
    EXPECT_EQ(RenderKeyResults(results, Format::kTable),
              "KEY  RESULT\n"
              "a    already in MEMORY\n"
              "b    refused: DRAM is full\n"
              "c    not found\n");
    std::string json = RenderKeyResults(results, Format::kJson);
    EXPECT_NE(json.find("\"ok\": true,\n    \"outcome\": \"already\""), std::string::npos) << json;
    EXPECT_NE(json.find("\"outcome\": \"error\",\n    \"error\": \"NoSpace\""), std::string::npos)
        << json;
}

TEST(RenderMetrics, TextAsIsAndParsedJson) {
    std::string text =
        "# HELP mooncake_promotion_failed_total x\n"
        "# TYPE mooncake_promotion_failed_total counter\n"
        "mooncake_promotion_failed_total{reason=\"queue_full\"} 3\n"
        "mooncake_promotion_in_flight 0\n"
        "odd{a=\"x\\\"y\",b=\"z\"} NaN\n";
    EXPECT_EQ(RenderMetrics(text, Format::kTable), text);
    EXPECT_EQ(RenderMetrics(text, Format::kJson), R"([
  {
    "name": "mooncake_promotion_failed_total",
    "labels": {
      "reason": "queue_full"
    },
    "value": 3
  },
  {
    "name": "mooncake_promotion_in_flight",
    "labels": {},
    "value": 0
  },
  {
    "name": "odd",
    "labels": {
      "a": "x\"y",
      "b": "z"
    },
    "value": "NaN"
  }
]
)");
}

TEST(RenderGetJson, ValueInlineOrBase64) {
    EXPECT_EQ(RenderGetJson("k", "hi", nullptr),
              "{\n  \"key\": \"k\",\n  \"size\": 2,\n  \"value\": \"hi\"\n}\n");
    std::string binary = RenderGetJson("k", std::string("\x00\xff", 2), nullptr);
    EXPECT_NE(binary.find("\"value_base64\": \"AP8=\""), std::string::npos) << binary;
    std::string file = "/tmp/x";
    EXPECT_EQ(RenderGetJson("k", "hi", &file),
              "{\n  \"key\": \"k\",\n  \"size\": 2,\n  \"out\": \"/tmp/x\"\n}\n");
}

TEST(SummaryLine, CountsByOutcome) {
    std::vector<KeyResult> results = {
        {"a", Status::Ok(), "queued", "queued for promotion"},
        {"b", Status::Ok(), "queued", "queued for promotion"},
        {"c", Status::Ok(), "already", "already in MEMORY"},
        {"d", Status::Busy("full"), "", ""},
        {"e", Status::NotFound("gone"), "", ""},
    };
    EXPECT_EQ(SummaryLine("promote --prefix 'p'", results),
              "promote --prefix 'p': 5 keys: 2 queued for promotion, 1 already in MEMORY, "
              "1 not found, 1 failed\n");
    EXPECT_EQ(SummaryLine("rm", {}), "rm: 0 keys\n");
}

TEST(ProgressBar, Fills) {
    EXPECT_EQ(Progress::Bar(0, 100, 10), "[----------]   0/100 keys");
    EXPECT_EQ(Progress::Bar(50, 100, 10), "[#####-----]  50/100 keys");
    EXPECT_EQ(Progress::Bar(100, 100, 10), "[##########] 100/100 keys");
    EXPECT_EQ(Progress::Bar(0, 0, 4), "[####] 0/0 keys");
}

TEST(TierMove, WaitStates) {
    ObjectView disk_only;
    disk_only.replicas.push_back({Tier::kLocalDisk, ReplicaState::kComplete, 1, 0, 1, 0});
    EXPECT_EQ(WaitStateOf(TierMove::kPromote, disk_only), WaitState::kStalled);
    disk_only.promotion_in_flight = true;
    EXPECT_EQ(WaitStateOf(TierMove::kPromote, disk_only), WaitState::kPending);
    EXPECT_EQ(WaitStateOf(TierMove::kOffload, disk_only), WaitState::kDone);
    EXPECT_EQ(WaitStateOf(TierMove::kEvict, disk_only), WaitState::kDone);

    ObjectView memory_only;
    memory_only.replicas.push_back({Tier::kMemory, ReplicaState::kComplete, 1, 0, 1, 0});
    EXPECT_EQ(WaitStateOf(TierMove::kPromote, memory_only), WaitState::kDone);
    EXPECT_EQ(WaitStateOf(TierMove::kOffload, memory_only), WaitState::kStalled);
    memory_only.offload_in_flight = true;
    EXPECT_EQ(WaitStateOf(TierMove::kOffload, memory_only), WaitState::kPending);
    EXPECT_EQ(WaitStateOf(TierMove::kEvict, memory_only), WaitState::kPending);
}

TEST(TierMove, OutcomeWords) {
    EXPECT_EQ(DescribeOutcome(TierMove::kPromote, ManualOutcome::kAlreadyThere).text,
              "already in MEMORY");
    EXPECT_EQ(DescribeOutcome(TierMove::kOffload, ManualOutcome::kAlreadyThere).text,
              "already on LOCAL_DISK");
    EXPECT_EQ(DescribeOutcome(TierMove::kEvict, ManualOutcome::kDone).outcome, "evicted");
    EXPECT_EQ(DescribeCompleted(TierMove::kPromote).outcome, "promoted");
}

}  // namespace
}  // namespace mooncake::cli
