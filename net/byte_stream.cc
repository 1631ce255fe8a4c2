#include "net/byte_stream.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace mooncake {
namespace {

Status Errno(std::string_view what) {
    return Status::IoError(std::string(what) + ": " + std::strerror(errno));
}

}  // namespace

Result<size_t> SpanSource::Read(std::span<std::byte> out) {
    size_t n = std::min(out.size(), data_.size() - at_);
    std::memcpy(out.data(), data_.data() + at_, n);
    at_ += n;
    return n;
}

Status SpanSink::Write(std::span<const std::byte> data) {
    if (data.size() > out_.size() - at_) {
        return Status::InvalidArgument("more bytes than the buffer of " +
                                       std::to_string(out_.size()) + " holds");
    }
    std::memcpy(out_.data() + at_, data.data(), data.size());
    at_ += data.size();
    return Status::Ok();
}

FdSource::FdSource(int fd) : fd_(fd) {
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        off_t at = ::lseek(fd, 0, SEEK_CUR);
        if (at >= 0) {
            regular_ = true;
            start_ = static_cast<uint64_t>(at);
        }
    }
}

Result<size_t> FdSource::Read(std::span<std::byte> out) {
    for (;;) {
        ssize_t n = ::read(fd_, out.data(), out.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return Errno("read");
        }
        return static_cast<size_t>(n);
    }
}

bool FdSource::Rewind() {
    return regular_ && ::lseek(fd_, static_cast<off_t>(start_), SEEK_SET) >= 0;
}

FdSink::FdSink(int fd) : fd_(fd) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return;
    if (S_ISREG(st.st_mode)) {
        off_t at = ::lseek(fd, 0, SEEK_CUR);
        if (at >= 0) {
            regular_ = true;
            start_ = static_cast<uint64_t>(at);
        }
    } else if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)) {
        discards_ = true;  // /dev/null
    }
}

Status FdSink::Write(std::span<const std::byte> data) {
    while (!data.empty()) {
        ssize_t n = ::write(fd_, data.data(), data.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return Errno("write");
        }
        data = data.subspan(static_cast<size_t>(n));
    }
    return Status::Ok();
}

bool FdSink::Rewind() {
    if (discards_) return true;
    if (!regular_) return false;
    return ::ftruncate(fd_, static_cast<off_t>(start_)) == 0 &&
           ::lseek(fd_, static_cast<off_t>(start_), SEEK_SET) >= 0;
}

}  // namespace mooncake
