// The task protocol both pipelines (promotion, offload) share: finding the task a node
// reports on, and delivering queued tasks.
//
// Delivery: a node's heartbeat takes up to `max` task
// references from one of its queues (core/master/node_table.h), oldest first, waiting up to
// `wait` (real time) while it is empty; each is looked up under its key's shard lock and
// handed to `deliver(meta, ref)`, which returns the task, or nullopt when the entry is stale
// (task ended or delivered already). Entries of removed objects or older generations drop.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/clock.h"
#include "core/base/mutex.h"
#include "core/base/status.h"
#include "core/base/thread_annotations.h"
#include "core/base/types.h"
#include "core/master/node_table.h"
#include "core/master/object_table.h"

namespace mooncake {

template <typename Task, typename Deliver>
std::vector<Task> DeliverTasks(const NodeTable& nodes, ObjectTable& table, NodeId node_id,
                               TaskQueue queue, size_t max, Nanos wait, Deliver deliver) {
    std::vector<Task> out;
    auto node = nodes.Get(node_id);
    if (!node || max == 0) return out;
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (out.size() < max) {
        std::vector<TaskRef> refs =
            node->Take(queue, max - out.size(), out.empty() && wait.count() > 0, deadline);
        if (refs.empty()) break;
        for (TaskRef& ref : refs) {
            Shard& shard = table.ShardFor(ref.key);
            MutexLock lock(shard.mu);
            auto it = shard.objects.find(ref.key);
            if (it == shard.objects.end() || it->second.generation != ref.generation) continue;
            if (std::optional<Task> task = deliver(it->second, ref)) {
                out.push_back(std::move(*task));
            }
        }
    }
    return out;
}

// The `kind` task ("promotion", "offload") of (key, generation) that `node` may act on: the
// object, or NotFound (no such key; no task, `no_task_note` saying how one may have ended),
// StaleGeneration (a newer object has the key), IllegalClient (another node holds the task).
// `holder(meta)` is the node holding the object's task, or nullopt when it has none.
template <typename Holder>
Result<ObjectMeta*> FindTask(Shard& shard, NodeId node, std::string_view key,
                             Generation generation, std::string_view kind,
                             std::string_view no_task_note, Holder holder)
    MC_REQUIRES(shard.mu) {
    auto it = shard.objects.find(std::string(key));
    if (it == shard.objects.end()) {
        return Status::NotFound("key " + QuoteKey(key) + " does not exist");
    }
    ObjectMeta& meta = it->second;
    if (meta.generation != generation) {
        return Status::StaleGeneration("generation " + std::to_string(generation) + " of " +
                                       QuoteKey(key) + " is not the current one");
    }
    const std::optional<NodeId> holder_node = holder(meta);
    if (!holder_node) {
        return Status::NotFound("no " + std::string(kind) + " task for " + QuoteKey(key) +
                                std::string(no_task_note));
    }
    if (*holder_node != node) {
        return Status::IllegalClient("node " + std::to_string(node) + " does not hold the " +
                                     std::string(kind) + " task of " + QuoteKey(key));
    }
    return &meta;
}

// A node's report that it could not do its `kind` task of (key, generation): finds the task
// as FindTask does, under the key's shard lock, and ends it with `end(meta)`. True if a task
// ended; false (and Ok) when none is left to end (a repeated report, or the task was
// cancelled or expired meanwhile); FindTask's other errors otherwise.
template <typename Holder, typename End>
Result<bool> EndFailedTask(ObjectTable& table, NodeId node, std::string_view key,
                           Generation generation, std::string_view kind, Holder holder, End end) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    Shard& shard = table.ShardFor(key);
    MutexLock lock(shard.mu);
    Result<ObjectMeta*> found = FindTask(shard, node, key, generation, kind, "", holder);
    if (!found.ok()) {
        if (found.status().Is(StatusCode::kNotFound)) return false;
        return found.status();
    }
    end(**found);
    return true;
}

}  // namespace mooncake
