// mooncake-tierfs MOUNTPOINT [--master HOST:PORT] [-f] [-o rw] — the FUSE view of a
// mooncake-tier store (man/mooncake-tierfs.8).
#include <fuse_lowlevel.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/syslog_sink.h>
#include <spdlog/spdlog.h>
#include <syslog.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/tenant.h"
#include "fuse/master_connection.h"
#include "fuse/tierfs.h"
#include "thrift/auth_token.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

constexpr const char* kUsage =
    "usage: mooncake-tierfs MOUNTPOINT [--master HOST:PORT] [-f] [-s] [-d] [-o OPT[,OPT...]]\n"
    "                       [--timeout MS] [--auth_token_file FILE] [--cluster_id ID]\n";

constexpr const char* kHelp =
    "Mounts the FUSE view of a mooncake-tier store: keys/, MEMORY/, LOCAL_DISK/, stats and\n"
    "config/. Read-only unless -o rw. See mooncake-tierfs(8).\n"
    "\n"
    "  --master HOST:PORT  the master (default: $MOONCAKE_MASTER, else 127.0.0.1:50051);\n"
    "                      etcd://HOST:PORT[;HOST:PORT...] follows an HA cluster's leader\n"
    "  -f                  stay in the foreground\n"
    "  -s                  one thread\n"
    "  -d                  libfuse debug output (implies -f)\n"
    "  -o rw               config/<knob> writable: writing a value tunes the knob\n"
    "  -o ro               read-only (the default)\n"
    "  -o tenant=NAME      the view of one tenant's keys (default: $MOONCAKE_TENANT, else\n"
    "                      the default tenant)\n"
    "  -o allow_other      let other users see the view (off unless asked; needs\n"
    "                      user_allow_other in /etc/fuse.conf when not root)\n"
    "  -o OPT              other mount options go to libfuse\n"
    "  --timeout MS        bound of one call to the master (default 1000)\n"
    "  --auth_token_file FILE  the daemon's access token (else $MOONCAKE_AUTH_TOKEN_FILE, else\n"
    "                      $MOONCAKE_AUTH_TOKEN); needed by -o rw writes when the daemon has one\n"
    "  --cluster_id ID     with --master etcd://: the cluster (default $MOONCAKE_CLUSTER_ID,\n"
    "                      else mooncake_cluster)\n"
    "  -h, --help          this help\n"
    "  -V, --version       the version\n";

struct Args {
    std::string mountpoint;
    std::string master;
    bool foreground = false;
    bool single_thread = false;
    bool debug = false;
    bool read_write = false;
    std::vector<std::string> fuse_options;  // passed to libfuse as -o
    int timeout_ms = 1000;
    std::string auth_token_file;  // --auth_token_file; the token itself is never on argv
    std::string cluster_id;       // --cluster_id; empty: $MOONCAKE_CLUSTER_ID or the default
    std::string tenant;           // -o tenant=NAME, else $MOONCAKE_TENANT; empty: default
};

// Splits "a,b,c" into options, honoring no escapes (mount options here have no commas).
void AddMountOptions(std::string_view list, Args* args) {
    while (!list.empty()) {
        size_t comma = list.find(',');
        std::string opt(list.substr(0, comma));
        list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
        if (opt.empty()) continue;
        if (opt == "rw") {
            args->read_write = true;
        } else if (opt == "ro") {
            args->read_write = false;
        } else if (opt.rfind("tenant=", 0) == 0) {
            args->tenant = opt.substr(7);
        } else {
            args->fuse_options.push_back(opt);
        }
    }
}

// 0 to go on, else the exit code (help, version, usage error).
int ParseArgs(int argc, char** argv, Args* args) {
    const char* env = std::getenv("MOONCAKE_MASTER");
    args->master = env != nullptr && *env != '\0' ? env : "127.0.0.1:50051";
    if (const char* tenant = std::getenv("MOONCAKE_TENANT")) args->tenant = tenant;
    auto usage_error = [](const std::string& message) {
        std::fprintf(stderr, "mooncake-tierfs: %s\n%s", message.c_str(), kUsage);
        return kExitUsage;
    };
    for (int i = 1; i < argc; ++i) {
        std::string_view a = argv[i];
        auto value = [&](std::string_view flag) -> const char* {
            if (a.size() > flag.size() && a.substr(0, flag.size()) == flag &&
                a[flag.size()] == '=') {
                return argv[i] + flag.size() + 1;
            }
            if (i + 1 < argc) return argv[++i];
            return nullptr;
        };
        if (a == "-h" || a == "--help") {
            std::printf("%s\n%s", kUsage, kHelp);
            return -1;
        } else if (a == "-V" || a == "--version") {
            std::printf("mooncake-tierfs 0.1.0 (libfuse %s)\n", fuse_pkgversion());
            return -1;
        } else if (a == "-f") {
            args->foreground = true;
        } else if (a == "-s") {
            args->single_thread = true;
        } else if (a == "-d" || a == "--debug") {
            args->debug = true;
            args->foreground = true;
        } else if (a == "-o" || a.substr(0, 2) == "-o") {
            const char* list = a == "-o" ? (i + 1 < argc ? argv[++i] : nullptr) : argv[i] + 2;
            if (list == nullptr) return usage_error("-o needs a value");
            AddMountOptions(list, args);
        } else if (a == "--master" || a.substr(0, 9) == "--master=") {
            const char* v = value("--master");
            if (v == nullptr || *v == '\0') return usage_error("--master needs HOST:PORT");
            args->master = v;
        } else if (a == "--timeout" || a.substr(0, 10) == "--timeout=") {
            const char* v = value("--timeout");
            char* end = nullptr;
            long ms = v != nullptr ? std::strtol(v, &end, 10) : 0;
            if (v == nullptr || *end != '\0' || ms < 50 || ms > 600000) {
                return usage_error("--timeout needs milliseconds, 50..600000");
            }
            args->timeout_ms = static_cast<int>(ms);
        } else if (a == "--auth_token_file" || a.substr(0, 18) == "--auth_token_file=") {
            const char* v = value("--auth_token_file");
            if (v == nullptr || *v == '\0') return usage_error("--auth_token_file needs FILE");
            args->auth_token_file = v;
        } else if (a == "--cluster_id" || a.substr(0, 13) == "--cluster_id=") {
            const char* v = value("--cluster_id");
            if (v == nullptr || *v == '\0') return usage_error("--cluster_id needs ID");
            args->cluster_id = v;
        } else if (!a.empty() && a[0] == '-') {
            return usage_error("unknown option '" + std::string(a) + "'");
        } else if (args->mountpoint.empty()) {
            args->mountpoint = std::string(a);
        } else {
            return usage_error("one MOUNTPOINT only (also got '" + std::string(a) + "')");
        }
    }
    if (args->mountpoint.empty()) return usage_error("MOUNTPOINT missing");
    return 0;
}

void UseSyslog() {
    auto sink = std::make_shared<spdlog::sinks::syslog_sink_mt>("mooncake-tierfs", LOG_PID,
                                                                LOG_DAEMON, false);
    auto logger = std::make_shared<spdlog::logger>("mooncake-tierfs", sink);
    logger->set_level(spdlog::get_level());
    spdlog::set_default_logger(logger);
}

}  // namespace

int main(int argc, char** argv) {
    Args args;
    if (int rc = ParseArgs(argc, argv, &args); rc != 0) return rc < 0 ? kExitOk : rc;

    auto logger = spdlog::stderr_logger_mt("mooncake-tierfs");
    spdlog::set_default_logger(logger);
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ mooncake-tierfs: %v");
    if (args.debug) spdlog::set_level(spdlog::level::debug);

    mooncake::ClientOptions client_options;
    client_options.connect_timeout = std::chrono::milliseconds(args.timeout_ms);
    client_options.rpc_timeout = std::chrono::milliseconds(args.timeout_ms);
    client_options.retries = 0;  // MasterConnection retries a fast failure once itself
    client_options.client_name = "mooncake-tierfs";
    client_options.cluster_id = args.cluster_id;
    client_options.tenant = args.tenant;
    if (auto scope = mooncake::KeyScope::Make(args.tenant); !scope.ok()) {
        std::fprintf(stderr, "mooncake-tierfs: -o tenant=%s: %s\n", args.tenant.c_str(),
                     scope.status().message().c_str());
        return kExitUsage;
    }
    // --auth_token_file, else $MOONCAKE_AUTH_TOKEN_FILE, else $MOONCAKE_AUTH_TOKEN.
    auto token = mooncake::ResolveClientToken(args.auth_token_file);
    if (!token.ok()) {
        std::fprintf(stderr, "mooncake-tierfs: %s\n", token.status().message().c_str());
        return kExitUsage;
    }
    client_options.auth_token = std::move(*token);
    mooncake::tierfs::MasterConnection master(args.master, client_options);
    if (mooncake::Status st = master.Probe(); !st.ok()) {
        if (st.Is(mooncake::StatusCode::kInvalidArgument)) {
            std::fprintf(stderr, "mooncake-tierfs: --master %s: %s\n", args.master.c_str(),
                         st.ToString().c_str());
            return kExitUsage;
        }
        // Mount anyway: the view answers EIO/ENOTCONN until the master is back.
        spdlog::warn("master {} not reachable yet ({}); mounting anyway", args.master,
                     st.ToString());
    }

    mooncake::tierfs::TierFsOptions fs_options;
    fs_options.read_write = args.read_write;
    fs_options.uid = getuid();
    fs_options.gid = getgid();
    mooncake::tierfs::TierFs fs(&master, fs_options);

    // Read-only unless -o rw; visible to other users only with an explicit -o allow_other
    // (never added here); default_permissions makes the kernel check the modes we report.
    std::string mount_options =
        "fsname=mooncake-tierfs,subtype=mooncake-tierfs,default_permissions";
    if (!args.read_write) mount_options += ",ro";
    for (const std::string& opt : args.fuse_options) mount_options += "," + opt;
    std::vector<std::string> fuse_argv_text = {argv[0], "-o", mount_options};
    if (args.debug) fuse_argv_text.push_back("-d");
    std::vector<char*> fuse_argv;
    for (std::string& s : fuse_argv_text) fuse_argv.push_back(s.data());
    fuse_args fargs = FUSE_ARGS_INIT(static_cast<int>(fuse_argv.size()), fuse_argv.data());

    fuse_session* se =
        fuse_session_new(&fargs, &mooncake::tierfs::TierFs::Ops(), sizeof(fuse_lowlevel_ops), &fs);
    fuse_opt_free_args(&fargs);  // what option parsing allocated in it
    if (se == nullptr) {
        std::fprintf(stderr, "mooncake-tierfs: bad mount options '%s'\n", mount_options.c_str());
        return kExitUsage;
    }
    int rc = kExitFailure;
    if (fuse_set_signal_handlers(se) != 0) {
        spdlog::error("cannot install signal handlers");
    } else {
        if (fuse_session_mount(se, args.mountpoint.c_str()) != 0) {
            spdlog::error("cannot mount at {}", args.mountpoint);
        } else {
            spdlog::info("mounted {} ({}) for master {}", args.mountpoint,
                         args.read_write ? "rw" : "ro", args.master);
            if (!args.foreground) UseSyslog();
            fuse_daemonize(args.foreground ? 1 : 0);
            int loop;
            if (args.single_thread) {
                loop = fuse_session_loop(se);
            } else {
                fuse_loop_config config;
                config.clone_fd = 0;
                config.max_idle_threads = 10;
                loop = fuse_session_loop_mt(se, &config);
            }
            // The loop ends with 0, or with the signal that ended it (SIGTERM, SIGINT, SIGHUP:
            // a requested, clean stop), or with -errno.
            rc = (loop == 0 || loop == SIGTERM || loop == SIGINT || loop == SIGHUP) ? kExitOk
                                                                                    : kExitFailure;
            if (rc != kExitOk) spdlog::error("session ended with error {}", loop);
            fuse_session_unmount(se);
            spdlog::info("unmounted {}", args.mountpoint);
        }
        fuse_remove_signal_handlers(se);
    }
    fuse_session_destroy(se);
    return rc;
}
