#include "fuse/tierfs.h"

#include <fuse_lowlevel.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <optional>
#include <vector>

#include "fuse/name_codec.h"
#include "fuse/render.h"

namespace mooncake::tierfs {
namespace {

// d_ino of a directory entry whose inode is not assigned yet (the high-level API's choice).
constexpr ino_t kUnknownIno = 0xffffffff;

struct RootEntry {
    const char* name;
    uint64_t ino;
    bool dir;
};
constexpr RootEntry kRootEntries[] = {
    {"keys", kKeysDirIno, true},
    {"MEMORY", kMemoryDirIno, true},
    {"LOCAL_DISK", kLocalDiskDirIno, true},
    {"stats", kStatsIno, false},
    {"config", kConfigDirIno, true},
};

bool IsKeyDir(NodeKind kind) {
    return kind == NodeKind::kKeysDir || kind == NodeKind::kMemoryDir ||
           kind == NodeKind::kLocalDiskDir;
}

bool IsDir(NodeKind kind) {
    return kind == NodeKind::kRoot || kind == NodeKind::kConfigDir || IsKeyDir(kind);
}

// The tier a key directory lists, nullopt for keys/ (every key).
std::optional<Tier> TierOf(NodeKind dir) {
    if (dir == NodeKind::kMemoryDir) return Tier::kMemory;
    if (dir == NodeKind::kLocalDiskDir) return Tier::kLocalDisk;
    return std::nullopt;
}

// Whether `object` belongs in directory `dir`: keys/ shows what List shows (a COMPLETE
// replica somewhere), a tier directory what has a COMPLETE replica in that tier.
bool Belongs(const ObjectView& object, NodeKind dir) {
    if (auto tier = TierOf(dir)) return object.HasComplete(*tier);
    return object.HasComplete(Tier::kMemory) || object.HasComplete(Tier::kLocalDisk);
}

std::string Trim(std::string_view text) {
    size_t begin = 0, end = text.size();
    auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    while (begin < end && space(text[begin])) ++begin;
    while (end > begin && space(text[end - 1])) --end;
    return std::string(text.substr(begin, end - begin));
}

const KnobInfo* FindKnob(const std::vector<KnobInfo>& knobs, std::string_view name) {
    for (const KnobInfo& k : knobs) {
        if (k.name == name) return &k;
    }
    return nullptr;
}

// An open file: its content, read once at open so every read of one open sees one snapshot.
struct FileHandle {
    Mutex mu;
    std::string content MC_GUARDED_BY(mu);
    std::string knob MC_GUARDED_BY(mu);     // writable config/<knob>: the knob
    std::string pending MC_GUARDED_BY(mu);  // what has been written to it so far

    // At open, before the kernel has the handle: the lock is uncontended.
    void Fill(std::string knob_name, std::string text) MC_EXCLUDES(mu) {
        MutexLock lock(mu);
        knob = std::move(knob_name);
        content = std::move(text);
    }
};

struct DirEntry {
    std::string name;
    std::string key;
};

// An open directory. Entry offsets: 0 ".", 1 "..", 2 + i the i-th entry; the offset the kernel
// passes back is the index of the next entry to return.
struct DirHandle {
    Mutex mu;
    NodeKind kind = NodeKind::kRoot;  // set at open, before the kernel has the handle
    // Key directories: one page of the master's sorted listing.
    uint64_t page_start MC_GUARDED_BY(mu) = 0;  // index of page[0]
    std::vector<DirEntry> page MC_GUARDED_BY(mu);
    bool more MC_GUARDED_BY(mu) = true;      // pages after this one may exist
    bool started MC_GUARDED_BY(mu) = false;  // the first page was asked for
    // config/: the knob names, read at offset 0.
    std::vector<std::string> knobs MC_GUARDED_BY(mu);
};

template <typename H>
H* HandleOf(const fuse_file_info* fi) {
    return OpenHandles::Get<H>(fi->fh);
}

}  // namespace

// ---------------------------------------------------------------------------------------------

struct TierFs::Impl {
    static TierFs& Fs(fuse_req_t req) { return *static_cast<TierFs*>(fuse_req_userdata(req)); }

    static struct stat MakeStat(const TierFs& fs, uint64_t ino, bool dir, mode_t perm,
                                uint64_t size) {
        struct stat st;
        std::memset(&st, 0, sizeof(st));
        st.st_ino = ino;
        st.st_mode = (dir ? S_IFDIR : S_IFREG) | perm;
        st.st_nlink = dir ? 2 : 1;
        st.st_uid = fs.options_.uid;
        st.st_gid = fs.options_.gid;
        st.st_size = static_cast<off_t>(size);
        st.st_blksize = 4096;
        st.st_blocks = static_cast<blkcnt_t>((size + 511) / 512);
        st.st_atim = st.st_mtim = st.st_ctim = MountTime();
        return st;
    }

    static timespec MountTime() {
        static const timespec kMounted = [] {
            timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            return ts;
        }();
        return kMounted;
    }

    static mode_t KnobMode(const TierFs& fs, const KnobInfo& knob) {
        return fs.options_.read_write && knob.tunable ? 0644 : 0444;
    }

    static int RefusedWriteErrno(const TierFs& fs) {
        return fs.options_.read_write ? EACCES : EROFS;
    }

    // ---- resolving names ----

    // The key behind `name` in key directory `dir`: decoded, or for a hashed name found among
    // the names listed so far, else by listing the keys that share its readable prefix.
    static Result<std::string> ResolveName(TierFs& fs, NodeKind dir, const std::string& name) {
        if (!name_codec::IsHashedName(name)) {
            auto key = name_codec::Decode(name);
            if (!key) return Status::NotFound("not a key's name");
            return *key;
        }
        std::string key;
        if (fs.LookupHashed(name, &key)) return key;
        auto prefix = name_codec::HashedNameKeyPrefix(name);
        if (!prefix) return Status::NotFound("not a key's name");
        ListOptions options;
        options.tier = TierOf(dir);
        options.prefix = *prefix;
        options.limit = fs.options_.list_page;
        for (;;) {
            auto page = fs.master().Call([&](Client& c) { return c.List(options); });
            if (!page.ok()) return page.status();
            for (const ObjectInfo& info : page->objects) {
                std::string encoded = name_codec::Encode(info.object.key);
                if (!name_codec::IsHashedName(encoded)) continue;
                fs.RememberHashed(encoded, info.object.key);
                if (encoded == name) return info.object.key;
            }
            if (!page->more || page->objects.empty()) break;
            options.start_after = page->objects.back().object.key;
        }
        return Status::NotFound("no key has that name");
    }

    // Stat of `key`, NotFound unless it belongs in `dir`.
    static Result<ObjectInfo> StatIn(TierFs& fs, NodeKind dir, const std::string& key) {
        if (!ValidateUserKey(key).ok()) return Status::NotFound("not a valid key");
        auto info = fs.master().Call([&](Client& c) { return c.Stat(key); });
        if (!info.ok()) return info.status();
        if (!Belongs(info->object, dir)) return Status::NotFound("not in this directory");
        return info;
    }

    static Result<std::vector<KnobInfo>> Knobs(TierFs& fs) {
        return fs.master().Call([](Client& c) { return c.TuneGet(); });
    }

    // The attributes of `node`, with an RPC where the size depends on the master.
    static Result<struct stat> Attr(TierFs& fs, uint64_t ino, const Node& node) {
        switch (node.kind) {
            case NodeKind::kRoot:
            case NodeKind::kKeysDir:
            case NodeKind::kMemoryDir:
            case NodeKind::kLocalDiskDir:
            case NodeKind::kConfigDir:
                return MakeStat(fs, ino, true, 0555, 0);
            case NodeKind::kStats: {
                auto text = fs.master().Call([](Client& c) { return c.MetricsText(); });
                if (!text.ok()) return text.status();
                return MakeStat(fs, ino, false, 0444, text->size());
            }
            case NodeKind::kKeyFile: {
                auto info = StatIn(fs, node.dir, node.name);
                if (!info.ok()) return info.status();
                return MakeStat(fs, ino, false, 0444, Describe(*info).size());
            }
            case NodeKind::kKnobFile: {
                auto knobs = Knobs(fs);
                if (!knobs.ok()) return knobs.status();
                const KnobInfo* knob = FindKnob(*knobs, node.name);
                if (knob == nullptr) return Status::NotFound("no such knob");
                return MakeStat(fs, ino, false, KnobMode(fs, *knob), knob->value.size() + 1);
            }
        }
        return Status::Internal("unknown node kind");
    }

    static void ReplyEntry(fuse_req_t req, TierFs& fs, uint64_t ino, const struct stat& st,
                           bool counted) {
        fuse_entry_param e;
        std::memset(&e, 0, sizeof(e));
        e.ino = ino;
        e.generation = 0;
        e.attr = st;
        e.attr.st_ino = ino;
        e.attr_timeout = fs.options_.cache_timeout;
        e.entry_timeout = fs.options_.cache_timeout;
        // If the reply does not reach the kernel (interrupted), no forget will come for it.
        if (fuse_reply_entry(req, &e) != 0 && counted) fs.inodes_.Forget(ino, 1);
    }

    static void ReplyStatus(fuse_req_t req, const Status& st, const char* what) {
        int err = ErrnoOf(st);
        if (err != ENOENT) spdlog::debug("{}: {}", what, st.ToString());
        fuse_reply_err(req, err);
    }

    // ---- callbacks ----

    static void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name_cstr) {
        TierFs& fs = Fs(req);
        std::string name(name_cstr);
        auto dir = fs.inodes_.Get(parent);
        if (!dir) return (void)fuse_reply_err(req, ESTALE);
        if (!IsDir(dir->kind)) return (void)fuse_reply_err(req, ENOTDIR);
        // The view never makes a name over NAME_MAX (longer keys get hashed names).
        if (name.size() > name_codec::kMaxNameBytes) {
            return (void)fuse_reply_err(req, ENAMETOOLONG);
        }

        if (dir->kind == NodeKind::kRoot) {
            for (const RootEntry& r : kRootEntries) {
                if (name != r.name) continue;
                if (r.dir) {
                    return ReplyEntry(req, fs, r.ino, MakeStat(fs, r.ino, true, 0555, 0), false);
                }
                auto st = Attr(fs, r.ino, *FixedNode(r.ino));
                if (!st.ok()) return ReplyStatus(req, st.status(), "lookup stats");
                return ReplyEntry(req, fs, r.ino, *st, false);
            }
            return (void)fuse_reply_err(req, ENOENT);
        }

        if (dir->kind == NodeKind::kConfigDir) {
            auto knobs = Knobs(fs);
            if (!knobs.ok()) return ReplyStatus(req, knobs.status(), "lookup config");
            const KnobInfo* knob = FindKnob(*knobs, name);
            if (knob == nullptr) return (void)fuse_reply_err(req, ENOENT);
            uint64_t ino = fs.inodes_.Ref(NodeKind::kKnobFile, NodeKind::kConfigDir, name);
            return ReplyEntry(req, fs, ino,
                              MakeStat(fs, ino, false, KnobMode(fs, *knob), knob->value.size() + 1),
                              true);
        }

        // A key directory.
        auto key = ResolveName(fs, dir->kind, name);
        if (!key.ok()) return ReplyStatus(req, key.status(), "lookup");
        auto info = StatIn(fs, dir->kind, *key);
        if (!info.ok()) return ReplyStatus(req, info.status(), "lookup");
        uint64_t ino = fs.inodes_.Ref(NodeKind::kKeyFile, dir->kind, *key);
        ReplyEntry(req, fs, ino, MakeStat(fs, ino, false, 0444, Describe(*info).size()), true);
    }

    static void Forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
        Fs(req).inodes_.Forget(ino, nlookup);
        fuse_reply_none(req);
    }

    static void ForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
        TierFs& fs = Fs(req);
        for (size_t i = 0; i < count; ++i) fs.inodes_.Forget(forgets[i].ino, forgets[i].nlookup);
        fuse_reply_none(req);
    }

    static void GetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
        TierFs& fs = Fs(req);
        auto node = fs.inodes_.Get(ino);
        if (!node) return (void)fuse_reply_err(req, ESTALE);
        auto st = Attr(fs, ino, *node);
        if (!st.ok()) return ReplyStatus(req, st.status(), "getattr");
        fuse_reply_attr(req, &*st, fs.options_.cache_timeout);
    }

    static void SetAttr(fuse_req_t req, fuse_ino_t ino, struct stat*, int to_set, fuse_file_info*) {
        TierFs& fs = Fs(req);
        if (!fs.options_.read_write) return (void)fuse_reply_err(req, EROFS);
        auto node = fs.inodes_.Get(ino);
        if (!node) return (void)fuse_reply_err(req, ESTALE);
        // `> config/<knob>` truncates before it writes: a size change of a tunable knob's file
        // (and the times that come with it) is accepted and changes nothing; the write sets it.
        const int allowed = FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
                            FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_CTIME;
        if (node->kind != NodeKind::kKnobFile || (to_set & ~allowed) != 0) {
            return (void)fuse_reply_err(req, EPERM);
        }
        auto knobs = Knobs(fs);
        if (!knobs.ok()) return ReplyStatus(req, knobs.status(), "setattr");
        const KnobInfo* knob = FindKnob(*knobs, node->name);
        if (knob == nullptr) return (void)fuse_reply_err(req, ENOENT);
        if (!knob->tunable) return (void)fuse_reply_err(req, EPERM);
        struct stat st = MakeStat(fs, ino, false, KnobMode(fs, *knob), knob->value.size() + 1);
        fuse_reply_attr(req, &st, fs.options_.cache_timeout);
    }

    static void Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
        TierFs& fs = Fs(req);
        auto node = fs.inodes_.Get(ino);
        if (!node) return (void)fuse_reply_err(req, ESTALE);
        if (IsDir(node->kind)) return (void)fuse_reply_err(req, EISDIR);
        const int access = fi->flags & O_ACCMODE;
        const bool writing = access != O_RDONLY || (fi->flags & (O_TRUNC | O_APPEND)) != 0;

        auto handle = std::make_unique<FileHandle>();
        if (writing) {
            if (!fs.options_.read_write) return (void)fuse_reply_err(req, EROFS);
            if (node->kind != NodeKind::kKnobFile) return (void)fuse_reply_err(req, EACCES);
            auto knobs = Knobs(fs);
            if (!knobs.ok()) return ReplyStatus(req, knobs.status(), "open config");
            const KnobInfo* knob = FindKnob(*knobs, node->name);
            if (knob == nullptr) return (void)fuse_reply_err(req, ENOENT);
            if (!knob->tunable) {
                spdlog::warn("config/{}: set only at start-up, not at runtime", knob->name);
                return (void)fuse_reply_err(req, EPERM);
            }
            handle->Fill(knob->name, knob->value + "\n");
        } else {
            Result<std::string> content = Content(fs, *node);
            if (!content.ok()) return ReplyStatus(req, content.status(), "open");
            handle->Fill("", std::move(*content));
        }
        fi->direct_io = 1;  // the content is made at open; the page cache must not keep it
        fi->keep_cache = 0;
        fi->nonseekable = 0;
        fi->fh = fs.open_handles_.Adopt(std::move(handle));
        if (fuse_reply_open(req, fi) != 0) fs.open_handles_.Release(fi->fh);
    }

    static Result<std::string> Content(TierFs& fs, const Node& node) {
        switch (node.kind) {
            case NodeKind::kStats:
                return fs.master().Call([](Client& c) { return c.MetricsText(); });
            case NodeKind::kKeyFile: {
                auto info = StatIn(fs, node.dir, node.name);
                if (!info.ok()) return info.status();
                return Describe(*info);
            }
            case NodeKind::kKnobFile: {
                auto knobs = Knobs(fs);
                if (!knobs.ok()) return knobs.status();
                const KnobInfo* knob = FindKnob(*knobs, node.name);
                if (knob == nullptr) return Status::NotFound("no such knob");
                return knob->value + "\n";
            }
            default:
                return Status::InvalidArgument("not a file");
        }
    }

    static void Read(fuse_req_t req, fuse_ino_t, size_t size, off_t off, fuse_file_info* fi) {
        if (off < 0) return (void)fuse_reply_err(req, EINVAL);
        FileHandle* h = HandleOf<FileHandle>(fi);
        std::string data;
        {
            MutexLock lock(h->mu);  // a write may change the content
            size_t from = std::min(static_cast<size_t>(off), h->content.size());
            data = h->content.substr(from, std::min(size, h->content.size() - from));
        }
        fuse_reply_buf(req, data.data(), data.size());
    }

    static void Write(fuse_req_t req, fuse_ino_t, const char* buf, size_t size, off_t off,
                      fuse_file_info* fi) {
        TierFs& fs = Fs(req);
        FileHandle* h = HandleOf<FileHandle>(fi);
        int err;
        {
            MutexLock lock(h->mu);
            err = ApplyWrite(fs, h, std::string_view(buf, size), off);
        }
        if (err != 0) return (void)fuse_reply_err(req, err);
        fuse_reply_write(req, size);
    }

    // config/<knob>: the file holds one value, and what has been written through this open,
    // whole, is it; each write sets the knob to it. 0 or the errno.
    static int ApplyWrite(TierFs& fs, FileHandle* h, std::string_view data, off_t off)
        MC_REQUIRES(h->mu) {
        if (h->knob.empty()) return EBADF;
        if (off < 0 || static_cast<uint64_t>(off) + data.size() > 4096) {
            return EFBIG;  // no knob value is that long
        }
        size_t end = static_cast<size_t>(off) + data.size();
        if (h->pending.size() < end) h->pending.resize(end, ' ');
        std::memcpy(h->pending.data() + off, data.data(), data.size());
        std::string value = Trim(h->pending);
        if (value.empty()) {
            spdlog::warn("config/{}: empty value refused", h->knob);
            return EINVAL;
        }
        // Copied out here: the analysis does not see h->mu held inside the lambda, which runs
        // in this call all the same.
        const std::string knob_name = h->knob;
        auto set = fs.master().Call([&](Client& c) { return c.TuneSet({{knob_name, value}}); });
        if (!set.ok()) {
            spdlog::warn("config/{} = '{}' refused: {}", h->knob, value, set.status().ToString());
            return ErrnoOf(set.status());
        }
        spdlog::info("config/{} set to '{}'", h->knob, value);
        if (const KnobInfo* knob = FindKnob(*set, h->knob)) h->content = knob->value + "\n";
        return 0;
    }

    static void Flush(fuse_req_t req, fuse_ino_t, fuse_file_info*) { fuse_reply_err(req, 0); }

    static void Release(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
        Fs(req).open_handles_.Release(fi->fh);
        fuse_reply_err(req, 0);
    }

    // ---- directories ----

    static void OpenDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
        TierFs& fs = Fs(req);
        auto node = fs.inodes_.Get(ino);
        if (!node) return (void)fuse_reply_err(req, ESTALE);
        if (!IsDir(node->kind)) return (void)fuse_reply_err(req, ENOTDIR);
        auto handle = std::make_unique<DirHandle>();
        handle->kind = node->kind;
        fi->cache_readdir = 0;
        fi->keep_cache = 0;
        fi->fh = fs.open_handles_.Adopt(std::move(handle));
        if (fuse_reply_open(req, fi) != 0) fs.open_handles_.Release(fi->fh);
    }

    static void ReleaseDir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
        Fs(req).open_handles_.Release(fi->fh);
        fuse_reply_err(req, 0);
    }

    // Makes h->page hold entry `index` (0-based among the directory's keys) if it exists.
    static Status LoadPageWith(TierFs& fs, DirHandle* h, uint64_t index) MC_REQUIRES(h->mu) {
        if (!h->started || index < h->page_start) {
            h->started = true;
            h->page_start = 0;
            h->page.clear();
            h->more = true;
            MC_RETURN_IF_ERROR(FetchPage(fs, h, ""));
        }
        while (index >= h->page_start + h->page.size() && h->more) {
            if (h->page.empty()) {
                h->more = false;
                break;
            }
            std::string after = h->page.back().key;
            h->page_start += h->page.size();
            h->page.clear();
            MC_RETURN_IF_ERROR(FetchPage(fs, h, after));
        }
        return Status::Ok();
    }

    static Status FetchPage(TierFs& fs, DirHandle* h, const std::string& start_after)
        MC_REQUIRES(h->mu) {
        ListOptions options;
        options.tier = TierOf(h->kind);
        options.start_after = start_after;
        options.limit = fs.options_.list_page;
        auto page = fs.master().Call([&](Client& c) { return c.List(options); });
        if (!page.ok()) {
            // Leave the handle so the next readdir asks again from the start.
            h->started = false;
            return page.status();
        }
        h->more = page->more && !page->objects.empty();
        h->page.reserve(page->objects.size());
        for (ObjectInfo& info : page->objects) {
            std::string name = name_codec::Encode(info.object.key);
            if (name_codec::IsHashedName(name)) fs.RememberHashed(name, info.object.key);
            h->page.push_back({std::move(name), std::move(info.object.key)});
        }
        return Status::Ok();
    }

    // Never reply while holding a handle's lock: once the reply is out the kernel may release
    // the handle (on another thread) before the lock would be let go.
    static void ReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                        fuse_file_info* fi) {
        TierFs& fs = Fs(req);
        DirHandle* h = HandleOf<DirHandle>(fi);
        std::vector<char> buf(size);
        size_t used = 0;
        Status st;
        {
            MutexLock lock(h->mu);
            st = FillDir(req, fs, ino, h, off, buf, &used);
        }
        if (!st.ok()) return ReplyStatus(req, st, "readdir");
        fuse_reply_buf(req, buf.data(), used);
    }

    // Adds the entries from offset `off` on to `buf`; an error only if none could be added.
    static Status FillDir(fuse_req_t req, TierFs& fs, fuse_ino_t ino, DirHandle* h, off_t off,
                          std::vector<char>& buf, size_t* used_out) MC_REQUIRES(h->mu) {
        if (off < 0) return Status::InvalidArgument("negative directory offset");
        const size_t size = buf.size();
        size_t& used = *used_out;
        // Adds one entry; false when the buffer is full (the entry is not added).
        auto add = [&](const std::string& name, ino_t entry_ino, bool dir, off_t next) {
            struct stat st;
            std::memset(&st, 0, sizeof(st));
            st.st_ino = entry_ino;
            st.st_mode = dir ? S_IFDIR : S_IFREG;
            size_t need =
                fuse_add_direntry(req, buf.data() + used, size - used, name.c_str(), &st, next);
            if (need > size - used) return false;
            used += need;
            return true;
        };

        uint64_t index = static_cast<uint64_t>(off);
        if (index == 0) {
            if (!add(".", ino, true, 1)) return Status::Ok();
            index = 1;
        }
        if (index == 1) {
            if (!add("..", kRootIno, true, 2)) return Status::Ok();
            index = 2;
        }
        // Entry `index` is the (index - 2)-th of the directory's own entries.
        switch (h->kind) {
            case NodeKind::kRoot:
                for (uint64_t i = index - 2; i < std::size(kRootEntries); ++i) {
                    const RootEntry& r = kRootEntries[i];
                    if (!add(r.name, r.ino, r.dir, static_cast<off_t>(i + 3))) break;
                }
                break;
            case NodeKind::kConfigDir: {
                if (off == 0 || h->knobs.empty()) {
                    auto knobs = Knobs(fs);
                    if (!knobs.ok()) return knobs.status();
                    h->knobs.clear();
                    for (const KnobInfo& k : *knobs) h->knobs.push_back(k.name);
                }
                for (uint64_t i = index - 2; i < h->knobs.size(); ++i) {
                    uint64_t known =
                        fs.inodes_.Peek(NodeKind::kKnobFile, NodeKind::kConfigDir, h->knobs[i]);
                    if (!add(h->knobs[i], known ? known : kUnknownIno, false,
                             static_cast<off_t>(i + 3))) {
                        break;
                    }
                }
                break;
            }
            default: {
                if (off == 0) h->started = false;  // rewinddir: list afresh
                bool added = false;
                for (uint64_t i = index - 2;; ++i) {
                    Status st = LoadPageWith(fs, h, i);
                    if (!st.ok()) {
                        // An empty reply would read as the end of the listing: fail instead.
                        // After some entries, return them; the next call meets the error.
                        if (!added) return st;
                        break;
                    }
                    if (i >= h->page_start + h->page.size()) break;  // the end
                    const DirEntry& e = h->page[i - h->page_start];
                    uint64_t known = fs.inodes_.Peek(NodeKind::kKeyFile, h->kind, e.key);
                    if (!add(e.name, known ? known : kUnknownIno, false,
                             static_cast<off_t>(i + 3))) {
                        break;
                    }
                    added = true;
                }
                break;
            }
        }
        return Status::Ok();
    }

    // ---- extended attributes ----

    static void GetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
        TierFs& fs = Fs(req);
        auto node = fs.inodes_.Get(ino);
        if (!node) return (void)fuse_reply_err(req, ESTALE);
        const auto& names = KeyXattrNames();
        if (node->kind != NodeKind::kKeyFile ||
            std::find(names.begin(), names.end(), name) == names.end()) {
            return (void)fuse_reply_err(req, ENODATA);
        }
        auto info = StatIn(fs, node->dir, node->name);
        if (!info.ok()) return ReplyStatus(req, info.status(), "getxattr");
        for (const auto& [attr, value] : KeyXattrs(*info)) {
            if (attr != name) continue;
            if (size == 0) return (void)fuse_reply_xattr(req, value.size());
            if (size < value.size()) return (void)fuse_reply_err(req, ERANGE);
            return (void)fuse_reply_buf(req, value.data(), value.size());
        }
        fuse_reply_err(req, ENODATA);
    }

    static void ListXattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
        TierFs& fs = Fs(req);
        auto node = fs.inodes_.Get(ino);
        if (!node) return (void)fuse_reply_err(req, ESTALE);
        std::string list;
        if (node->kind == NodeKind::kKeyFile) {
            for (const std::string& n : KeyXattrNames()) {
                list.append(n);
                list.push_back('\0');
            }
        }
        if (size == 0) return (void)fuse_reply_xattr(req, list.size());
        if (size < list.size()) return (void)fuse_reply_err(req, ERANGE);
        fuse_reply_buf(req, list.data(), list.size());
    }

    static void SetXattr(fuse_req_t req, fuse_ino_t, const char*, const char*, size_t, int) {
        TierFs& fs = Fs(req);
        fuse_reply_err(req, fs.options_.read_write ? ENOTSUP : EROFS);
    }

    static void RemoveXattr(fuse_req_t req, fuse_ino_t, const char*) {
        TierFs& fs = Fs(req);
        fuse_reply_err(req, fs.options_.read_write ? ENOTSUP : EROFS);
    }

    // ---- what the view never allows ----

    static void MkNod(fuse_req_t req, fuse_ino_t, const char*, mode_t, dev_t) {
        fuse_reply_err(req, RefusedWriteErrno(Fs(req)));
    }
    static void MkDir(fuse_req_t req, fuse_ino_t, const char*, mode_t) {
        fuse_reply_err(req, RefusedWriteErrno(Fs(req)));
    }
    static void Unlink(fuse_req_t req, fuse_ino_t, const char*) {
        fuse_reply_err(req, RefusedWriteErrno(Fs(req)));
    }
    static void RmDir(fuse_req_t req, fuse_ino_t, const char*) {
        fuse_reply_err(req, RefusedWriteErrno(Fs(req)));
    }
    static void SymLink(fuse_req_t req, const char*, fuse_ino_t, const char*) {
        fuse_reply_err(req, RefusedWriteErrno(Fs(req)));
    }
    static void Rename(fuse_req_t req, fuse_ino_t, const char*, fuse_ino_t, const char*,
                       unsigned int) {
        fuse_reply_err(req, RefusedWriteErrno(Fs(req)));
    }
    static void Link(fuse_req_t req, fuse_ino_t, fuse_ino_t, const char*) {
        fuse_reply_err(req, RefusedWriteErrno(Fs(req)));
    }
    static void Create(fuse_req_t req, fuse_ino_t, const char*, mode_t, fuse_file_info*) {
        fuse_reply_err(req, RefusedWriteErrno(Fs(req)));
    }

    // No blocks to count; f_files is the inodes the kernel holds now (fixed ones included),
    // which shows lookups being forgotten (`df -i`, tests).
    static void StatFs(fuse_req_t req, fuse_ino_t) {
        struct statvfs sv;
        std::memset(&sv, 0, sizeof(sv));
        sv.f_bsize = 4096;
        sv.f_frsize = 4096;
        sv.f_files = (kConfigDirIno - kRootIno + 1) + Fs(req).inodes_.size();
        sv.f_namemax = name_codec::kMaxNameBytes;
        fuse_reply_statfs(req, &sv);
    }
};

// ---------------------------------------------------------------------------------------------

TierFs::TierFs(MasterConnection* master, TierFsOptions options)
    : master_(master), options_(std::move(options)) {
    (void)Impl::MountTime();
}

void TierFs::RememberHashed(const std::string& name, const std::string& key) {
    MutexLock lock(hashed_mu_);
    // Bounded: forgetting only costs a listing of the name's prefix at the next lookup.
    if (hashed_names_.size() >= kMaxHashedNames) hashed_names_.clear();
    hashed_names_[name] = key;
}

bool TierFs::LookupHashed(const std::string& name, std::string* key) {
    MutexLock lock(hashed_mu_);
    auto it = hashed_names_.find(name);
    if (it == hashed_names_.end()) return false;
    *key = it->second;
    return true;
}

const fuse_lowlevel_ops& TierFs::Ops() {
    static const fuse_lowlevel_ops kOps = [] {
        fuse_lowlevel_ops ops;
        std::memset(&ops, 0, sizeof(ops));
        ops.lookup = Impl::Lookup;
        ops.forget = Impl::Forget;
        ops.forget_multi = Impl::ForgetMulti;
        ops.getattr = Impl::GetAttr;
        ops.setattr = Impl::SetAttr;
        ops.open = Impl::Open;
        ops.read = Impl::Read;
        ops.write = Impl::Write;
        ops.flush = Impl::Flush;
        ops.release = Impl::Release;
        ops.opendir = Impl::OpenDir;
        ops.readdir = Impl::ReadDir;
        ops.releasedir = Impl::ReleaseDir;
        ops.getxattr = Impl::GetXattr;
        ops.listxattr = Impl::ListXattr;
        ops.setxattr = Impl::SetXattr;
        ops.removexattr = Impl::RemoveXattr;
        ops.mknod = Impl::MkNod;
        ops.mkdir = Impl::MkDir;
        ops.unlink = Impl::Unlink;
        ops.rmdir = Impl::RmDir;
        ops.symlink = Impl::SymLink;
        ops.rename = Impl::Rename;
        ops.link = Impl::Link;
        ops.create = Impl::Create;
        ops.statfs = Impl::StatFs;
        return ops;
    }();
    return kOps;
}

}  // namespace mooncake::tierfs
