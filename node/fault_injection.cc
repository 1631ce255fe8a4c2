// The live side of node/fault_injection.h; compiled only into mooncaked-fault.
#include "node/fault_injection.h"

#ifdef MOONCAKE_FAULT_INJECTION

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

#include "spdlog/spdlog.h"

namespace mooncake::fault {
namespace {

struct Action {
    enum Kind { kSleep, kFail, kHold, kFailUntilRelease } kind = kSleep;
    int sleep_ms = 0;
};

// Parsed once, from the environment; a malformed spec aborts the (test-only) binary at once
// rather than running a test without the fault it asked for.
const std::map<std::string, Action>& Table() {
    static const std::map<std::string, Action> table = [] {
        std::map<std::string, Action> t;
        const char* spec = std::getenv("MOONCAKE_FAULTS");
        if (spec == nullptr) return t;
        std::stringstream items(spec);
        std::string item;
        while (std::getline(items, item, ',')) {
            if (item.empty()) continue;
            size_t eq = item.find('=');
            std::string point = item.substr(0, eq);
            std::string action = eq == std::string::npos ? "" : item.substr(eq + 1);
            Action a;
            if (action == "fail") {
                a.kind = Action::kFail;
            } else if (action == "hold") {
                a.kind = Action::kHold;
            } else if (action == "fail_until_release") {
                a.kind = Action::kFailUntilRelease;
            } else if (action.rfind("sleep:", 0) == 0) {
                a.kind = Action::kSleep;
                a.sleep_ms = std::atoi(action.c_str() + 6);
            } else {
                spdlog::critical("MOONCAKE_FAULTS: bad item '{}'", item);
                std::abort();
            }
            t[point] = a;
        }
        return t;
    }();
    return table;
}

std::string Dir() {
    const char* dir = std::getenv("MOONCAKE_FAULT_DIR");
    return dir != nullptr ? dir : "/tmp";
}

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

}  // namespace

Status Hit(const char* point) {
    auto it = Table().find(point);
    if (it == Table().end()) return Status::Ok();
    const Action& a = it->second;
    std::ofstream(Dir() + "/" + point + ".reached") << ::getpid() << "\n";
    switch (a.kind) {
        case Action::kSleep:
            std::this_thread::sleep_for(std::chrono::milliseconds(a.sleep_ms));
            return Status::Ok();
        case Action::kFail:
            return Status::IoError(std::string("injected fault at ") + point);
        case Action::kFailUntilRelease:
            if (Exists(Dir() + "/" + point + ".release")) return Status::Ok();
            return Status::IoError(std::string("injected fault at ") + point);
        case Action::kHold:
            spdlog::warn("fault point {} holding until {}/{}.release", point, Dir(), point);
            while (!Exists(Dir() + "/" + point + ".release")) {
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
            return Status::Ok();
    }
    return Status::Ok();
}

}  // namespace mooncake::fault

#endif  // MOONCAKE_FAULT_INJECTION
