// mooncakectl put KEY [FILE|-]: store a value read from FILE, or from stdin ('-' or no FILE),
// streamed: memory use does not grow with the value's size.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "cli/batch.h"
#include "cli/commands.h"
#include "net/byte_stream.h"
#include "net/net.h"

namespace mooncake::cli {
namespace {

struct PutOptions {
    std::string key;
    std::string file;  // "" or "-": stdin
};

// A value from a pipe (or a terminal) has no size until its end: up to this much is held in
// memory; a longer one is spooled to an unlinked temporary file, so memory stays bounded.
constexpr size_t kPipeMemoryBytes = 4 << 20;

// Reads into `buf` until it is full or the input ends; false on a read error (errno set).
bool ReadSome(int fd, std::vector<std::byte>& buf, size_t limit, bool* ended) {
    *ended = false;
    while (buf.size() < limit) {
        size_t at = buf.size();
        buf.resize(limit);
        ssize_t n = ::read(fd, buf.data() + at, limit - at);
        buf.resize(at + static_cast<size_t>(std::max<ssize_t>(n, 0)));
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        if (n == 0) {
            *ended = true;
            return true;
        }
    }
    return true;
}

bool WriteAll(int fd, std::span<const std::byte> data) {
    while (!data.empty()) {
        ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        data = data.subspan(static_cast<size_t>(n));
    }
    return true;
}

// A temporary file nobody else can open (unlinked at once); -1 on failure (errno set).
int TemporaryFile() {
    const char* dir = std::getenv("TMPDIR");
    std::string base = dir != nullptr && *dir != '\0' ? dir : "/tmp";
    int fd = ::open(base.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
    std::string path = base + "/mooncakectl-put-XXXXXX";
    fd = ::mkstemp(path.data());
    if (fd >= 0) ::unlink(path.c_str());
    return fd;
}

// max_value_size as the master has it now (0: unknown; the master still checks at PutStart).
uint64_t MaxValueSize(Client& client) {
    auto knobs = client.TuneGet();
    if (!knobs.ok()) return 0;
    for (const KnobInfo& k : *knobs) {
        if (k.name != "max_value_size") continue;
        auto size = ParseSize(k.value);
        return size.ok() ? *size : 0;
    }
    return 0;
}

int Stored(Context& ctx, const PutOptions& opts, const Status& st, uint64_t size) {
    if (!st.ok()) return ctx.Fail(st, "put " + QuoteKey(opts.key));
    ctx.Print(RenderPut(opts.key, size, ctx.format()));
    return kExitOk;
}

int EmptyValue(Context& ctx, const PutOptions& opts, bool from_stdin) {
    return ctx.Usage(std::string("put: the value is empty (") +
                     (from_stdin ? "stdin" : "'" + opts.file + "'") +
                     "); a value is 1 byte or more");
}

// A pipe or terminal: bounded in memory, else spooled (see kPipeMemoryBytes).
int PutUnsized(Context& ctx, const PutOptions& opts, int fd, bool from_stdin) {
    const std::string what = from_stdin ? "stdin" : "'" + opts.file + "'";
    // A larger pipe means fewer wake-ups of the writer and of us (best effort: the writer
    // may own it, or the system cap may be lower).
    (void)::fcntl(fd, F_SETPIPE_SZ, 1 << 20);
    std::vector<std::byte> buf;
    bool ended = false;
    if (!ReadSome(fd, buf, kPipeMemoryBytes, &ended)) {
        return ctx.Error(kExitFailed, "put: reading " + what + ": " + std::strerror(errno));
    }
    if (ended && buf.empty()) return EmptyValue(ctx, opts, from_stdin);
    int exit_code = kExitOk;
    Client* client = ctx.client(&exit_code);
    if (client == nullptr) return exit_code;
    if (ended) return Stored(ctx, opts, client->Put(opts.key, buf), buf.size());

    net::Fd spool(TemporaryFile());
    if (!spool.valid()) {
        return ctx.Error(kExitFailed, std::string("put: a temporary file for ") + what + ": " +
                                          std::strerror(errno));
    }
    // Stop reading once the value is known to be too big, rather than at its end.
    const uint64_t max = MaxValueSize(*client);
    uint64_t total = 0;
    auto too_big = [&] {
        return ctx.Fail(Status::InvalidArgument("size over " + std::to_string(max) +
                                                " exceeds max_value_size (" + FormatSize(max) +
                                                ")"),
                        "put " + QuoteKey(opts.key));
    };
    if (!WriteAll(spool.get(), buf)) {
        return ctx.Error(kExitFailed, "put: spooling " + what + " to a temporary file: " +
                                          std::strerror(errno));
    }
    total += buf.size();
    // The rest moves pipe -> spool in the kernel (splice), not through a buffer of ours;
    // anything splice cannot take (a terminal, say) is read and written in chunks.
    bool splicing = true;
    while (!ended) {
        if (max != 0 && total > max) return too_big();
        ssize_t n = -1;
        if (splicing) {
            n = ::splice(fd, nullptr, spool.get(), nullptr, kChunkBytes, SPLICE_F_MOVE);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && errno == EINVAL) splicing = false;
        }
        if (!splicing) {
            buf.clear();
            if (!ReadSome(fd, buf, kChunkBytes, &ended)) n = -1;
            else if (!WriteAll(spool.get(), buf)) {
                return ctx.Error(kExitFailed, "put: spooling " + what + " to a temporary file: " +
                                                  std::strerror(errno));
            } else {
                n = static_cast<ssize_t>(buf.size());
            }
        }
        if (n < 0) {
            return ctx.Error(kExitFailed, "put: reading " + what + ": " + std::strerror(errno));
        }
        if (n == 0) ended = true;
        total += static_cast<uint64_t>(n);
    }
    if (max != 0 && total > max) return too_big();
    if (::lseek(spool.get(), 0, SEEK_SET) != 0) {
        return ctx.Error(kExitFailed, std::string("put: rewinding the spool: ") +
                                          std::strerror(errno));
    }
    FdSource source(spool.get());
    return Stored(ctx, opts, client->PutFrom(opts.key, total, source), total);
}

int RunPut(Context& ctx, const PutOptions& opts) {
    if (std::string bad = CheckKeyArguments({opts.key}); !bad.empty()) {
        return ctx.Usage("put: " + bad);
    }
    const bool from_stdin = opts.file.empty() || opts.file == "-";
    net::Fd owned;
    int fd = STDIN_FILENO;
    if (from_stdin) {
        if (::isatty(STDIN_FILENO) == 1) {
            std::fputs("mooncakectl: reading the value from the terminal (end it with Ctrl-D)\n",
                       stderr);
        }
    } else {
        owned = net::Fd(::open(opts.file.c_str(), O_RDONLY | O_CLOEXEC));
        struct stat st {};
        if (!owned.valid() || (::fstat(owned.get(), &st) == 0 && S_ISDIR(st.st_mode))) {
            return ctx.Usage("put: cannot read '" + opts.file +
                             "': " + std::strerror(!owned.valid() ? errno : EISDIR));
        }
        fd = owned.get();
    }
    struct stat st {};
    off_t at = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? ::lseek(fd, 0, SEEK_CUR) : -1;
    if (at < 0) return PutUnsized(ctx, opts, fd, from_stdin);
    // A regular file: its size is known, so the master refuses an oversized value (or one
    // DRAM cannot take) before a byte is read, and the bytes are sent with sendfile.
    if (st.st_size <= at) return EmptyValue(ctx, opts, from_stdin);
    const uint64_t size = static_cast<uint64_t>(st.st_size - at);
    int exit_code = kExitOk;
    Client* client = ctx.client(&exit_code);
    if (client == nullptr) return exit_code;
    FdSource source(fd);
    return Stored(ctx, opts, client->PutFrom(opts.key, size, source), size);
}

}  // namespace

void AddPutCommand(CLI::App& root, CommandSet& set) {
    auto opts = std::make_shared<PutOptions>();
    CLI::App* sub = root.add_subcommand("put", "store a value under a new KEY");
    sub->add_option("KEY", opts->key, "the key (1..4096 bytes, no NUL)")->required();
    sub->add_option("FILE", opts->file, "read the value from FILE; '-' or none: stdin");
    set.Add(sub, [opts](Context& ctx) { return RunPut(ctx, *opts); });
}

}  // namespace mooncake::cli
