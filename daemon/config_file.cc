#include "daemon/config_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace mooncake {
namespace {

std::string_view Trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
        s.remove_suffix(1);
    }
    return s;
}

// The knob an active (uncommented) `name = value` line sets, or "".
std::string_view LineKnob(std::string_view line) {
    std::string_view body = Trim(line);
    if (body.empty() || body.front() == '#') return {};
    size_t eq = body.find('=');
    if (eq == std::string_view::npos) return {};
    return Trim(body.substr(0, eq));
}

std::string Errno() { return std::strerror(errno); }

}  // namespace

std::string RewriteConfigText(std::string_view text, const KnobAssignments& assignments) {
    std::string out;
    std::set<std::string> done;
    while (!text.empty()) {
        size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        std::string_view knob = LineKnob(line);
        const std::pair<std::string, std::string>* hit = nullptr;
        for (const auto& a : assignments) {
            if (!knob.empty() && a.first == knob) hit = &a;  // the last assignment wins
        }
        if (hit != nullptr) {
            out += hit->first + " = " + std::string(Trim(hit->second)) + "\n";
            done.insert(hit->first);
        } else {
            out += std::string(line) + "\n";
        }
    }
    bool header = false;
    for (auto it = assignments.rbegin(); it != assignments.rend(); ++it) {
        if (done.count(it->first)) continue;
        if (!header) {
            out += "\n# set at runtime (mooncakectl tune set --persist)\n";
            header = true;
        }
        out += it->first + " = " + std::string(Trim(it->second)) + "\n";
        done.insert(it->first);
    }
    return out;
}

Result<ConfigFileUpdate> ConfigFileUpdate::Prepare(const std::string& path,
                                                   const KnobAssignments& assignments) {
    if (path.empty()) {
        return Status::InvalidArgument(
            "the daemon was started without --config: there is no file to persist into");
    }
    std::ifstream in(path);
    if (!in) return Status::IoError("cannot read config file '" + path + "': " + Errno());
    std::stringstream buf;
    buf << in.rdbuf();
    return Stage(path, RewriteConfigText(buf.str(), assignments));
}

Result<ConfigFileUpdate> ConfigFileUpdate::Stage(const std::string& path, std::string_view text) {
    std::string temp = path + ".tmp." + std::to_string(::getpid());
    int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return Status::IoError("cannot write next to '" + path + "': " + Errno());
    ConfigFileUpdate update(path, temp);  // removes the temporary on any early return
    size_t written = 0;
    while (written < text.size()) {
        ssize_t n = ::write(fd, text.data() + written, text.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            std::string why = Errno();
            ::close(fd);
            return Status::IoError("writing '" + temp + "': " + why);
        }
        written += static_cast<size_t>(n);
    }
    bool synced = ::fsync(fd) == 0;
    ::close(fd);
    if (!synced) return Status::IoError("fsync '" + temp + "': " + Errno());
    return update;
}

ConfigFileUpdate::ConfigFileUpdate(ConfigFileUpdate&& other) noexcept
    : path_(std::move(other.path_)), temp_(std::move(other.temp_)) {
    other.temp_.clear();
}

ConfigFileUpdate::~ConfigFileUpdate() {
    if (!temp_.empty()) ::unlink(temp_.c_str());
}

Status ConfigFileUpdate::Commit() {
    if (::rename(temp_.c_str(), path_.c_str()) != 0) {
        return Status::IoError("replacing '" + path_ + "': " + Errno());
    }
    temp_.clear();
    // The rename itself is durable once the directory is.
    const size_t slash = path_.rfind('/');
    const std::string dir_path =
        slash == std::string::npos ? "." : slash == 0 ? "/" : path_.substr(0, slash);
    int dir = ::open(dir_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
        ::fsync(dir);
        ::close(dir);
    }
    return Status::Ok();
}

}  // namespace mooncake
