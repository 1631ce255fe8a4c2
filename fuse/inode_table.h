// InodeTable: the inode numbers mooncake-tierfs hands the kernel, with their lookup counts.
//
// The fixed inodes (root, keys/, MEMORY/, LOCAL_DISK/, stats, config/) always exist. A key's
// file in one of the three key directories, and a knob's file in config/, gets an inode from a
// counter the first time a lookup reports it; the entry lives while the kernel holds lookups on
// it and is dropped when forget/forget_multi bring its count to zero. Numbers are never reused
// (64-bit counter), so the entry generation is always 0.
//
// The same key has a different inode in keys/, MEMORY/ and LOCAL_DISK/: each file answers for
// its own directory (MEMORY/k disappears when k leaves MEMORY while keys/k stays).
//
// Thread-safety: every method may be called from any thread; one mutex guards both maps and is
// never held while anything else is called (no lock order to respect beyond "leaf lock").
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "core/base/mutex.h"

namespace mooncake::tierfs {

enum class NodeKind : uint8_t {
    kRoot,
    kKeysDir,
    kMemoryDir,
    kLocalDiskDir,
    kStats,
    kConfigDir,
    kKeyFile,   // a key's file; `dir` says which directory it is in
    kKnobFile,  // config/<knob>
};

inline constexpr uint64_t kRootIno = 1;  // FUSE_ROOT_ID
inline constexpr uint64_t kKeysDirIno = 2;
inline constexpr uint64_t kMemoryDirIno = 3;
inline constexpr uint64_t kLocalDiskDirIno = 4;
inline constexpr uint64_t kStatsIno = 5;
inline constexpr uint64_t kConfigDirIno = 6;
inline constexpr uint64_t kFirstDynamicIno = 16;

struct Node {
    NodeKind kind = NodeKind::kRoot;
    NodeKind dir = NodeKind::kRoot;  // kKeyFile: kKeysDir, kMemoryDir or kLocalDiskDir
    std::string name;                // kKeyFile: the raw key; kKnobFile: the knob name
};

// The fixed node for `ino`, if it is one.
std::optional<Node> FixedNode(uint64_t ino);

class InodeTable {
  public:
    // The inode of (kind, dir, name) with its lookup count raised by one; created if absent.
    uint64_t Ref(NodeKind kind, NodeKind dir, const std::string& name);
    // The inode if the entry exists now (no count change), else 0.
    uint64_t Peek(NodeKind kind, NodeKind dir, const std::string& name) const;
    // Lowers the lookup count by `n`; the entry goes at zero. Fixed or unknown inodes: no-op.
    void Forget(uint64_t ino, uint64_t n);
    // The node behind `ino` (fixed or dynamic), nullopt if the kernel forgot it.
    std::optional<Node> Get(uint64_t ino) const;

    size_t size() const;                   // dynamic entries alive
    uint64_t lookups(uint64_t ino) const;  // for tests

  private:
    struct Entry {
        Node node;
        uint64_t lookups = 0;
    };
    using Key = std::tuple<NodeKind, NodeKind, std::string>;

    mutable Mutex mu_;
    uint64_t next_ino_ MC_GUARDED_BY(mu_) = kFirstDynamicIno;
    std::unordered_map<uint64_t, Entry> by_ino_ MC_GUARDED_BY(mu_);
    std::map<Key, uint64_t> by_name_ MC_GUARDED_BY(mu_);
};

}  // namespace mooncake::tierfs
