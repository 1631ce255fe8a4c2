// Task delivery, one protocol for both pipelines: a node's heartbeat takes up to `max` task
// references from one of its queues (core/master/node_table.h), oldest first, waiting up to
// `wait` (real time) while it is empty; each is looked up under its key's shard lock and
// handed to `deliver(meta, ref)`, which returns the task, or nullopt when the entry is stale
// (task ended or delivered already). Entries of removed objects or older generations drop.
#pragma once

#include <chrono>
#include <optional>
#include <vector>

#include "core/base/clock.h"
#include "core/base/mutex.h"
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

}  // namespace mooncake
