#include "net/stream_io.h"

#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "net/net.h"

namespace mooncake::net {
namespace {

// One kernel call moves at most this much, so a 64 GiB value is still many bounded calls.
constexpr size_t kMaxCall = 1 << 30;

Status SocketFailure(std::string_view what) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return Status::Timeout(std::string(what) + ": timed out");
    }
    if (errno == ECONNRESET || errno == EPIPE) {
        return Status::Unavailable(std::string(what) + ": " + std::strerror(errno));
    }
    return Status::IoError(std::string(what) + ": " + std::strerror(errno));
}

Status EndedEarly(uint64_t got, uint64_t length) {
    return Status::IoError("the value's source ended after " + std::to_string(got) + " of " +
                           std::to_string(length) + " bytes");
}

Status PeerClosed() { return Status::IoError("peer closed the connection mid-message"); }

// Kernel errors that mean "this pair of descriptors cannot be spliced/sendfile'd": fall back
// to copying (nothing was moved by the failed call).
bool Unsupported(int err) { return err == EINVAL || err == ENOSYS || err == EOPNOTSUPP; }

std::unique_ptr<std::byte[]> ChunkBuffer() { return std::make_unique<std::byte[]>(kChunkBytes); }

Status SendCopy(int sock, ByteSource& source, uint64_t length, uint64_t done,
                bool* source_failed) {
    auto buf = ChunkBuffer();
    while (done < length) {
        size_t want = static_cast<size_t>(std::min<uint64_t>(kChunkBytes, length - done));
        auto n = source.Read({buf.get(), want});
        if (!n.ok() || *n == 0) {
            *source_failed = true;
            return !n.ok() ? n.status() : EndedEarly(done, length);
        }
        MC_RETURN_IF_ERROR(SendAll(sock, buf.get(), *n));
        done += *n;
    }
    return Status::Ok();
}

Status RecvCopy(int sock, ByteSink& sink, uint64_t length, uint64_t done) {
    auto buf = ChunkBuffer();
    while (done < length) {
        size_t want = static_cast<size_t>(std::min<uint64_t>(kChunkBytes, length - done));
        Status st = RecvAll(sock, buf.get(), want);
        if (!st.ok()) return st.Is(StatusCode::kUnavailable) ? PeerClosed() : st;
        MC_RETURN_IF_ERROR(sink.Take({buf.get(), want}));
        done += want;
    }
    return Status::Ok();
}

class Pipe {
public:
    Pipe() {
        if (::pipe2(fds_, O_CLOEXEC) != 0) {
            fds_[0] = fds_[1] = -1;
            return;
        }
        // Best effort: a bigger pipe means fewer calls (pipe-max-size may refuse it).
        (void)::fcntl(fds_[1], F_SETPIPE_SZ, static_cast<int>(kChunkBytes));
    }
    ~Pipe() {
        for (int fd : fds_) {
            if (fd >= 0) ::close(fd);
        }
    }
    bool ok() const { return fds_[0] >= 0; }
    int read_end() const { return fds_[0]; }
    int write_end() const { return fds_[1]; }

private:
    int fds_[2];
};

}  // namespace

Status SendStream(int sock, ByteSource& source, uint64_t length, bool* source_failed) {
    bool ignored = false;
    if (source_failed == nullptr) source_failed = &ignored;
    *source_failed = false;
    uint64_t done = 0;
    struct stat st {};
    const int fd = source.fd();
    if (fd >= 0 && ::fstat(fd, &st) == 0 && (S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode))) {
        const bool file = S_ISREG(st.st_mode);
        while (done < length) {
            size_t want = static_cast<size_t>(std::min<uint64_t>(kMaxCall, length - done));
            ssize_t n = file ? ::sendfile(sock, fd, nullptr, want)
                             : ::splice(fd, nullptr, sock, nullptr, want,
                                        SPLICE_F_MOVE | SPLICE_F_MORE);
            if (n < 0) {
                if (errno == EINTR) continue;
                if (Unsupported(errno)) return SendCopy(sock, source, length, done, source_failed);
                // Which side failed is not told; a socket error is by far the likelier.
                return SocketFailure(file ? "sendfile" : "splice");
            }
            if (n == 0) {
                *source_failed = true;
                return EndedEarly(done, length);
            }
            done += static_cast<uint64_t>(n);
        }
        return Status::Ok();
    }
    return SendCopy(sock, source, length, done, source_failed);
}

Status RecvStream(int sock, ByteSink& sink, uint64_t length) {
    struct stat st {};
    const int fd = sink.fd();
    if (fd < 0 || ::fstat(fd, &st) != 0) return RecvCopy(sock, sink, length, 0);
    uint64_t done = 0;
    if (S_ISFIFO(st.st_mode)) {
        // Straight into the caller's pipe (stdout piped to another program).
        while (done < length) {
            size_t want = static_cast<size_t>(std::min<uint64_t>(kMaxCall, length - done));
            ssize_t n = ::splice(sock, nullptr, fd, nullptr, want, SPLICE_F_MOVE | SPLICE_F_MORE);
            if (n < 0) {
                if (errno == EINTR) continue;
                if (Unsupported(errno)) return RecvCopy(sock, sink, length, done);
                if (errno == EPIPE) {  // the reader of the caller's pipe went away
                    sink.WriteFailed(Status::IoError(std::string("write: ") + std::strerror(errno)));
                    return sink.write_error();
                }
                return SocketFailure("splice");
            }
            if (n == 0) return PeerClosed();
            sink.Spliced(static_cast<uint64_t>(n));
            done += static_cast<uint64_t>(n);
        }
        return Status::Ok();
    }
    // socket -> our pipe -> the file or device: the pages move, the bytes are not copied
    // through user space (and into /dev/null not at all).
    Pipe pipe;
    if (!pipe.ok()) return RecvCopy(sock, sink, length, 0);
    while (done < length) {
        size_t want = static_cast<size_t>(std::min<uint64_t>(kChunkBytes, length - done));
        ssize_t in = ::splice(sock, nullptr, pipe.write_end(), nullptr, want,
                              SPLICE_F_MOVE | SPLICE_F_MORE);
        if (in < 0) {
            if (errno == EINTR) continue;
            if (Unsupported(errno)) return RecvCopy(sock, sink, length, done);
            return SocketFailure("splice");
        }
        if (in == 0) return PeerClosed();
        size_t left = static_cast<size_t>(in);
        while (left > 0) {
            ssize_t out = ::splice(pipe.read_end(), nullptr, fd, nullptr, left,
                                   SPLICE_F_MOVE | SPLICE_F_MORE);
            if (out < 0 && errno == EINTR) continue;
            if (out < 0 && Unsupported(errno)) {
                // The destination takes no splice (O_APPEND, some file systems): drain what
                // the pipe holds by copy and go on copying.
                auto buf = ChunkBuffer();
                while (left > 0) {
                    ssize_t r = ::read(pipe.read_end(), buf.get(), std::min(left, kChunkBytes));
                    if (r <= 0) {
                        sink.WriteFailed(Status::IoError("draining the splice pipe failed"));
                        return sink.write_error();
                    }
                    MC_RETURN_IF_ERROR(sink.Take({buf.get(), static_cast<size_t>(r)}));
                    left -= static_cast<size_t>(r);
                }
                done += static_cast<uint64_t>(in);
                return RecvCopy(sock, sink, length, done);
            }
            if (out <= 0) {
                sink.WriteFailed(Status::IoError(std::string("write: ") +
                                                 (out < 0 ? std::strerror(errno) : "no progress")));
                return sink.write_error();
            }
            left -= static_cast<size_t>(out);
            sink.Spliced(static_cast<uint64_t>(out));
        }
        done += static_cast<uint64_t>(in);
    }
    return Status::Ok();
}

}  // namespace mooncake::net
