// mooncaked: the mooncake-tier store daemon. See daemon/roles.h for what each role runs.
//
// Signals: SIGINT and SIGTERM are blocked before any thread starts (threads inherit the mask),
// and one thread waits for them with sigwait and asks the role to shut down; so no server
// thread is ever interrupted mid-request by a handler. SIGPIPE is ignored (a peer that goes
// away is an error value on the socket, not a dead daemon).
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <thrift/TOutput.h>

#include "core/base/knobs.h"
#include "daemon/flags.h"
#include "daemon/roles.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"
#include "thrift/auth_token.h"
#include "net/net.h"

namespace mooncake {
namespace {

int Main(int argc, char** argv) {
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    signal(SIGPIPE, SIG_IGN);

    Config config;
    std::string config_file;
    if (auto exit_code = ParseCommandLine(argc, argv, config, &config_file)) return *exit_code;
    // stderr: unbuffered, so a killed daemon's last lines are not lost in a stdio buffer.
    spdlog::set_default_logger(spdlog::stderr_color_mt("mooncaked"));
    spdlog::set_level(spdlog::level::from_str(config.log_level()));
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%t] %v");
    // Thrift's own diagnostics (a client that sent garbage and was dropped) are debug noise.
    apache::thrift::GlobalOutput.setOutputFunction(
        [](const char* message) { spdlog::debug("thrift: {}", message); });

    std::string token;
    if (!config.auth_token_file().empty()) {
        auto read = ReadTokenFile(config.auth_token_file());
        if (!read.ok()) {
            std::cerr << "mooncaked: " << read.status().message() << "\n";
            return 2;
        }
        token = *read;
    }
    std::vector<TenantToken> tenant_tokens;
    if (!config.tenant_tokens_file().empty()) {
        if (token.empty()) {
            // Without the administrator's token every session could name any tenant.
            std::cerr << "mooncaked: --tenant_tokens_file needs --auth_token_file\n";
            return 2;
        }
        auto read = ReadTenantTokensFile(config.tenant_tokens_file());
        if (!read.ok()) {
            std::cerr << "mooncaked: " << read.status().message() << "\n";
            return 2;
        }
        tenant_tokens = std::move(*read);
    }
    auto listen = net::ParseHostPort(config.listen());
    if (!listen.ok()) {
        std::cerr << "mooncaked: --listen: " << listen.status().message() << "\n";
        return 2;
    }
    if (token.empty() && !net::IsLoopbackHost(listen->host)) {
        std::cerr << "mooncaked: listening on " << listen->ToString()
                  << " (beyond loopback) needs --auth_token_file\n";
        return 2;
    }

    ShutdownFlag shutdown;
    // Set before the daemon wakes the signal thread itself (a failed start): that SIGTERM
    // was not sent by anyone and must not be logged as if it had been.
    std::atomic<bool> self_wakeup{false};
    std::thread signal_thread([&] {
        int sig = 0;
        sigwait(&stop_signals, &sig);
        if (sig != 0 && !self_wakeup.load()) {
            spdlog::info("signal {} received: shutting down", strsignal(sig));
        }
        shutdown.Request();
    });

    DaemonContext ctx{config, token, std::move(tenant_tokens), config_file, shutdown};
    const std::string role = config.role();
    spdlog::info("mooncaked starting: role {}, listen {}", role, config.listen());
    int rc = role == "master" ? RunMaster(ctx)
             : role == "node" ? RunNode(ctx)
                              : RunStandalone(ctx);
    if (!shutdown.flag().load()) {
        // Started badly: wake the signal thread so it can be joined.
        self_wakeup.store(true);
        pthread_kill(signal_thread.native_handle(), SIGTERM);
    }
    signal_thread.join();
    spdlog::info("mooncaked stopped");
    return rc;
}

}  // namespace
}  // namespace mooncake

int main(int argc, char** argv) { return mooncake::Main(argc, argv); }
