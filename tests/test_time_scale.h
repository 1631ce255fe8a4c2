// How much longer than usual a test may wait for something to happen in real time (a daemon
// coming up, a promotion landing). scripts/sanitize.sh sets MOONCAKE_TEST_TIME_SCALE because
// sanitized processes run several times slower; unset, waits are as written.
#pragma once

#include <chrono>
#include <cstdlib>

namespace mooncake::test {

inline int TimeScale() {
    static const int scale = [] {
        const char* env = std::getenv("MOONCAKE_TEST_TIME_SCALE");
        int v = env ? std::atoi(env) : 1;
        return v >= 1 ? v : 1;
    }();
    return scale;
}

inline std::chrono::milliseconds Scaled(std::chrono::milliseconds wait) {
    return wait * TimeScale();
}

}  // namespace mooncake::test
