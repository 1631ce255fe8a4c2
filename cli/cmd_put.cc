// mooncakectl put KEY [FILE|-]: store a value read from FILE, or from stdin ('-' or no FILE).
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "cli/batch.h"
#include "cli/commands.h"

namespace mooncake::cli {
namespace {

struct PutOptions {
    std::string key;
    std::string file;  // "" or "-": stdin
};

// Reads all of `stream`; false on a read error (errno set).
bool ReadAll(std::FILE* stream, std::string& out) {
    char buf[1 << 16];
    for (;;) {
        size_t n = std::fread(buf, 1, sizeof buf, stream);
        out.append(buf, n);
        if (n < sizeof buf) return std::ferror(stream) == 0;
    }
}

int RunPut(Context& ctx, const PutOptions& opts) {
    if (std::string bad = CheckKeyArguments({opts.key}); !bad.empty()) {
        return ctx.Usage("put: " + bad);
    }
    const bool from_stdin = opts.file.empty() || opts.file == "-";
    std::string value;
    if (from_stdin) {
        if (::isatty(STDIN_FILENO) == 1) {
            std::fputs("mooncakectl: reading the value from the terminal (end it with Ctrl-D)\n",
                       stderr);
        }
        if (!ReadAll(stdin, value)) {
            return ctx.Error(kExitFailed,
                             std::string("put: reading stdin: ") + std::strerror(errno));
        }
    } else {
        std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(opts.file.c_str(), "rb"),
                                                          &std::fclose);
        struct stat st {};
        if (f == nullptr || (::fstat(::fileno(f.get()), &st) == 0 && S_ISDIR(st.st_mode))) {
            return ctx.Usage("put: cannot read '" + opts.file +
                             "': " + std::strerror(f == nullptr ? errno : EISDIR));
        }
        if (!ReadAll(f.get(), value)) {
            return ctx.Error(kExitFailed,
                             "put: reading '" + opts.file + "': " + std::strerror(errno));
        }
    }
    if (value.empty()) {
        return ctx.Usage(std::string("put: the value is empty (") +
                         (from_stdin ? "stdin" : "'" + opts.file + "'") +
                         "); a value is 1 byte or more");
    }
    int exit_code = kExitOk;
    Client* client = ctx.client(&exit_code);
    if (client == nullptr) return exit_code;
    Status st = client->Put(opts.key, value);
    if (!st.ok()) return ctx.Fail(st, "put " + QuoteKey(opts.key));
    ctx.Print(RenderPut(opts.key, value.size(), ctx.format()));
    return kExitOk;
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
