// The command line of mooncakectl: global options, the commands, and the mapping of every
// way it can end to one exit code (cli/exit_codes.h) and at most one stderr line.
#include <cstdlib>
#include <iostream>

#include "cli/commands.h"

#ifndef MOONCAKE_VERSION
#define MOONCAKE_VERSION "0.0.0"
#endif

namespace mooncake::cli {
namespace {

// "" when `text` is HOST:PORT (HOST a name, an IPv4 address or a bracketed IPv6 address).
std::string CheckHostPort(const std::string& text);

// --master etcd://HOST:PORT[;HOST:PORT...]: the leader of an HA cluster (docs/HA.md).
std::string CheckEtcdMaster(const std::string& text) {
    std::string rest = text.substr(7);
    if (rest.empty()) return "'" + text + "' names no etcd endpoint (etcd://HOST:PORT[;...])";
    size_t start = 0;
    while (start <= rest.size()) {
        size_t end = rest.find_first_of(";,", start);
        if (end == std::string::npos) end = rest.size();
        std::string one = rest.substr(start, end - start);
        if (!one.empty()) {
            std::string bad = CheckHostPort(one);
            if (!bad.empty()) return "etcd endpoint " + bad;
        }
        start = end + 1;
    }
    return "";
}

std::string CheckHostPort(const std::string& text) {
    if (text.rfind("etcd://", 0) == 0) return CheckEtcdMaster(text);
    size_t colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
        return "'" + text + "' is not HOST:PORT";
    }
    std::string host = text.substr(0, colon);
    if (host.front() == '[' ? host.back() != ']' : host.find(':') != std::string::npos) {
        return "'" + text + "' is not HOST:PORT (write IPv6 addresses as [ADDR]:PORT)";
    }
    std::string port = text.substr(colon + 1);
    if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
        std::atoi(port.c_str()) < 1 || std::atoi(port.c_str()) > 65535) {
        return "'" + text + "': the port must be 1..65535";
    }
    return "";
}

constexpr const char* kFooter =
    "Environment: MOONCAKE_MASTER (default --master), MOONCAKE_AUTH_TOKEN_FILE (a file holding\n"
    "the access token), MOONCAKE_AUTH_TOKEN (the token itself).\n"
    "Exit codes: 0 ok, 1 the store refused or failed, 2 usage error, 3 key not found,\n"
    "4 the daemon cannot be reached. See mooncakectl(1).\n";

}  // namespace

void BuildApp(CLI::App& app, GlobalOptions& options, CommandSet& set) {
    app.name("mooncakectl");
    app.description("mooncakectl: inspect, move and tune a mooncake-tier store");
    app.set_version_flag("--version", "mooncakectl (mooncake-tier) " MOONCAKE_VERSION);
    app.footer(kFooter);
    app.require_subcommand(1);
    app.fallthrough();  // global options may also follow the command
    app.add_option("--master", options.master,
                   "HOST:PORT of the master or standalone daemon, or etcd://HOST:PORT[;...]: "
                   "the leader of HA cluster --cluster_id")
        ->envname("MOONCAKE_MASTER")
        ->check(CLI::Validator(CheckHostPort, ""))
        ->type_name("HOST:PORT")
        ->capture_default_str();
    app.add_option("--cluster_id", options.cluster_id,
                   "HA cluster whose leader --master etcd://... means (else "
                   "$MOONCAKE_CLUSTER_ID, else mooncake_cluster)")
        ->type_name("NAME");
    app.add_option("--tenant", options.tenant,
                   "the tenant whose keys every command names and sees (else "
                   "$MOONCAKE_TENANT, else the default tenant)")
        ->envname("MOONCAKE_TENANT")
        ->type_name("NAME");
    app.add_flag("--json", options.json, "print JSON for scripts instead of tables");
    // The token itself is never an argument (argv is public): a file, or the environment.
    app.add_option("--auth_token_file", options.auth_token_file,
                   "file holding the daemon's access token (else $MOONCAKE_AUTH_TOKEN_FILE, "
                   "else $MOONCAKE_AUTH_TOKEN); without one, only inspection and reads")
        ->type_name("FILE");
    app.add_option("--connect_timeout", options.connect_timeout_sec,
                   "seconds to wait for the daemon to accept a connection and answer Hello")
        ->check(CLI::Range(0.1, 600.0))
        ->type_name("S")
        ->capture_default_str();
    app.add_option("--timeout", options.timeout_sec,
                   "seconds each call to the daemon (and each read or write on a node's data "
                   "channel) may take; a daemon that does not answer in time is unreachable (4)")
        ->check(CLI::Range(0.1, 3600.0))
        ->type_name("S")
        ->capture_default_str();

    AddPutCommand(app, set);
    AddGetCommand(app, set);
    AddRmCommand(app, set);
    AddStatCommand(app, set);
    AddLsCommand(app, set);
    AddPromoteCommand(app, set);
    AddOffloadCommand(app, set);
    AddEvictCommand(app, set);
    AddTuneCommand(app, set);
    AddMetricsCommand(app, set);
    AddNodesCommand(app, set);
    AddTasksCommand(app, set);
    AddHotCommand(app, set);
    AddCheckCommand(app, set);
    AddScrubCommand(app, set);
    AddMastersCommand(app, set);
    AddTenantCommand(app, set);
}

int RunMooncakectl(int argc, const char* const* argv) {
    CLI::App app;
    GlobalOptions options;
    CommandSet set;
    BuildApp(app, options, set);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        int code = ExitCodeFromCli11(e.get_exit_code());
        if (code == kExitOk) return app.exit(e);  // --help, --version: to stdout
        std::string message = e.what();
        // "A subcommand is required" says little: name what is missing or unknown.
        CLI::App* leaf = &app;
        std::string path;
        while (!leaf->get_subcommands().empty()) {
            leaf = leaf->get_subcommands().front();
            path += (path.empty() ? "" : " ") + leaf->get_name();
        }
        std::vector<std::string> extra = leaf->remaining();
        if (leaf != &app) {
            std::vector<std::string> more = app.remaining();
            extra.insert(extra.end(), more.begin(), more.end());
        }
        const bool extras = dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr;
        const bool required = dynamic_cast<const CLI::RequiredError*>(&e) != nullptr;
        if ((extras || required) && leaf != &app) {
            // A KEY or FILE that starts with '-' reads as an unknown option: say so, and how
            // to pass it (after "--"), instead of "KEY is required".
            for (const std::string& arg : extra) {
                if (arg.rfind("--", 0) == 0) {
                    message = "unknown option '" + arg + "' (a KEY or FILE starting with '-' "
                              "goes after '--')";
                    break;
                }
                if (arg.size() > 1 && arg[0] == '-') {
                    message = "'" + arg + "' is not an option of '" + path +
                              "'; a KEY or FILE starting with '-' goes after '--': mooncakectl " +
                              path + " -- " + arg;
                    break;
                }
            }
        }
        if (extras && message == e.what()) {
            // CLI11 2.1 lists them last-first.
            message = extra.size() > 1 ? "unexpected arguments:" : "unexpected argument:";
            for (const std::string& arg : extra) message += " " + arg;
        }
        if (leaf->get_require_subcommand_min() > 0) {
            message = path.empty() ? "no command given" : "'" + path + "' needs a command";
            for (const std::string& arg : extra) {
                if (!arg.empty() && arg[0] != '-') {
                    message = "unknown command '" + (path.empty() ? "" : path + " ") + arg + "'";
                    break;
                }
            }
        }
        std::string line = ErrorLine(message + " (see mooncakectl --help)");
        std::fwrite(line.data(), 1, line.size(), stderr);
        return code;
    }
    const Runner* run = set.Parsed();
    Context ctx(options);
    if (run == nullptr) return ctx.Usage("no command given");
    int code = (*run)(ctx);
    std::fflush(stdout);
    return code;
}

}  // namespace mooncake::cli
