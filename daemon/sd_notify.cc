#include "daemon/sd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace mooncake {

void SdNotify(std::string_view state) {
    const char* path = std::getenv("NOTIFY_SOCKET");
    if (path == nullptr || path[0] == '\0') return;
    size_t len = std::strlen(path);
    sockaddr_un addr{};
    if (len >= sizeof addr.sun_path) return;
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path, len);
    if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';  // abstract namespace
    int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return;
    socklen_t addr_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len);
    (void)::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL,
                   reinterpret_cast<sockaddr*>(&addr), addr_len);
    ::close(fd);
}

}  // namespace mooncake
