// mooncakectl get KEY [--out FILE]: read a value (a real read: it counts toward promotion).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "cli/batch.h"
#include "cli/commands.h"
#include "net/byte_stream.h"

namespace mooncake::cli {
namespace {

struct GetOptions {
    std::string key;
    std::string out;
};

// Where `get` writes: FILE or stdout, streamed (net/byte_stream.h), so memory use does not grow
// with the value. A new or regular FILE is written to a temporary file beside it and renamed
// into place, so a failed get never leaves it half-written. Anything else is written in place:
// a device (--out /dev/null, /dev/stdout), a FIFO, or a symlink, whose target is what the user
// means (renaming would replace the link, or the device node itself). The destination is opened
// when the first byte arrives, so a get the store refuses touches nothing (and never blocks
// opening a FIFO nobody reads).
class OutputSink final : public ByteSink {
public:
    // `path` empty: stdout.
    explicit OutputSink(std::string path) : path_(std::move(path)) {}
    ~OutputSink() override { Abort(); }

    Status Write(std::span<const std::byte> data) override {
        MC_RETURN_IF_ERROR(Open());
        return sink_->Write(data);
    }
    int fd() override { return Open().ok() ? sink_->fd() : -1; }
    bool Rewind() override { return sink_ == nullptr || sink_->Rewind(); }

    // After a get that succeeded: close and put the file in place.
    Status Commit() {
        MC_RETURN_IF_ERROR(Open());  // a get writes its (possibly empty) output
        sink_.reset();
        if (fd_ >= 0 && fd_ != STDOUT_FILENO && ::close(fd_) != 0) {
            fd_ = -1;
            return Failure();
        }
        fd_ = -1;
        if (!tmp_.empty()) {
            if (::rename(tmp_.c_str(), path_.c_str()) != 0) return Failure();
            tmp_.clear();
        }
        return Status::Ok();
    }
    // After a failure: drop the temporary file (FILE keeps what it had).
    void Abort() {
        sink_.reset();
        if (fd_ >= 0 && fd_ != STDOUT_FILENO) ::close(fd_);
        fd_ = -1;
        if (!tmp_.empty()) ::unlink(tmp_.c_str());
        tmp_.clear();
    }

private:
    Status Failure() {
        return Status::IoError("writing '" + path_ + "': " + std::strerror(errno));
    }

    Status Open() {
        if (sink_ != nullptr) return Status::Ok();
        if (!open_error_.ok()) return open_error_;
        if (path_.empty()) {
            std::fflush(stdout);
            fd_ = STDOUT_FILENO;
        } else {
            struct stat st {};
            bool regular_or_new = ::lstat(path_.c_str(), &st) != 0 || S_ISREG(st.st_mode);
            if (regular_or_new) {
                std::string tmp = path_ + ".mooncakectl-XXXXXX";
                fd_ = ::mkstemp(tmp.data());
                if (fd_ >= 0) {
                    tmp_ = std::move(tmp);
                    // mkstemp makes 0600; give FILE the mode a plain create would (an
                    // existing file keeps its).
                    mode_t mask = ::umask(0);
                    ::umask(mask);
                    ::fchmod(fd_, st.st_mode != 0 ? (st.st_mode & 07777) : (0666 & ~mask));
                }
            }
            if (fd_ < 0) {  // not a regular file, or a directory we may not create files in
                fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
            }
            if (fd_ < 0) {
                open_error_ = Status::IoError("cannot write '" + path_ + "': " +
                                              std::strerror(errno));
                return open_error_;
            }
        }
        sink_ = std::make_unique<FdSink>(fd_);
        return Status::Ok();
    }

    const std::string path_;
    int fd_ = -1;
    std::string tmp_;
    std::unique_ptr<FdSink> sink_;
    Status open_error_;
};

int RunGet(Context& ctx, const GetOptions& opts) {
    if (std::string bad = CheckKeyArguments({opts.key}); !bad.empty()) {
        return ctx.Usage("get: " + bad);
    }
    int exit_code = kExitOk;
    Client* client = ctx.client(&exit_code);
    if (client == nullptr) return exit_code;
    const bool to_file = !opts.out.empty() && opts.out != "-";
    if (!to_file && ctx.format() == Format::kJson) {
        // The value goes inline in the JSON: it is read whole.
        Result<std::string> value = client->Get(opts.key);
        if (!value.ok()) return ctx.Fail(value.status(), "get " + QuoteKey(opts.key));
        ctx.Print(RenderGetJson(opts.key, *value, nullptr));
        return kExitOk;
    }
    OutputSink sink(to_file ? opts.out : std::string());
    Result<uint64_t> size = client->GetTo(opts.key, sink);
    if (!size.ok()) {
        sink.Abort();
        // The store answered and the local write failed (1), or the store refused.
        if (!sink.write_error().ok()) {
            std::string where = to_file ? "" : "writing stdout: ";
            return ctx.Error(kExitFailed, "get: " + where + sink.write_error().message());
        }
        return ctx.Fail(size.status(), "get " + QuoteKey(opts.key));
    }
    if (Status st = sink.Commit(); !st.ok()) {
        return ctx.Error(kExitFailed,
                         "get: " + (to_file ? st.message() : "writing stdout: " + st.message()));
    }
    if (to_file && ctx.format() == Format::kJson) {
        ctx.Print(RenderGetOutJson(opts.key, *size, opts.out));
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
