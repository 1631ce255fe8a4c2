// What every mooncakectl command shares: the global options, the connection to the daemon
// (opened on first use, with a short connect timeout), the output format, and the one way to
// report an error (one line on stderr, "mooncakectl: ...", and its exit code).
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "cli/exit_codes.h"
#include "cli/printers.h"
#include "core/base/status.h"
#include "thrift/client.h"

namespace mooncake::cli {

inline constexpr const char* kDefaultMaster = "127.0.0.1:50051";

struct GlobalOptions {
    std::string master = kDefaultMaster;  // --master, else $MOONCAKE_MASTER
    bool json = false;                    // --json
    std::string auth_token_file;          // --auth_token_file (else the environment:
                                          // thrift/auth_token.h)
    double connect_timeout_sec = 2.0;     // --connect_timeout (Hello included)
    double timeout_sec = 10.0;            // --timeout: each call to the daemon or a node
    std::string cluster_id;               // --cluster_id (etcd:// masters; docs/HA.md)
    std::string tenant;                   // --tenant, else $MOONCAKE_TENANT ("": default)
};

class Context {
  public:
    explicit Context(GlobalOptions options) : options_(std::move(options)) {}

    const GlobalOptions& options() const { return options_; }
    Format format() const { return options_.json ? Format::kJson : Format::kTable; }

    // The client, connected on first use. On failure the error has been reported and
    // *exit_code holds what to return; the result is then nullptr.
    Client* client(int* exit_code);

    // Writes `text` to stdout as is.
    void Print(std::string_view text);

    // Reports a failed store call: "mooncakectl: <what>: <message>" and the mapped exit code.
    int Fail(const Status& status, std::string_view what = {});
    // Reports a usage error found by mooncakectl itself (exit 2).
    int Usage(std::string_view message);
    // Reports any other error with an explicit exit code.
    int Error(int exit_code, std::string_view message);

    // Whether a progress bar may be drawn (stdout is a terminal, table output).
    bool Interactive() const;

  private:
    GlobalOptions options_;
    std::unique_ptr<Client> client_;
};

// "mooncakectl: " + message with newlines folded, for stderr.
std::string ErrorLine(std::string_view message);

}  // namespace mooncake::cli
