// NodeTable, NodeState and SegmentSpace (core/master/node_table.h).
#include "core/master/node_table.h"

#include <algorithm>

namespace mooncake {

std::optional<uint64_t> SegmentSpace::Allocate(uint64_t size) {
    MutexLock lock(mu_);
    return allocator_.Allocate(size);
}

bool SegmentSpace::AllocateAt(uint64_t offset, uint64_t size) {
    MutexLock lock(mu_);
    return allocator_.AllocateAt(offset, size);
}

void SegmentSpace::Free(uint64_t offset, uint64_t size) {
    MutexLock lock(mu_);
    allocator_.Free(offset, size);
}

uint64_t SegmentSpace::capacity() const {
    MutexLock lock(mu_);
    return allocator_.capacity();
}

uint64_t SegmentSpace::used() const {
    MutexLock lock(mu_);
    return allocator_.used();
}

uint64_t SegmentSpace::free_bytes() const {
    MutexLock lock(mu_);
    return allocator_.free_bytes();
}

uint64_t SegmentSpace::largest_free_extent() const {
    MutexLock lock(mu_);
    return allocator_.largest_free_extent();
}

void NodeState::Push(TaskQueue queue, TaskRef ref) {
    MutexLock lock(queue_mu_);
    QueueOf(queue).push_back(std::move(ref));
    work_cv_.NotifyAll();
}

void NodeState::PushReleased(ReleasedRange range) {
    MutexLock lock(queue_mu_);
    pending_.released.push_back(std::move(range));
}

void NodeState::PushDiskDelete(DiskDelete del) {
    MutexLock lock(queue_mu_);
    pending_.disk_deletes.push_back(std::move(del));
    work_cv_.NotifyAll();
}

std::vector<TaskRef> NodeState::Take(TaskQueue queue, size_t max, bool wait,
                                     std::chrono::steady_clock::time_point deadline) {
    std::vector<TaskRef> refs;
    MutexLock lock(queue_mu_);
    std::deque<TaskRef>& q = QueueOf(queue);
    if (wait) {
        while (q.empty() && !gone_) {
            if (!work_cv_.WaitUntil(queue_mu_, deadline)) break;
        }
    }
    while (!q.empty() && refs.size() < max) {
        refs.push_back(std::move(q.front()));
        q.pop_front();
    }
    return refs;
}

void NodeState::MarkGone() {
    MutexLock lock(queue_mu_);
    gone_ = true;
    offload_queue_.clear();
    promotion_queue_.clear();
    work_cv_.NotifyAll();
}

NodeTable::NodeTable(uint32_t epoch)
    : next_reply_seq_((static_cast<uint64_t>(epoch) << 32) | 1) {
    WriterLock lock(mu_);
    next_id_ = (static_cast<uint64_t>(epoch & 0x7FFFFFFFu) << 32) | 1;
}

std::shared_ptr<NodeState> NodeTable::Get(NodeId id) const {
    ReaderLock lock(mu_);
    auto it = nodes_.find(id);
    return it == nodes_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<NodeState>> NodeTable::All() const {
    ReaderLock lock(mu_);
    std::vector<std::shared_ptr<NodeState>> out;
    out.reserve(nodes_.size());
    for (auto& [id, node] : nodes_) out.push_back(node);
    return out;
}

uint64_t NodeTable::LargestSegment() const {
    ReaderLock lock(mu_);
    uint64_t largest = 0;
    for (const auto& [id, node] : nodes_) largest = std::max(largest, node->spec.segment_capacity);
    return largest;
}

bool NodeTable::EndReporting(NodeState& node) {
    if (!node.reporting.exchange(false)) return false;
    reporting_.fetch_sub(1);
    return true;
}

Status NodeTable::StillReporting() const {
    std::string names;
    size_t count = 0;
    {
        ReaderLock lock(mu_);
        for (const auto& [id, node] : nodes_) {
            if (!node->reporting.load()) continue;
            // A long list is cut: the first few name where to look, the count says how many.
            if (count < 8) names += (count == 0 ? "" : ", ") + node->spec.name;
            ++count;
        }
    }
    // The node may have ended its report between the caller's check and this walk.
    const std::string who = count == 0   ? "a node"
                            : count == 1 ? "node " + names
                            : count <= 8 ? "nodes " + names
                                         : "nodes " + names + " and " + std::to_string(count - 8) +
                                               " more";
    const char* verb = count > 1 ? " registered again and are" : " registered again and is";
    return Status::Busy(who + verb +
                        " still reporting the DRAM ranges held (no room is made by eviction "
                        "until then); try again");
}

uint64_t NodeTable::DiskCapacity() const {
    ReaderLock lock(mu_);
    uint64_t total = 0;
    for (const auto& [id, node] : nodes_) total += node->spec.disk_capacity;
    return total;
}

size_t NodeTable::size() const {
    ReaderLock lock(mu_);
    return nodes_.size();
}

// A name is held by one live registration. Under a live name:
//   - the same non-zero incarnation (the node retries after a lost reply) gets that
//     registration back, id unchanged;
//   - a different non-zero incarnation is a restarted (or a second) process: it replaces the
//     old registration at once (the caller cleans it up exactly as expiry does); the old
//     incarnation is refused from then on (StaleGeneration) and gets UnknownNode at its next
//     heartbeat, so the newest process wins and the two never take turns;
//   - incarnation 0 on either side (an older node): refused until the old one expires.
Result<NodeId> NodeTable::Register(const NodeSpec& spec, Nanos now,
                                   std::shared_ptr<NodeState>* replaced) {
    WriterLock lock(mu_);
    if (spec.incarnation != 0) {
        auto sup = superseded_.find(spec.name);
        if (sup != superseded_.end()) {
            for (uint64_t inc : sup->second) {
                if (inc == spec.incarnation) {
                    return Status::StaleGeneration(
                        "node '" + spec.name +
                        "': this process was replaced by a newer one of the same name");
                }
            }
        }
    }
    for (auto& [other_id, node] : nodes_) {
        if (node->spec.name != spec.name) continue;
        if (spec.incarnation != 0 && node->spec.incarnation == spec.incarnation) {
            node->last_heartbeat_ns.store(now.count());
            return other_id;  // our earlier reply was lost
        }
        if (spec.incarnation == 0 || node->spec.incarnation == 0) {
            return Status::InvalidArgument("a live node is already named '" + spec.name +
                                           "' (id " + std::to_string(other_id) + ")");
        }
        *replaced = node;
        break;
    }
    if (*replaced) {
        EndReporting(**replaced);  // it is gone: nothing of it is awaited
        nodes_.erase((*replaced)->id);
        auto& list = superseded_[spec.name];
        list.push_back((*replaced)->spec.incarnation);
        if (list.size() > kSupersededPerName) list.pop_front();
    }
    NodeId id = next_id_++;
    auto node = std::make_shared<NodeState>(id, spec);
    if (node->reporting.load()) reporting_.fetch_add(1);
    node->first_of_name = names_seen_.insert(spec.name).second;
    node->last_heartbeat_ns.store(now.count());
    nodes_.emplace(id, std::move(node));
    return id;
}

std::shared_ptr<NodeState> NodeTable::Remove(NodeId id) {
    WriterLock lock(mu_);
    auto it = nodes_.find(id);
    if (it == nodes_.end()) return nullptr;
    std::shared_ptr<NodeState> node = std::move(it->second);
    nodes_.erase(it);
    EndReporting(*node);
    return node;
}

}  // namespace mooncake
