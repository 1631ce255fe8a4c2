// systemd readiness without libsystemd: one datagram to $NOTIFY_SOCKET (Type=notify units).
// A no-op when not started by systemd.
#pragma once

#include <string_view>

namespace mooncake {

// "READY=1", "STOPPING=1", "STATUS=..."; errors are ignored (readiness is best effort).
void SdNotify(std::string_view state);

}  // namespace mooncake
