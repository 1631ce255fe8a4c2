// mooncakectl get KEY [--out FILE]: read a value (a real read: it counts toward promotion).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "cli/batch.h"
#include "cli/commands.h"

namespace mooncake::cli {
namespace {

struct GetOptions {
    std::string key;
    std::string out;
};

bool WriteAll(int fd, std::string_view data) {
    while (!data.empty()) {
        ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
}

Status WriteInPlace(const std::string& path, std::string_view data) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) return Status::IoError("cannot write '" + path + "': " + std::strerror(errno));
    bool ok = WriteAll(fd, data);
    int err = errno;
    if (::close(fd) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (!ok) return Status::IoError("writing '" + path + "': " + std::strerror(err));
    return Status::Ok();
}

// Writes `data` to `path`. A new or regular file is written to a temporary file beside it and
// renamed into place, so a failed get never leaves it half-written. Anything else is written
// in place: a device (--out /dev/null, /dev/stdout), a FIFO, or a symlink, whose target is
// what the user means (renaming would replace the link, or the device node itself).
Status WriteFileAtomically(const std::string& path, std::string_view data) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return WriteInPlace(path, data);
    std::string tmp = path + ".mooncakectl-XXXXXX";
    int fd = ::mkstemp(tmp.data());
    if (fd < 0) return WriteInPlace(path, data);  // a directory we may not create files in
    // mkstemp makes 0600; give FILE the mode a plain create would (an existing file keeps its).
    mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(fd, st.st_mode != 0 ? (st.st_mode & 07777) : (0666 & ~mask));
    bool ok = WriteAll(fd, data);
    int err = errno;
    if (::close(fd) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) {
        ok = false;
        err = errno;
    }
    if (!ok) {
        ::unlink(tmp.c_str());
        return Status::IoError("writing '" + path + "': " + std::strerror(err));
    }
    return Status::Ok();
}

int RunGet(Context& ctx, const GetOptions& opts) {
    if (std::string bad = CheckKeyArguments({opts.key}); !bad.empty()) {
        return ctx.Usage("get: " + bad);
    }
    int exit_code = kExitOk;
    Client* client = ctx.client(&exit_code);
    if (client == nullptr) return exit_code;
    Result<std::string> value = client->Get(opts.key);
    if (!value.ok()) return ctx.Fail(value.status(), "get " + QuoteKey(opts.key));
    if (!opts.out.empty() && opts.out != "-") {
        Status st = WriteFileAtomically(opts.out, *value);
        if (!st.ok()) return ctx.Error(kExitFailed, "get: " + st.message());
        if (ctx.format() == Format::kJson) ctx.Print(RenderGetJson(opts.key, *value, &opts.out));
        return kExitOk;
    }
    if (ctx.format() == Format::kJson) {
        ctx.Print(RenderGetJson(opts.key, *value, nullptr));
        return kExitOk;
    }
    std::fflush(stdout);
    if (!WriteAll(STDOUT_FILENO, *value)) {
        return ctx.Error(kExitFailed, std::string("get: writing stdout: ") + std::strerror(errno));
    }
    return kExitOk;
}

}  // namespace

void AddGetCommand(CLI::App& root, CommandSet& set) {
    auto opts = std::make_shared<GetOptions>();
    CLI::App* sub =
        root.add_subcommand("get", "read KEY's value to stdout (a read: counts toward promotion)");
    sub->add_option("KEY", opts->key, "the key")->required();
    sub->add_option("--out,-o", opts->out,
                    "write the value to FILE instead of stdout ('-': stdout)")
        ->type_name("FILE");
    set.Add(sub, [opts](Context& ctx) { return RunGet(ctx, *opts); });
}

}  // namespace mooncake::cli
