// ByteSource / ByteSink: where a streamed value comes from and goes to, so a value of any size
// moves between a socket and its destination in bounded chunks (or with no user-space copy at
// all: sendfile from a file, splice through a pipe) instead of through one whole-value buffer.
//
// A source or sink that stands on a file descriptor says so (fd()); the TCP transport then
// moves the bytes with sendfile/splice, and falls back to Read/Write in kChunkBytes pieces when
// the kernel cannot (net/net.h, SendFromFd/RecvToFd). Any transport may use Read/Write only.
//
// Rewind: a transfer that failed part-way may be tried again (another replica, a fresh
// connection) only from the first byte; Rewind() says whether that is possible (a regular file
// can be truncated back or read again, a pipe or a socket cannot).
//
// Thread-safety: one transfer uses a source or sink at a time; none is shared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/base/status.h"

namespace mooncake {

// The bounded buffer a copying fallback moves through (and the pipe size splice asks for).
inline constexpr size_t kChunkBytes = 1 << 20;

class ByteSource {
public:
    virtual ~ByteSource() = default;
    // Up to out.size() bytes; 0 only at the end of the source.
    virtual Result<size_t> Read(std::span<std::byte> out) = 0;
    // A descriptor to sendfile/splice from at its file position (-1: none); reading it is
    // the same as Read.
    virtual int fd() const { return -1; }
    // Back to the first byte; false if that cannot be done.
    virtual bool Rewind() { return false; }
    // Called once every byte of the value has been taken, before the value is committed: a
    // source that knows it should have ended (a given size) says here if it did not.
    virtual Status Finish() { return Status::Ok(); }
};

class ByteSink {
public:
    virtual ~ByteSink() = default;
    virtual Status Write(std::span<const std::byte> data) = 0;
    // A descriptor to splice into at its file position (-1: none). Not const: a sink may
    // open its destination only when the first byte arrives.
    virtual int fd() { return -1; }
    // Forget everything written so far; false if that cannot be done.
    virtual bool Rewind() { return false; }

    // What transfer code calls: Write, counting what was delivered (bytes spliced into fd()
    // are counted with Spliced), so a retry knows whether there is anything to take back.
    Status Take(std::span<const std::byte> data) {
        Status st = Write(data);
        if (!st.ok()) {
            write_error_ = st;
            return st;
        }
        taken_ += data.size();
        return Status::Ok();
    }
    // A write into fd() failed (the transfer code reports it so).
    void WriteFailed(const Status& st) { write_error_ = st; }
    // Not ok when a transfer failed because the destination refused bytes (disk full, a
    // closed pipe), rather than the store or the connection.
    const Status& write_error() const { return write_error_; }
    void Spliced(uint64_t n) { taken_ += n; }
    uint64_t taken() const { return taken_; }
    // Ready to receive from the first byte again: nothing was taken yet, or Rewind worked.
    bool Restart() {
        if (taken_ == 0) return true;
        if (!Rewind()) return false;
        taken_ = 0;
        return true;
    }

private:
    uint64_t taken_ = 0;
    Status write_error_;
};

// Bytes already in memory.
class SpanSource final : public ByteSource {
public:
    explicit SpanSource(std::span<const std::byte> data) : data_(data) {}
    Result<size_t> Read(std::span<std::byte> out) override;
    bool Rewind() override {
        at_ = 0;
        return true;
    }

private:
    std::span<const std::byte> data_;
    size_t at_ = 0;
};

// Into caller memory; writing more than it holds is an error.
class SpanSink final : public ByteSink {
public:
    explicit SpanSink(std::span<std::byte> out) : out_(out) {}
    Status Write(std::span<const std::byte> data) override;
    bool Rewind() override {
        at_ = 0;
        return true;
    }
    size_t written() const { return at_; }

private:
    std::span<std::byte> out_;
    size_t at_ = 0;
};

// A file descriptor, not owned, used at its file position. A regular file can be rewound to
// the position it had when the source/sink was made; anything else (a pipe, a terminal, a
// device such as /dev/null) is read or written as it comes.
class FdSource final : public ByteSource {
public:
    explicit FdSource(int fd);
    Result<size_t> Read(std::span<std::byte> out) override;
    int fd() const override { return fd_; }
    bool Rewind() override;

private:
    int fd_;
    bool regular_ = false;
    uint64_t start_ = 0;
};

class FdSink final : public ByteSink {
public:
    explicit FdSink(int fd);
    Status Write(std::span<const std::byte> data) override;
    int fd() override { return fd_; }
    // A regular file is truncated back to where it started; /dev/null-like devices that
    // keep nothing rewind trivially; pipes cannot.
    bool Rewind() override;

private:
    int fd_;
    bool regular_ = false;
    bool discards_ = false;  // /dev/null keeps nothing to take back
    uint64_t start_ = 0;
};

}  // namespace mooncake
