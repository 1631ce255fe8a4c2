#include "cli/context.h"

#include "thrift/auth_token.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

namespace mooncake::cli {

std::string ErrorLine(std::string_view message) {
    std::string line = "mooncakectl: ";
    for (char c : message) line += (c == '\n' || c == '\r') ? ' ' : c;
    while (!line.empty() && line.back() == ' ') line.pop_back();
    line += '\n';
    return line;
}

int Context::Error(int exit_code, std::string_view message) {
    std::fflush(stdout);
    std::string line = ErrorLine(message);
    std::fwrite(line.data(), 1, line.size(), stderr);
    return exit_code;
}

int Context::Usage(std::string_view message) {
    return Error(kExitUsage, std::string(message) + " (see mooncakectl --help)");
}

int Context::Fail(const Status& status, std::string_view what) {
    std::string message =
        status.message().empty() ? std::string(StatusCodeName(status.code())) : status.message();
    if (!what.empty()) message = std::string(what) + ": " + message;
    return Error(ExitCodeFor(status), message);
}

void Context::Print(std::string_view text) { std::fwrite(text.data(), 1, text.size(), stdout); }

bool Context::Interactive() const { return !options_.json && ::isatty(STDOUT_FILENO) == 1; }

Client* Context::client(int* exit_code) {
    if (client_ != nullptr) return client_.get();
    ClientOptions opts;
    opts.cluster_id = options_.cluster_id;
    opts.client_name = "mooncakectl";
    opts.tenant = options_.tenant;
    opts.connect_timeout =
        std::chrono::milliseconds(static_cast<int64_t>(options_.connect_timeout_sec * 1000.0));
    // A stalled daemon (stopped, swapping, deadlocked) is unreachable within the deadline.
    opts.rpc_timeout =
        std::chrono::milliseconds(static_cast<int64_t>(options_.timeout_sec * 1000.0));
    opts.data_timeout = opts.rpc_timeout;
    // One quick retry at most: a CLI should say "cannot reach" promptly, not after backoffs.
    opts.retries = 1;
    // --auth_token_file, else $MOONCAKE_AUTH_TOKEN_FILE, else $MOONCAKE_AUTH_TOKEN; never argv.
    auto token = ResolveClientToken(options_.auth_token_file);
    if (!token.ok()) {
        *exit_code = Usage(token.status().message());
        return nullptr;
    }
    opts.auth_token = std::move(*token);
    auto connected = Client::Connect(options_.master, opts);
    if (!connected.ok()) {
        const Status& st = connected.status();
        if (st.Is(StatusCode::kUnavailable) || st.Is(StatusCode::kTimeout)) {
            *exit_code = Error(kExitUnreachable, "cannot reach the daemon: " + st.message());
        } else {
            *exit_code = Fail(st, "connecting to " + options_.master);
        }
        return nullptr;
    }
    client_ = std::move(*connected);
    return client_.get();
}

}  // namespace mooncake::cli
