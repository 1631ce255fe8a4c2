#include "fuse/inode_table.h"

namespace mooncake::tierfs {

std::optional<Node> FixedNode(uint64_t ino) {
    switch (ino) {
        case kRootIno:
            return Node{NodeKind::kRoot, NodeKind::kRoot, ""};
        case kKeysDirIno:
            return Node{NodeKind::kKeysDir, NodeKind::kRoot, "keys"};
        case kMemoryDirIno:
            return Node{NodeKind::kMemoryDir, NodeKind::kRoot, "MEMORY"};
        case kLocalDiskDirIno:
            return Node{NodeKind::kLocalDiskDir, NodeKind::kRoot, "LOCAL_DISK"};
        case kStatsIno:
            return Node{NodeKind::kStats, NodeKind::kRoot, "stats"};
        case kConfigDirIno:
            return Node{NodeKind::kConfigDir, NodeKind::kRoot, "config"};
        default:
            return std::nullopt;
    }
}

uint64_t InodeTable::Ref(NodeKind kind, NodeKind dir, const std::string& name) {
    MutexLock lock(mu_);
    Key key{kind, dir, name};
    auto it = by_name_.find(key);
    uint64_t ino;
    if (it != by_name_.end()) {
        ino = it->second;
    } else {
        ino = next_ino_++;
        by_name_.emplace(std::move(key), ino);
        by_ino_.emplace(ino, Entry{Node{kind, dir, name}, 0});
    }
    ++by_ino_[ino].lookups;
    return ino;
}

uint64_t InodeTable::Peek(NodeKind kind, NodeKind dir, const std::string& name) const {
    MutexLock lock(mu_);
    auto it = by_name_.find(Key{kind, dir, name});
    return it == by_name_.end() ? 0 : it->second;
}

void InodeTable::Forget(uint64_t ino, uint64_t n) {
    MutexLock lock(mu_);
    auto it = by_ino_.find(ino);
    if (it == by_ino_.end()) return;
    Entry& entry = it->second;
    entry.lookups = n >= entry.lookups ? 0 : entry.lookups - n;
    if (entry.lookups > 0) return;
    by_name_.erase(Key{entry.node.kind, entry.node.dir, entry.node.name});
    by_ino_.erase(it);
}

std::optional<Node> InodeTable::Get(uint64_t ino) const {
    if (auto fixed = FixedNode(ino)) return fixed;
    MutexLock lock(mu_);
    auto it = by_ino_.find(ino);
    if (it == by_ino_.end()) return std::nullopt;
    return it->second.node;
}

size_t InodeTable::size() const {
    MutexLock lock(mu_);
    return by_ino_.size();
}

uint64_t InodeTable::lookups(uint64_t ino) const {
    MutexLock lock(mu_);
    auto it = by_ino_.find(ino);
    return it == by_ino_.end() ? 0 : it->second.lookups;
}

}  // namespace mooncake::tierfs
