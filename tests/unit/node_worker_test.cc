// NodeWorker (core/node/node_worker.h) in-process: the real MasterStore on a ManualClock behind a
// link that can refuse or rewrite answers, and a segment, disk and peer writer that keep
// bytes in maps and fail on demand. Each test covers one rule of the node's half, including
// the failure paths tests/fault exercises with processes.
#include "core/node/node_worker.h"

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/clock.h"
#include "core/base/knobs.h"
#include "core/master/local_master_link.h"
#include "core/master/master_store.h"
#include "core/base/metrics.h"

namespace mooncake {
namespace {

constexpr uint64_t kObject = 4096;
constexpr ClientId kClient = 1;

std::vector<std::byte> Bytes(char fill, uint64_t size = kObject) {
    return std::vector<std::byte>(size, static_cast<std::byte>(fill));
}

// A segment as a map of ranges: offset -> (key, generation, bytes).
class FakeSegment final : public NodeSegment {
public:
    struct Range {
        std::string key;
        Generation generation;
        std::vector<std::byte> bytes;
    };
    Status ReadRange(std::string_view key, Generation generation, uint64_t offset,
                     uint64_t length,
                     const std::function<Status(std::span<const std::byte>)>& use) override {
        auto it = ranges.find(offset);
        if (it == ranges.end() || it->second.key != key) return Status::NotFound("no range");
        if (it->second.generation != generation) return Status::StaleGeneration("other gen");
        return use(std::span<const std::byte>(it->second.bytes).first(length));
    }
    Status Write(std::string_view key, Generation generation, uint64_t offset,
                 std::span<const std::byte> data) override {
        ranges[offset] = {std::string(key), generation, {data.begin(), data.end()}};
        return Status::Ok();
    }
    void Release(std::string_view key, Generation generation, uint64_t offset) override {
        auto it = ranges.find(offset);
        if (it != ranges.end() && it->second.key == key && it->second.generation == generation) {
            ranges.erase(it);
        }
    }
    std::vector<HeldRange> Held() const override {
        std::vector<HeldRange> out;
        for (const auto& [offset, r] : ranges) {
            out.push_back({r.key, r.generation, offset, r.bytes.size()});
        }
        return out;
    }
    std::map<uint64_t, Range> ranges;
};

class FakeDisk final : public NodeDisk {
public:
    using Id = std::pair<std::string, Generation>;
    Status Write(std::string_view key, Generation generation, std::span<const std::byte> data,
                 IoPriority) override {
        if (fail_writes) return Status::IoError("injected write failure");
        records[{std::string(key), generation}] = {data.begin(), data.end()};
        if (after_write) after_write(std::string(key), generation);
        return Status::Ok();
    }
    std::vector<Status> WriteMany(std::span<const DiskWrite> items, IoPriority p) override {
        ++write_many_calls;
        return NodeDisk::WriteMany(items, p);  // Write each
    }
    Status Read(std::string_view key, Generation generation, std::span<std::byte> out,
                IoPriority) override {
        if (fail_reads) return Status::IoError("injected read failure");
        auto it = records.find({std::string(key), generation});
        if (it == records.end()) return Status::NotFound("no record");
        std::memcpy(out.data(), it->second.data(), std::min(out.size(), it->second.size()));
        return Status::Ok();
    }
    Status Remove(std::string_view key, Generation generation) override {
        return records.erase({std::string(key), generation}) ? Status::Ok()
                                                             : Status::NotFound("no record");
    }
    void Pin(std::string_view key, Generation generation) override {
        ++pins[{std::string(key), generation}];
    }
    void Unpin(std::string_view key, Generation generation) override {
        --pins[{std::string(key), generation}];
    }
    std::vector<DiskObjectInfo> List() const override {
        std::vector<DiskObjectInfo> out;
        for (const auto& [id, bytes] : records) out.push_back({id.first, id.second, bytes.size()});
        return out;
    }
    void SetDropListener(std::function<void(const DiskObjectInfo&, DropReason)> l) override {
        listener = std::move(l);
    }
    // The disk drops a record by itself (its LRU eviction, a failed checksum).
    void Drop(const std::string& key, Generation generation) {
        uint64_t size = records[{key, generation}].size();
        records.erase({key, generation});
        if (listener) listener({key, generation, size}, DropReason::kEvicted);
    }
    bool Has(const std::string& key, Generation generation) const {
        return records.count({key, generation}) != 0;
    }
    int Pins(const std::string& key, Generation generation) {
        return pins[{key, generation}];
    }

    bool fail_writes = false, fail_reads = false;
    int write_many_calls = 0;
    // Runs after every write (another thread's write evicting this record, say).
    std::function<void(const std::string&, Generation)> after_write;
    std::map<Id, std::vector<std::byte>> records;
    std::map<Id, int> pins;
    std::function<void(const DiskObjectInfo&, DropReason)> listener;
};

class FakePeers final : public PeerWriter {
public:
    struct Write {
        std::string address, key;
        Generation generation;
        uint64_t offset;
        std::vector<std::byte> bytes;
    };
    Status WriteMemory(std::string_view address, std::string_view key, Generation generation,
                       uint64_t offset, std::span<const std::byte> data) override {
        writes.push_back({std::string(address), std::string(key), generation, offset,
                          {data.begin(), data.end()}});
        return Status::Ok();
    }
    std::vector<Write> writes;
};

// The master through LocalMasterLink, with answers a test may replace, and a record of what
// the worker told it.
class TestLink final : public MasterLink {
public:
    explicit TestLink(MasterStore& store) { Repoint(store); }
    void Repoint(MasterStore& store) { inner_ = std::make_unique<LocalMasterLink>(store); }

    Result<NodeId> RegisterNode(const NodeSpec& spec) override {
        ++registrations;
        auto id = inner_->RegisterNode(spec);
        if (id.ok() && after_register) after_register(*id);
        return id;
    }
    Result<HeartbeatReply> Heartbeat(NodeId node, uint64_t applied) override {
        applied_seen.push_back(applied);
        if (heartbeat_error) return *heartbeat_error;
        return inner_->Heartbeat(node, applied);
    }
    Status UnregisterNode(NodeId node) override { return inner_->UnregisterNode(node); }
    Result<std::vector<Status>> RegisterDiskReplicas(
        NodeId node, std::span<const DiskReplicaReport> reports) override {
        ++disk_registrations;
        if (!disk_register_errors.empty()) {  // the call fails (a lost reply, say)
            Status st = disk_register_errors.front();
            disk_register_errors.pop_front();
            return st;
        }
        auto out = inner_->RegisterDiskReplicas(node, reports);
        if (out.ok() && rewrite_disk_answer) {  // the answer about one report is replaced
            for (size_t i = 0; i < reports.size() && i < out->size(); ++i) {
                if (std::optional<Status> st = rewrite_disk_answer(reports[i])) (*out)[i] = *st;
            }
        }
        return out;
    }
    Result<std::vector<Status>> RegisterMemoryReplicas(
        NodeId node, std::span<const MemoryReplicaReport> reports) override {
        return inner_->RegisterMemoryReplicas(node, reports);
    }
    Status ReportDiskReplicaDropped(NodeId node, std::string_view key, Generation gen) override {
        ++drops_reported;
        return inner_->ReportDiskReplicaDropped(node, key, gen);
    }
    Status ReportNodeHealth(NodeId node, const NodeHealth& health) override {
        health_seen.push_back(health);
        return inner_->ReportNodeHealth(node, health);
    }
    Result<std::vector<OffloadTask>> OffloadObjectHeartbeat(
        NodeId node, size_t max, std::chrono::milliseconds wait) override {
        return inner_->OffloadObjectHeartbeat(node, max, wait);
    }
    Status NotifyOffloadSuccess(NodeId node, std::string_view key, Generation gen) override {
        if (before_offload_success) {
            auto hook = std::exchange(before_offload_success, nullptr);  // once
            hook();
        }
        if (offload_success_answer) return *offload_success_answer;
        return inner_->NotifyOffloadSuccess(node, key, gen);
    }
    Status NotifyOffloadFailure(NodeId node, std::string_view key, Generation gen) override {
        ++offload_failures;
        return inner_->NotifyOffloadFailure(node, key, gen);
    }
    Result<std::vector<PromotionTask>> PromotionObjectHeartbeat(
        NodeId node, size_t max, std::chrono::milliseconds wait) override {
        return inner_->PromotionObjectHeartbeat(node, max, wait);
    }
    Result<StagedRange> PromotionAllocStart(NodeId node, std::string_view key, Generation gen,
                                            uint64_t size) override {
        ++alloc_calls;
        if (!alloc_answers.empty()) {
            Status st = alloc_answers.front();
            alloc_answers.pop_front();
            return st;
        }
        auto staged = inner_->PromotionAllocStart(node, key, gen, size);
        if (staged.ok() && stage_on_peer) {
            staged->replica.node = stage_on_peer->first;
            staged->data_address = stage_on_peer->second;
        }
        return staged;
    }
    Status NotifyPromotionSuccess(NodeId node, std::string_view key, Generation gen) override {
        ++promotion_commits;
        if (promotion_success_answer) return *promotion_success_answer;
        return inner_->NotifyPromotionSuccess(node, key, gen);
    }
    Status NotifyPromotionFailure(NodeId node, std::string_view key, Generation gen) override {
        ++promotion_failures;
        return inner_->NotifyPromotionFailure(node, key, gen);
    }
    Status PutEnd(ClientId client, std::string_view key, Generation gen) override {
        return inner_->PutEnd(client, key, gen);
    }

    int disk_registrations = 0;
    std::deque<Status> disk_register_errors;
    std::function<std::optional<Status>(const DiskReplicaReport&)> rewrite_disk_answer;
    int registrations = 0, drops_reported = 0, offload_failures = 0, alloc_calls = 0,
        promotion_commits = 0, promotion_failures = 0;
    std::vector<uint64_t> applied_seen;
    std::vector<NodeHealth> health_seen;
    std::optional<Status> heartbeat_error, offload_success_answer, promotion_success_answer;
    std::deque<Status> alloc_answers;
    std::optional<std::pair<NodeId, std::string>> stage_on_peer;
    // Runs as soon as the master registered the node, before the worker hears back.
    std::function<void(NodeId)> after_register;
    // Runs once, when an offload's success next reaches the link, before the master has it.
    std::function<void()> before_offload_success;

private:
    std::unique_ptr<LocalMasterLink> inner_;
};

class NodeWorkerTest : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(config_.Set("put_wait_for_offload_ms", "0").ok());
        ASSERT_TRUE(config_.Set("default_kv_lease_ttl", "0").ok());
        store_ = std::make_unique<MasterStore>(config_, clock_, metrics_, 1);
        link_ = std::make_unique<TestLink>(*store_);
    }

    NodeWorker& Worker(NodeWorkerOptions options = {}) {
        options.spec = {"node-a", "a:data", 16 * kObject, 1 << 20};
        options.sleep = [this](std::chrono::milliseconds d) {
            slept_.push_back(d);
            clock_.Advance(d);
            return true;
        };
        worker_ = std::make_unique<NodeWorker>(std::move(options), *link_, segment_, &disk_,
                                               &peers_, clock_, metrics_);
        EXPECT_TRUE(worker_->Register().ok());
        return *worker_;
    }

    // A COMPLETE MEMORY object in the worker's segment, bytes written as a client would.
    Generation Put(const std::string& key, char fill) {
        auto start = store_->PutStart(kClient, key, kObject, worker_->id());
        EXPECT_TRUE(start.ok()) << start.status().ToString();
        if (!start.ok()) return kNoGeneration;
        EXPECT_TRUE(segment_.Write(key, start->generation, start->replica.offset, Bytes(fill)).ok());
        EXPECT_TRUE(store_->PutEnd(kClient, key, start->generation).ok());
        return start->generation;
    }

    // Put, evicted from DRAM (offload on evict), offloaded by the worker: LOCAL_DISK only.
    Generation PutOnDisk(const std::string& key, char fill) {
        Generation gen = Put(key, fill);
        auto evicted = store_->Evict(key);
        EXPECT_TRUE(evicted.ok() && *evicted == ManualOutcome::kQueued);
        EXPECT_EQ(worker_->RunOffloads(100).done, 1u);
        (void)worker_->Heartbeat();  // the master's release of the DRAM range
        EXPECT_EQ(Tiers(key), std::vector<Tier>{Tier::kLocalDisk});
        return gen;
    }

    // The offload task of `key` (queued by the master), handed to the worker: none if the
    // master did not hand out exactly one.
    std::optional<OffloadTask> TakeOffload(const std::string& key) {
        EXPECT_EQ(*store_->Offload(key), ManualOutcome::kQueued);
        auto tasks = worker_->PollOffloads(worker_->id(), 100, std::chrono::milliseconds(0));
        if (!tasks.ok() || tasks->size() != 1) return std::nullopt;
        return tasks->front();
    }

    std::vector<Tier> Tiers(const std::string& key) {
        auto view = store_->Stat(key);
        return view.ok() ? view->CompleteTiers() : std::vector<Tier>{};
    }
    double Refused(const std::string& reason) {
        return metrics_.Value("node_disk_records_refused_total", {{"reason", reason}}).value_or(0);
    }
    // The node's own disk figures, as the daemon reports them after every beat.
    NodeHealth DiskHealth() const {
        NodeHealth h;
        for (const auto& [id, bytes] : disk_.records) {
            ++h.disk_objects;
            h.disk_used += DiskFootprint(bytes.size());
        }
        return h;
    }
    std::vector<std::string> Violations() { return store_->CheckInvariants().violations; }
    double Metric(const std::string& name, const Labels& labels = {}) {
        return metrics_.Value(name, labels).value_or(-1);
    }
    uint64_t DramUsed() {
        uint64_t used = 0;
        for (const NodeInfo& n : store_->Nodes()) used += n.segment_used;
        return used;
    }

    Config config_;
    ManualClock clock_;
    MetricsRegistry metrics_;
    std::unique_ptr<MasterStore> store_;
    std::unique_ptr<TestLink> link_;
    FakeSegment segment_;
    FakeDisk disk_;
    FakePeers peers_;
    std::unique_ptr<NodeWorker> worker_;
    std::vector<std::chrono::milliseconds> slept_;
};

// ---------------- offload ----------------

TEST_F(NodeWorkerTest, OffloadWritesTheSegmentBytesToDiskAndTellsTheMaster) {
    NodeWorker& w = Worker();
    Generation gen = Put("k", 'x');
    ASSERT_EQ(*store_->Offload("k"), ManualOutcome::kQueued);
    NodeWorker::Ran ran = w.RunOffloads(100);
    EXPECT_EQ(ran.tasks, 1u);
    EXPECT_EQ(ran.done, 1u);
    ASSERT_TRUE(disk_.Has("k", gen));
    EXPECT_EQ((disk_.records[{"k", gen}]), Bytes('x'));
    EXPECT_EQ(Tiers("k"), (std::vector<Tier>{Tier::kMemory, Tier::kLocalDisk}));
    EXPECT_EQ(Metric("node_offloads_total", {{"result", "ok"}}), 1);
}

TEST_F(NodeWorkerTest, OffloadDiskWriteFailureIsReportedAndLeavesNoRecord) {
    NodeWorker& w = Worker();
    Generation gen = Put("k", 'x');
    ASSERT_EQ(*store_->Offload("k"), ManualOutcome::kQueued);
    disk_.fail_writes = true;
    EXPECT_EQ(w.RunOffloads(100).done, 0u);
    EXPECT_EQ(link_->offload_failures, 1);
    EXPECT_FALSE(disk_.Has("k", gen));
    EXPECT_EQ(Metric("offload_failed_total"), 1);
    EXPECT_EQ(Metric("offload_in_flight"), 0);  // the master is not left waiting for it
    EXPECT_EQ(Tiers("k"), std::vector<Tier>{Tier::kMemory});
}

TEST_F(NodeWorkerTest, OffloadFaultPointFailsTheWriteLikeTheDisk) {
    NodeWorkerOptions options;
    options.fault = [](const char* point) {
        return std::string_view(point) == "disk.write" ? Status::IoError("injected")
                                                       : Status::Ok();
    };
    NodeWorker& w = Worker(std::move(options));
    Generation gen = Put("k", 'x');
    ASSERT_EQ(*store_->Offload("k"), ManualOutcome::kQueued);
    EXPECT_EQ(w.RunOffloads(100).done, 0u);
    EXPECT_EQ(link_->offload_failures, 1);
    EXPECT_FALSE(disk_.Has("k", gen));
}

TEST_F(NodeWorkerTest, OffloadTheMasterNoLongerWantsDeletesTheWrittenRecord) {
    NodeWorker& w = Worker();
    Generation gen = Put("k", 'x');
    std::optional<OffloadTask> task = TakeOffload("k");
    ASSERT_TRUE(task);
    ASSERT_TRUE(store_->Remove("k", /*force=*/true).ok());  // cancels the task
    EXPECT_FALSE(w.RunOffload(w.id(), *task));
    EXPECT_FALSE(disk_.Has("k", gen)) << "orphan record left on disk";
    EXPECT_EQ(link_->offload_failures, 0);  // written fine: nothing to report as failed
}

// Offloads run as a batch: their bytes go to the disk in one WriteMany, and each is answered
// to the master on its own (one the master no longer wants is deleted, the others taken).
TEST_F(NodeWorkerTest, OffloadBatchWritesTogetherAndAnswersEachTask) {
    NodeWorker& w = Worker();
    std::vector<OffloadTask> tasks;
    std::vector<Generation> gens;
    for (int i = 0; i < 4; ++i) {
        const std::string key = "k" + std::to_string(i);
        gens.push_back(Put(key, static_cast<char>('a' + i)));
        std::optional<OffloadTask> task = TakeOffload(key);
        ASSERT_TRUE(task) << key;
        tasks.push_back(*task);
    }
    ASSERT_TRUE(store_->Remove("k2", /*force=*/true).ok());  // cancels its task
    EXPECT_EQ(w.RunOffloadBatch(w.id(), tasks), 3u);
    EXPECT_EQ(disk_.write_many_calls, 1);
    for (int i : {0, 1, 3}) {
        const std::string key = "k" + std::to_string(i);
        ASSERT_TRUE(disk_.Has(key, gens[i])) << key;
        EXPECT_EQ(disk_.records[FakeDisk::Id(key, gens[i])], Bytes(static_cast<char>('a' + i)))
            << key;
        EXPECT_EQ(Tiers(key), (std::vector<Tier>{Tier::kMemory, Tier::kLocalDisk})) << key;
    }
    EXPECT_FALSE(disk_.Has("k2", gens[2])) << "orphan record left on disk";
    EXPECT_EQ(link_->offload_failures, 0);
    EXPECT_EQ(Metric("offload_in_flight"), 0);
}

TEST_F(NodeWorkerTest, OffloadSuccessWhoseAnswerIsLostKeepsTheRecord) {
    NodeWorker& w = Worker();
    Generation gen = Put("k", 'x');
    ASSERT_EQ(*store_->Offload("k"), ManualOutcome::kQueued);
    link_->offload_success_answer = Status::Unavailable("connection reset");
    EXPECT_EQ(w.RunOffloads(100).done, 0u);
    // The master may have taken it: the record stays for re-registration to reconcile.
    EXPECT_TRUE(disk_.Has("k", gen));
}

// A disk smaller than the writes in flight: another offload's write evicts this record
// before its success is reported. The master must not take a copy the disk no longer holds:
// the offload fails and the object stays in MEMORY. The drop is still reported (the master
// might have had the copy from elsewhere; it answers NotFound here).
TEST_F(NodeWorkerTest, OffloadWhoseRecordTheDiskEvictedBeforeItsReportFails) {
    NodeWorker& w = Worker();
    Put("k", 'x');
    ASSERT_EQ(*store_->Offload("k"), ManualOutcome::kQueued);
    disk_.after_write = [this](const std::string& key, Generation g) { disk_.Drop(key, g); };
    EXPECT_EQ(w.RunOffloads(100).done, 0u);
    EXPECT_EQ(link_->offload_failures, 1);
    EXPECT_EQ(Tiers("k"), std::vector<Tier>{Tier::kMemory});
    EXPECT_EQ(w.FlushDrops(), 1u);
    EXPECT_EQ(Tiers("k"), std::vector<Tier>{Tier::kMemory});
    EXPECT_EQ(Metric("offload_in_flight"), 0);
    EXPECT_TRUE(Violations().empty());
}

// The record is evicted while the master takes the offload, and the heartbeat thread flushes
// drops meanwhile. Reported then, the drop would reach the master before the copy (ignored:
// NotFound), and the master would serve a record the disk no longer holds. It is held until
// the master has answered, and reported after.
TEST_F(NodeWorkerTest, ARecordDroppedWhileTheMasterTakesItsOffloadIsReportedAfterIt) {
    NodeWorker& w = Worker();
    Generation gen = Put("k", 'x');
    ASSERT_EQ(*store_->Offload("k"), ManualOutcome::kQueued);
    link_->before_offload_success = [&] {
        disk_.Drop("k", gen);
        w.FlushDrops();  // as the heartbeat thread, woken by the drop, would
    };
    EXPECT_EQ(w.RunOffloads(100).done, 1u);
    EXPECT_EQ(w.FlushDrops(), 1u);
    EXPECT_EQ(Tiers("k"), std::vector<Tier>{Tier::kMemory})
        << "the master still lists a LOCAL_DISK copy the disk dropped";
    EXPECT_TRUE(Violations().empty());
}

// While an offload is between its write and its report, the master learns of the new record
// another way (a registration's disk list, as after the node registered again) and takes it.
// The disk then evicts it, before the offload reports: the offload fails, and the drop is
// still reported, so the copy the master took goes too.
TEST_F(NodeWorkerTest, ADropHeldForAnOffloadThatFailsIsStillReported) {
    NodeWorker& w = Worker();
    Generation gen = Put("k", 'x');
    std::optional<OffloadTask> task = TakeOffload("k");
    ASSERT_TRUE(task);
    disk_.after_write = [&](const std::string& key, Generation g) {
        disk_.after_write = nullptr;
        std::vector<DiskReplicaReport> held{{key, g, kObject}};
        ASSERT_TRUE(store_->RegisterDiskReplicas(w.id(), held).ok());
        ASSERT_EQ(Tiers(key), (std::vector<Tier>{Tier::kMemory, Tier::kLocalDisk}));
        disk_.Drop(key, g);
    };
    EXPECT_FALSE(w.RunOffload(w.id(), *task));
    EXPECT_EQ(w.FlushDrops(), 1u);
    EXPECT_EQ(Tiers("k"), std::vector<Tier>{Tier::kMemory})
        << "the master still lists the dropped record " << gen;
}

// ---------------- promotion ----------------

TEST_F(NodeWorkerTest, PromotionCopiesTheDiskBytesIntoItsOwnSegment) {
    NodeWorker& w = Worker();
    Generation gen = PutOnDisk("k", 'p');
    ASSERT_EQ(*store_->Promote("k", /*force=*/false), ManualOutcome::kQueued);
    NodeWorker::Ran ran = w.RunPromotions(100);
    EXPECT_EQ(ran.done, 1u);
    auto view = store_->Stat("k");
    ASSERT_TRUE(view.ok());
    EXPECT_TRUE(view->HasComplete(Tier::kMemory));
    const ReplicaDesc& memory = view->replicas.front();
    ASSERT_EQ(memory.tier, Tier::kMemory);
    ASSERT_TRUE(segment_.ranges.count(memory.offset));
    EXPECT_EQ(segment_.ranges[memory.offset].generation, gen);
    EXPECT_EQ(segment_.ranges[memory.offset].bytes, Bytes('p'));
    EXPECT_TRUE(peers_.writes.empty());
    EXPECT_EQ(disk_.Pins("k", gen), 0);  // the source pinned only while copied
    EXPECT_EQ(Metric("node_promotions_total", {{"result", "ok"}}), 1);
}

TEST_F(NodeWorkerTest, PromotionStagedOnAnotherNodeGoesThroughThePeerWriter) {
    NodeWorker& w = Worker();
    Generation gen = PutOnDisk("k", 'q');
    ASSERT_EQ(*store_->Promote("k", false), ManualOutcome::kQueued);
    segment_.ranges.clear();
    link_->stage_on_peer = std::make_pair(NodeId{99}, std::string("b:data"));
    EXPECT_EQ(w.RunPromotions(100).done, 1u);
    ASSERT_EQ(peers_.writes.size(), 1u);
    EXPECT_EQ(peers_.writes[0].address, "b:data");
    EXPECT_EQ(peers_.writes[0].key, "k");
    EXPECT_EQ(peers_.writes[0].generation, gen);
    EXPECT_EQ(peers_.writes[0].bytes, Bytes('q'));
    EXPECT_TRUE(segment_.ranges.empty()) << "staged elsewhere: nothing lands here";
}

TEST_F(NodeWorkerTest, PromotionStagedOnANodeWithoutDataChannelFails) {
    NodeWorker& w = Worker();
    PutOnDisk("k", 'q');
    ASSERT_EQ(*store_->Promote("k", false), ManualOutcome::kQueued);
    link_->stage_on_peer = std::make_pair(NodeId{99}, std::string());
    EXPECT_EQ(w.RunPromotions(100).done, 0u);
    EXPECT_EQ(link_->promotion_failures, 1);
    EXPECT_EQ(link_->promotion_commits, 0);
}

TEST_F(NodeWorkerTest, PromotionDiskReadFailureIsReportedAndUnpins) {
    NodeWorker& w = Worker();
    Generation gen = PutOnDisk("k", 'p');
    ASSERT_EQ(*store_->Promote("k", false), ManualOutcome::kQueued);
    disk_.fail_reads = true;
    EXPECT_EQ(w.RunPromotions(100).done, 0u);
    EXPECT_EQ(link_->promotion_failures, 1);
    EXPECT_EQ(link_->alloc_calls, 0) << "no staging asked for without the source bytes";
    EXPECT_EQ(disk_.Pins("k", gen), 0);
    EXPECT_EQ(Metric("promotion_in_flight"), 0);
    EXPECT_EQ(Tiers("k"), std::vector<Tier>{Tier::kLocalDisk});
}

TEST_F(NodeWorkerTest, StagingNotReadyIsAskedAgainAfterABackoff) {
    NodeWorker& w = Worker();
    PutOnDisk("k", 'p');
    ASSERT_EQ(*store_->Promote("k", false), ManualOutcome::kQueued);
    for (int i = 0; i < 3; ++i) link_->alloc_answers.push_back(Status::NotReady("offloading"));
    EXPECT_EQ(w.RunPromotions(100).done, 1u);
    EXPECT_EQ(link_->alloc_calls, 4);
    EXPECT_EQ(link_->promotion_failures, 0);
    using std::chrono::milliseconds;
    EXPECT_EQ(slept_, (std::vector<milliseconds>{milliseconds(2), milliseconds(4),
                                                 milliseconds(8)}));
}

TEST_F(NodeWorkerTest, StagingNotReadyForTheWholeWaitGivesUpAndReports) {
    NodeWorkerOptions options;
    options.staging_wait = std::chrono::milliseconds(500);
    NodeWorker& w = Worker(std::move(options));
    PutOnDisk("k", 'p');
    ASSERT_EQ(*store_->Promote("k", false), ManualOutcome::kQueued);
    for (int i = 0; i < 1000; ++i) link_->alloc_answers.push_back(Status::NotReady("offloading"));
    EXPECT_EQ(w.RunPromotions(100).done, 0u);
    EXPECT_EQ(link_->promotion_failures, 1);
    std::chrono::milliseconds total{0};
    for (auto d : slept_) total += d;
    EXPECT_LT(total, std::chrono::milliseconds(500));
    EXPECT_GT(total, std::chrono::milliseconds(400));
    EXPECT_LE(slept_.back(), std::chrono::milliseconds(50));  // backoff capped
    EXPECT_EQ(Metric("promotion_in_flight"), 0);
}

TEST_F(NodeWorkerTest, StagingNoSpaceIsNotRetried) {
    NodeWorker& w = Worker();
    PutOnDisk("k", 'p');
    ASSERT_EQ(*store_->Promote("k", false), ManualOutcome::kQueued);
    link_->alloc_answers.push_back(Status::NoSpace("DRAM full"));
    EXPECT_EQ(w.RunPromotions(100).done, 0u);
    EXPECT_EQ(link_->alloc_calls, 1);
    EXPECT_TRUE(slept_.empty());
    EXPECT_EQ(link_->promotion_failures, 1);
    EXPECT_EQ(Metric("promotion_in_flight"), 0);
}

TEST_F(NodeWorkerTest, SynchronousStagingWaitRunsTheNodesOwnOffloads) {
    NodeWorkerOptions options;
    options.room_wait = NodeWorkerOptions::RoomWait::kRunOffloads;
    NodeWorker& w = Worker(std::move(options));
    PutOnDisk("k", 'p');
    ASSERT_EQ(*store_->Promote("k", false), ManualOutcome::kQueued);
    Generation other = Put("other", 'o');
    ASSERT_EQ(*store_->Offload("other"), ManualOutcome::kQueued);
    // NotReady twice: the first wait runs the queued offload (progress: ask again), the
    // second finds none to run and gives up.
    link_->alloc_answers = {Status::NotReady("offloading"), Status::NotReady("offloading")};
    EXPECT_EQ(w.RunPromotions(100).done, 0u);
    EXPECT_TRUE(disk_.Has("other", other));
    EXPECT_EQ(link_->alloc_calls, 2);
    EXPECT_EQ(link_->promotion_failures, 1);
    EXPECT_TRUE(slept_.empty());
}

TEST_F(NodeWorkerTest, LateCommitOfAnExpiredPromotionIsNotReportedAsFailure) {
    NodeWorkerOptions options;
    options.fault = [this](const char* point) {
        if (std::string_view(point) == "promotion.before_commit") {
            // The node stalls here past the task timeout; the master reaps the task.
            clock_.Advance(std::chrono::seconds(config_.promotion_task_timeout_sec() + 1));
            store_->ReapExpired();
        }
        return Status::Ok();
    };
    NodeWorker& w = Worker(std::move(options));
    PutOnDisk("k", 'p');
    ASSERT_EQ(*store_->Promote("k", false), ManualOutcome::kQueued);
    EXPECT_EQ(w.RunPromotions(100).done, 0u);
    EXPECT_EQ(link_->promotion_commits, 1);
    EXPECT_EQ(link_->promotion_failures, 0) << "the master already freed the staging";
    EXPECT_EQ(Tiers("k"), std::vector<Tier>{Tier::kLocalDisk});
    EXPECT_EQ(DramUsed(), 0u);
    EXPECT_EQ(Metric("node_promotions_total", {{"result", "failed"}}), 1);
}

TEST_F(NodeWorkerTest, LateCommitToARestartedMasterIsNotRetried) {
    NodeWorker& w = Worker();
    PutOnDisk("k", 'p');
    ASSERT_EQ(*store_->Promote("k", false), ManualOutcome::kQueued);
    link_->promotion_success_answer = Status::UnknownNode("master restarted");
    EXPECT_EQ(w.RunPromotions(100).done, 0u);
    EXPECT_EQ(link_->promotion_commits, 1);
    EXPECT_EQ(link_->promotion_failures, 0);
}

// ---------------- heartbeat ----------------

TEST_F(NodeWorkerTest, HeartbeatReleasesRangesDeletesRecordsAndConfirmsTheReply) {
    NodeWorker& w = Worker();
    Put("mem", 'm');
    Generation disk_gen = PutOnDisk("disk", 'd');
    link_->applied_seen.clear();
    ASSERT_TRUE(store_->Remove("mem", true).ok());
    ASSERT_TRUE(store_->Remove("disk", true).ok());
    ASSERT_EQ(segment_.ranges.size(), 1u);
    ASSERT_TRUE(w.Heartbeat().ok());
    EXPECT_TRUE(segment_.ranges.empty());
    EXPECT_FALSE(disk_.Has("disk", disk_gen));
    ASSERT_TRUE(w.Heartbeat().ok());
    ASSERT_EQ(link_->applied_seen.size(), 2u);
    EXPECT_NE(link_->applied_seen[1], 0u) << "the next beat confirms the reply acted on";
    EXPECT_NE(link_->applied_seen[1], link_->applied_seen[0]);
}

TEST_F(NodeWorkerTest, EveryBeatReportsTheNodesOwnDiskFigures) {
    uint64_t corruptions = 0;
    NodeWorkerOptions options;
    options.health = [&corruptions] {
        NodeHealth h;
        h.disk_used = 8192;
        h.disk_objects = 2;
        h.disk_corruptions = corruptions;
        return h;
    };
    NodeWorker& w = Worker(std::move(options));
    ASSERT_TRUE(w.Heartbeat().ok());
    corruptions = 1;
    ASSERT_TRUE(w.Heartbeat().ok());
    ASSERT_EQ(link_->health_seen.size(), 2u) << "one report per beat, changed or not";
    EXPECT_TRUE(link_->health_seen[0].reported);
    EXPECT_EQ(link_->health_seen[0].disk_used, 8192u);
    EXPECT_EQ(link_->health_seen[1].disk_corruptions, 1u);
    link_->heartbeat_error = Status::Unavailable("partitioned");
    EXPECT_FALSE(w.Heartbeat().ok());
    EXPECT_EQ(link_->health_seen.size(), 2u) << "no report after a beat that failed";
}

TEST_F(NodeWorkerTest, LostHeartbeatReplyIsSentAgainAndActedOn) {
    int lose = 0;
    NodeWorkerOptions options;
    options.fault = [&lose](const char* point) {
        if (std::string_view(point) == "heartbeat.reply" && lose > 0) {
            --lose;
            return Status::IoError("reply lost");
        }
        return Status::Ok();
    };
    NodeWorker& w = Worker(std::move(options));
    Put("mem", 'm');
    ASSERT_TRUE(w.Heartbeat().ok());  // nothing pending yet; confirms nothing
    link_->applied_seen.clear();
    ASSERT_TRUE(store_->Remove("mem", true).ok());
    lose = 1;
    EXPECT_FALSE(w.Heartbeat().ok());
    EXPECT_EQ(segment_.ranges.size(), 1u) << "a lost reply is not acted on";
    ASSERT_TRUE(w.Heartbeat().ok());
    EXPECT_TRUE(segment_.ranges.empty()) << "the master sent the release again";
    ASSERT_EQ(link_->applied_seen.size(), 2u);
    EXPECT_EQ(link_->applied_seen[0], link_->applied_seen[1]) << "nothing confirmed in between";
}

TEST_F(NodeWorkerTest, HeartbeatThatCannotReachTheMasterActsOnNothing) {
    NodeWorker& w = Worker();
    Put("mem", 'm');
    ASSERT_TRUE(store_->Remove("mem", true).ok());
    link_->heartbeat_error = Status::Unavailable("partitioned");
    EXPECT_FALSE(w.Heartbeat().ok());
    EXPECT_EQ(segment_.ranges.size(), 1u);
    EXPECT_EQ(link_->registrations, 1) << "unreachable is not unknown: no registering again";
    link_->heartbeat_error.reset();
    ASSERT_TRUE(w.Heartbeat().ok());
    EXPECT_TRUE(segment_.ranges.empty());
}

TEST_F(NodeWorkerTest, UnknownNodeRegistersAgainWithItsRangesAndRecords) {
    NodeWorker& w = Worker();
    Generation mem_gen = Put("mem", 'm');
    Generation disk_gen = PutOnDisk("disk", 'd');
    // The master restarts: it knows nothing.
    store_ = std::make_unique<MasterStore>(config_, clock_, metrics_, 2);
    link_->Repoint(*store_);
    NodeId old_id = w.id();
    EXPECT_TRUE(w.Heartbeat().Is(StatusCode::kUnknownNode));
    EXPECT_EQ(link_->registrations, 2);
    EXPECT_TRUE(w.registered());
    (void)old_id;
    auto mem = store_->Stat("mem");
    ASSERT_TRUE(mem.ok()) << "the DRAM range was not registered again";
    EXPECT_EQ(mem->generation, mem_gen);
    EXPECT_EQ(Tiers("mem"), std::vector<Tier>{Tier::kMemory});
    auto disk = store_->Stat("disk");
    ASSERT_TRUE(disk.ok()) << "the disk record was not registered again";
    EXPECT_EQ(disk->generation, disk_gen);
    EXPECT_EQ(Tiers("disk"), std::vector<Tier>{Tier::kLocalDisk});
    // A fresh registration confirms nothing of the old one.
    ASSERT_TRUE(w.Heartbeat().ok());
    EXPECT_EQ(link_->applied_seen.back(), 0u);
}

TEST_F(NodeWorkerTest, RegisteringDeletesRecordsTheMasterCallsStale) {
    NodeWorker& w = Worker();
    Generation old_gen = PutOnDisk("k", 'o');
    // Rewritten while this node was away: the master knows a newer incarnation.
    ASSERT_TRUE(store_->Remove("k", true).ok());
    ASSERT_TRUE(w.Heartbeat().ok());  // (the delete of the old record is lost with the node)
    disk_.records[{"k", old_gen}] = Bytes('o');
    Generation new_gen = Put("k", 'n');
    ASSERT_GT(new_gen, old_gen);
    disk_.records[{"kept", 9}] = Bytes('c');  // unknown to a restarted master: adopted
    store_ = std::make_unique<MasterStore>(config_, clock_, metrics_, 2);
    link_->Repoint(*store_);
    // The new master learns of "k" (newer) from another node first.
    auto other = store_->RegisterNode({"node-b", "b:data", 16 * kObject, 1 << 20});
    ASSERT_TRUE(other.ok());
    std::vector<DiskReplicaReport> newer{{"k", new_gen, kObject}};
    ASSERT_TRUE((*store_->RegisterDiskReplicas(*other, newer))[0].ok());
    EXPECT_TRUE(w.Heartbeat().Is(StatusCode::kUnknownNode));
    EXPECT_FALSE(disk_.Has("k", old_gen)) << "a stale record was kept";
    EXPECT_EQ(Refused("StaleGeneration"), 1);
    EXPECT_TRUE(disk_.Has("kept", 9));
    EXPECT_EQ(Tiers("kept"), std::vector<Tier>{Tier::kLocalDisk});
}

TEST_F(NodeWorkerTest, RegisteringAgainDeletesRecordsRemovedWhileAway) {
    NodeWorker& w = Worker();
    Generation kept = PutOnDisk("kept", 'c');
    disk_.records[{"gone", 5}] = Bytes('g');  // its key was removed while the node was away
    ASSERT_TRUE(store_->UnregisterNode(w.id()).ok());  // expired by the master
    EXPECT_TRUE(w.Heartbeat().Is(StatusCode::kUnknownNode));
    EXPECT_TRUE(w.registered());
    EXPECT_FALSE(disk_.Has("gone", 5)) << "a record nobody can read again was kept";
    EXPECT_EQ(Refused("NotFound"), 1);
    EXPECT_TRUE(disk_.Has("kept", kept));
    EXPECT_EQ(Tiers("kept"), std::vector<Tier>{Tier::kLocalDisk});
}

// One LOCAL_DISK copy per object: the same incarnation already registered from another
// node's disk is refused (AlreadyExists). Kept, the record held disk space nobody could read
// and `check` saw more on this node's disk than the master counts, from then on.
TEST_F(NodeWorkerTest, RegisteringDeletesARecordAlreadyOnAnotherNodesDiskAndCheckAgrees) {
    NodeWorkerOptions options;
    options.health = [this] { return DiskHealth(); };
    NodeWorker& w = Worker(options);
    Generation gen = PutOnDisk("k", 'd');
    Generation kept = PutOnDisk("kept", 'c');
    store_ = std::make_unique<MasterStore>(config_, clock_, metrics_, 2);  // a new master
    link_->Repoint(*store_);
    auto other = store_->RegisterNode({"node-b", "b:data", 16 * kObject, 1 << 20});
    ASSERT_TRUE(other.ok());
    std::vector<DiskReplicaReport> same{{"k", gen, kObject}};
    ASSERT_TRUE((*store_->RegisterDiskReplicas(*other, same))[0].ok());
    EXPECT_TRUE(w.Heartbeat().Is(StatusCode::kUnknownNode));  // registers again
    EXPECT_FALSE(disk_.Has("k", gen)) << "a record the master refused was kept";
    EXPECT_EQ(Refused("AlreadyExists"), 1);
    EXPECT_TRUE(disk_.Has("kept", kept));
    EXPECT_EQ(Tiers("kept"), std::vector<Tier>{Tier::kLocalDisk});
    ASSERT_TRUE(w.Heartbeat().ok());  // reports the node's own figures
    EXPECT_EQ(Violations(), std::vector<std::string>{});
}

// A record the master cannot take at all (here: empty, so no valid object) is deleted too.
TEST_F(NodeWorkerTest, RegisteringDeletesARecordTheMasterCallsInvalid) {
    disk_.records[{"empty", 7}] = {};
    disk_.records[{"kept", 9}] = Bytes('c');
    Worker();
    EXPECT_FALSE(disk_.Has("empty", 7)) << "an invalid record was kept";
    EXPECT_EQ(Refused("InvalidArgument"), 1);
    EXPECT_TRUE(disk_.Has("kept", 9));
    EXPECT_EQ(Tiers("kept"), std::vector<Tier>{Tier::kLocalDisk});
}

// A lost answer is no refusal: the records are offered again after the next beat (those the
// disk still holds), not deleted and not left unknown to the master.
TEST_F(NodeWorkerTest, RecordsWhoseRegistrationFailedAreOfferedAgainAfterTheNextBeat) {
    NodeWorkerOptions options;
    options.health = [this] { return DiskHealth(); };
    disk_.records[{"kept", 9}] = Bytes('c');
    disk_.records[{"evicted", 8}] = Bytes('e');
    link_->disk_register_errors.push_back(Status::Timeout("the reply was lost"));
    NodeWorker& w = Worker(options);
    EXPECT_TRUE(Tiers("kept").empty());
    disk_.Drop("evicted", 8);  // evicted by the disk meanwhile: not offered again
    ASSERT_TRUE(w.Heartbeat().ok());
    EXPECT_EQ(link_->disk_registrations, 2);
    EXPECT_TRUE(disk_.Has("kept", 9));
    EXPECT_EQ(Tiers("kept"), std::vector<Tier>{Tier::kLocalDisk});
    EXPECT_TRUE(Tiers("evicted").empty());
    EXPECT_EQ(Refused("Timeout"), 0);
    ASSERT_TRUE(w.Heartbeat().ok());
    EXPECT_EQ(link_->disk_registrations, 2) << "offered again with nothing left to offer";
    EXPECT_EQ(Violations(), std::vector<std::string>{});
}

// A transient answer about one record (the master was busy) is not a refusal either.
TEST_F(NodeWorkerTest, ARecordWithATransientAnswerIsOfferedAgainNotDeleted) {
    disk_.records[{"kept", 9}] = Bytes('c');
    int refusals = 1;
    link_->rewrite_disk_answer = [&](const DiskReplicaReport&) -> std::optional<Status> {
        if (refusals-- > 0) return Status::Busy("try later");
        return std::nullopt;
    };
    NodeWorker& w = Worker();
    EXPECT_TRUE(disk_.Has("kept", 9));
    ASSERT_TRUE(w.Heartbeat().ok());
    EXPECT_EQ(Tiers("kept"), std::vector<Tier>{Tier::kLocalDisk});
    EXPECT_EQ(Refused("Busy"), 0);
}

TEST_F(NodeWorkerTest, RangesTheMasterRefusesAreForgotten) {
    NodeWorker& w = Worker();
    Put("k", 'm');
    // A range recorded for an incarnation the new master holds elsewhere.
    store_ = std::make_unique<MasterStore>(config_, clock_, metrics_, 2);
    link_->Repoint(*store_);
    auto other = store_->RegisterNode({"node-b", "b:data", 16 * kObject, 1 << 20});
    ASSERT_TRUE(other.ok());
    auto put = store_->PutStart(kClient, "k", kObject, *other);
    ASSERT_TRUE(put.ok());
    ASSERT_TRUE(store_->PutEnd(kClient, "k", put->generation).ok());
    ASSERT_EQ(segment_.ranges.size(), 1u);
    EXPECT_TRUE(w.Heartbeat().Is(StatusCode::kUnknownNode));
    EXPECT_TRUE(segment_.ranges.empty()) << "a refused range stayed readable under our name";
}

// A client that sees the node registered writes a put into its segment while the worker is
// still reporting what it held before: that range is the new registration's, not a leftover.
TEST_F(NodeWorkerTest, APutWrittenWhileRegisteringIsNotReportedOrReleased) {
    Generation generation = kNoGeneration;
    uint64_t offset = 0;
    link_->after_register = [&](NodeId id) {
        auto start = store_->PutStart(kClient, "racing", kObject, id);
        ASSERT_TRUE(start.ok()) << start.status().ToString();
        generation = start->generation;
        offset = start->replica.offset;
        ASSERT_TRUE(segment_.Write("racing", generation, offset, Bytes('r')).ok());
    };
    Worker();
    ASSERT_NE(generation, kNoGeneration);
    ASSERT_EQ(segment_.ranges.count(offset), 1u) << "the racing put's bytes were released";
    ASSERT_TRUE(store_->PutEnd(kClient, "racing", generation).ok());
    EXPECT_EQ(Tiers("racing"), std::vector<Tier>{Tier::kMemory});
    EXPECT_EQ(segment_.ranges.at(offset).generation, generation);
}

TEST_F(NodeWorkerTest, RecordsTheDiskDropsAreReportedAtTheNextBeat) {
    NodeWorker& w = Worker();
    Generation gen = PutOnDisk("k", 'd');
    bool notified = false;
    w.SetDropNotifier([&notified] { notified = true; });
    disk_.Drop("k", gen);
    EXPECT_TRUE(notified);
    EXPECT_TRUE(w.has_drops());
    ASSERT_TRUE(w.Heartbeat().ok());
    EXPECT_EQ(link_->drops_reported, 1);
    EXPECT_FALSE(w.has_drops());
    EXPECT_TRUE(Tiers("k").empty()) << "the master still serves a dropped record";
}

TEST_F(NodeWorkerTest, LeaveUnregistersOnce) {
    NodeWorker& w = Worker();
    ASSERT_TRUE(w.Leave().ok());
    EXPECT_FALSE(w.registered());
    EXPECT_TRUE(store_->Nodes().empty());
    EXPECT_TRUE(w.Leave().ok());  // nothing left to leave
    EXPECT_FALSE(w.Heartbeat().ok());
    EXPECT_EQ(link_->registrations, 1) << "a node that left does not register again";
}

}  // namespace
}  // namespace mooncake
