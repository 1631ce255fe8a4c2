#include "daemon/tenant_policy_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace mooncake {
namespace {

std::string Errno() { return std::strerror(errno); }

std::string DirectoryOf(const std::string& path) {
    size_t slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return path.substr(0, slash);
}

}  // namespace

Result<TenantPolicy> ReadTenantPolicyFile(const std::string& path) {
    std::ifstream in(path);
    if (!in) {
        if (errno == ENOENT) return TenantPolicy{};
        return Status::IoError("cannot read tenant policy file '" + path + "': " + Errno());
    }
    std::stringstream buf;
    buf << in.rdbuf();
    auto policy = ParseTenantPolicy(buf.str());
    if (!policy.ok()) {
        return Status(policy.status().code(),
                      "tenant policy file '" + path + "': " + policy.status().message());
    }
    return policy;
}

Status WriteTenantPolicyFile(const std::string& path, const TenantPolicy& policy) {
    const std::string text =
        "# mooncake tenant policy: NAME [memory=SIZE] [disk=SIZE]; rewritten by "
        "`mooncakectl tenant set|rm`\n" +
        FormatTenantPolicy(policy);
    const std::string temp = path + ".tmp." + std::to_string(::getpid());
    int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return Status::IoError("cannot write next to '" + path + "': " + Errno());
    size_t written = 0;
    while (written < text.size()) {
        ssize_t n = ::write(fd, text.data() + written, text.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            std::string why = Errno();
            ::close(fd);
            ::unlink(temp.c_str());
            return Status::IoError("writing '" + temp + "': " + why);
        }
        written += static_cast<size_t>(n);
    }
    const bool synced = ::fsync(fd) == 0;
    std::string why = synced ? "" : Errno();
    ::close(fd);
    if (!synced) {
        ::unlink(temp.c_str());
        return Status::IoError("fsync '" + temp + "': " + why);
    }
    if (::rename(temp.c_str(), path.c_str()) != 0) {
        why = Errno();
        ::unlink(temp.c_str());
        return Status::IoError("replacing '" + path + "': " + why);
    }
    // The rename itself is durable once the directory is.
    int dir = ::open(DirectoryOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
        ::fsync(dir);
        ::close(dir);
    }
    return Status::Ok();
}

}  // namespace mooncake
