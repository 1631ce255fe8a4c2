// mooncakectl: the mooncake-tier admin CLI. See cli/commands.h and mooncakectl(1).
#include <csignal>

#include "cli/commands.h"

int main(int argc, char** argv) {
    // A reader that goes away (mooncakectl get KEY | head -c 10) ends the write with EPIPE,
    // reported as an error, rather than killing the process mid-output.
    std::signal(SIGPIPE, SIG_IGN);
    return mooncake::cli::RunMooncakectl(argc, argv);
}
