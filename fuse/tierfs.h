// TierFs: the mooncake-tierfs file system, on the libfuse3 low-level API.
//
//   /keys/<name>        every key with a COMPLETE replica; content: a short description
//   /MEMORY/<name>      keys with a COMPLETE MEMORY replica
//   /LOCAL_DISK/<name>  keys with a COMPLETE LOCAL_DISK replica
//   /stats              the master's metrics (Prometheus text)
//   /config/<knob>      a knob's current value and a newline; writable with -o rw (tunable knobs)
// <name> is name_codec::Encode(key). A key's file carries user.mooncake.* extended attributes
// (render.h). Everything is read from the master with inspection calls only (Stat, List,
// MetricsText, TuneGet): looking never counts as an access.
//
// Freshness: nothing is cached here beyond one open directory's current page and one open
// file's content; the kernel caches entries and attributes for `cache_timeout` (0.5 s) and
// never caches directory listings or failed lookups, so a tier change shows within a second.
// Directory listings page through the master (List with start_after, kListPage keys a call).
//
// Locks: InodeTable's mutex, hashed_mu_, a DirHandle's mu and a FileHandle's mu. Lock order:
// DirHandle::mu / FileHandle::mu, then InodeTable's or hashed_mu_ (both leaves, never held
// together and never across an RPC). Only the handle locks may be held across an RPC: they
// serialize calls on one open handle, never the file system. No lock is held while replying
// to the kernel: once a reply is out, a release of the same handle may run on another thread
// and free it.
//
// Thread-safety: the callbacks run on libfuse's worker threads, any number at once.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/base/mutex.h"
#include "fuse/inode_table.h"
#include "fuse/master_connection.h"
#include "fuse/open_handles.h"

struct fuse_lowlevel_ops;

namespace mooncake::tierfs {

struct TierFsOptions {
    bool read_write = false;     // -o rw: config/<knob> writable
    double cache_timeout = 0.5;  // kernel entry and attribute cache, seconds
    size_t list_page = 1000;     // keys per List call when listing a directory
    uid_t uid = 0;               // owner shown on every file
    gid_t gid = 0;
};

class TierFs {
  public:
    TierFs(MasterConnection* master, TierFsOptions options);

    // The callbacks for fuse_session_new; userdata must be this TierFs.
    static const fuse_lowlevel_ops& Ops();

    // Callback bodies (public for the trampolines in tierfs.cc).
    struct Impl;

    MasterConnection& master() { return *master_; }
    const TierFsOptions& options() const { return options_; }
    InodeTable& inodes() { return inodes_; }

    // Remembers a hashed name seen in a listing; the key it stands for if known.
    void RememberHashed(const std::string& name, const std::string& key);
    bool LookupHashed(const std::string& name, std::string* key);

  private:
    static constexpr size_t kMaxHashedNames = 1 << 20;

    MasterConnection* master_;
    const TierFsOptions options_;
    InodeTable inodes_;
    OpenHandles open_handles_;  // what open/opendir handed the kernel, until its release
    Mutex hashed_mu_;
    std::unordered_map<std::string, std::string> hashed_names_ MC_GUARDED_BY(hashed_mu_);
};

}  // namespace mooncake::tierfs
