// AioDevice: a file opened with O_DIRECT, served through one libaio context.
//
// Callers submit from their own threads (io_submit is thread-safe on one context) and reap
// completions themselves, leader/follower style: one waiting caller at a time sits in
// io_getevents and hands every event it gets to the batch it belongs to; the others sleep on
// a condition variable until their batch is done or the poller role is free. A lone caller
// (queue depth 1) so never waits for a context switch to learn its I/O finished. A counting
// semaphore of `queue_depth` slots keeps the number in flight within the context's size, so
// a batch larger than the queue simply streams through it.
#include <fcntl.h>
#include <libaio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <semaphore>
#include <thread>
#include <vector>

#include "core/disk/device.h"
#include "core/base/mutex.h"

namespace mooncake {
namespace {

std::string ErrnoText(int err) { return std::string(std::strerror(err)); }

class AioDevice final : public Device {
  public:
    AioDevice(int fd, uint64_t size, int queue_depth, io_context_t ctx, std::string path)
        : fd_(fd),
          size_(size),
          queue_depth_(queue_depth),
          ctx_(ctx),
          path_(std::move(path)),
          slots_(queue_depth) {}

    ~AioDevice() override {
        io_destroy(ctx_);
        close(fd_);
    }

    uint64_t size() const override { return size_; }

    Status ReadV(std::span<IoRequest> reqs) override { return Submit(reqs, /*write=*/false); }
    Status WriteV(std::span<IoRequest> reqs) override { return Submit(reqs, /*write=*/true); }

    Status Flush() override {
        if (fdatasync(fd_) != 0) {
            return Status::IoError("fdatasync " + path_ + ": " + ErrnoText(errno));
        }
        return Status::Ok();
    }

  private:
    struct Batch {
        int64_t remaining = 0;  // guarded by mu_
        bool done = false;      // guarded by mu_
        int first_error = 0;    // errno, or -1 for a short transfer; guarded by mu_
        size_t failed_index = 0;
        CondVar cv;  // its own, so a poll round wakes only whom it concerns
    };
    struct Op {
        iocb cb;
        Batch* batch;
        size_t index;
        uint64_t length;
    };

    Status Submit(std::span<IoRequest> reqs, bool write) {
        MC_RETURN_IF_ERROR(CheckRequests(reqs));
        if (reqs.empty()) return Status::Ok();
        Batch batch;
        batch.remaining = static_cast<int64_t>(reqs.size());
        std::vector<Op> ops(reqs.size());
        std::vector<iocb*> list;
        list.reserve(std::min<size_t>(reqs.size(), queue_depth_));
        size_t next = 0;
        while (next < reqs.size()) {
            // At least one slot, then as many more as are free right now. While this batch
            // has I/O in flight, waiting for a slot means polling, or the slot may never come.
            while (!slots_.try_acquire()) {
                MutexLock lock(mu_);
                PollLocked(&batch);
            }
            size_t group = 1;
            while (next + group < reqs.size() && group < static_cast<size_t>(queue_depth_) &&
                   slots_.try_acquire()) {
                ++group;
            }
            list.clear();
            for (size_t i = next; i < next + group; ++i) {
                Op& op = ops[i];
                op.batch = &batch;
                op.index = i;
                op.length = reqs[i].length;
                if (write) {
                    io_prep_pwrite(&op.cb, fd_, reqs[i].buffer, reqs[i].length,
                                   static_cast<long long>(reqs[i].offset));
                } else {
                    io_prep_pread(&op.cb, fd_, reqs[i].buffer, reqs[i].length,
                                  static_cast<long long>(reqs[i].offset));
                }
                op.cb.data = &op;
                list.push_back(&op.cb);
            }
            size_t done = 0;
            while (done < list.size()) {
                int rc = io_submit(ctx_, static_cast<long>(list.size() - done), list.data() + done);
                if (rc > 0) {
                    done += static_cast<size_t>(rc);
                } else if (rc == -EAGAIN || rc == -EINTR) {
                    std::this_thread::yield();
                } else {
                    // Not submitted: count them as failed and give their slots back.
                    MutexLock lock(mu_);
                    for (size_t i = done; i < list.size(); ++i) {
                        CompleteLocked(static_cast<Op*>(list[i]->data), rc == 0 ? -EIO : rc);
                    }
                    done = list.size();
                }
            }
            next += group;
        }
        {
            MutexLock lock(mu_);
            while (!batch.done) PollLocked(&batch);
        }
        if (batch.first_error != 0) {
            const IoRequest& failed = reqs[batch.failed_index];
            std::string what =
                batch.first_error > 0 ? ErrnoText(batch.first_error) : "short transfer";
            return Status::IoError(std::string(write ? "write" : "read") + " of " + path_ +
                                   " at offset " + std::to_string(failed.offset) + " (" +
                                   std::to_string(failed.length) + " bytes): " + what);
        }
        return Status::Ok();
    }

    // One round of the leader/follower protocol for `me`: reap events if nobody else is, else
    // sleep until this batch is done or the poller role is handed to it. Releases mu_ while
    // it sleeps or reaps; returns with it held.
    void PollLocked(Batch* me) MC_REQUIRES(mu_) {
        if (polling_) {
            waiting_.push_back(me);
            me->cv.Wait(mu_);
            std::erase(waiting_, me);
            return;
        }
        polling_ = true;
        mu_.unlock();
        io_event events[64];
        // The timeout is a safety net only: a caller waiting for a slot may poll while the
        // I/O holding the slots has not been submitted yet.
        timespec timeout{0, 100'000'000};
        int n = io_getevents(ctx_, 1, 64, events, &timeout);
        mu_.lock();
        for (int i = 0; i < n; ++i) {
            CompleteLocked(static_cast<Op*>(events[i].data), static_cast<long>(events[i].res));
        }
        polling_ = false;
        // Hand the role to someone still waiting (batches just completed were woken already).
        for (Batch* b : waiting_) {
            if (!b->done) {
                b->cv.NotifyOne();
                break;
            }
        }
    }

    // `res` is the kernel's result: bytes transferred or -errno.
    void CompleteLocked(Op* op, long res) MC_REQUIRES(mu_) {
        Batch* batch = op->batch;
        if ((res < 0 || static_cast<uint64_t>(res) != op->length) && batch->first_error == 0) {
            batch->first_error = res < 0 ? static_cast<int>(-res) : -1;
            batch->failed_index = op->index;
        }
        slots_.release();
        if (--batch->remaining == 0) {
            batch->done = true;
            batch->cv.NotifyOne();
        }
    }

    const int fd_;
    const uint64_t size_;
    const int queue_depth_;
    io_context_t ctx_;
    const std::string path_;
    std::counting_semaphore<> slots_;
    Mutex mu_;
    bool polling_ MC_GUARDED_BY(mu_) = false;
    std::vector<Batch*> waiting_ MC_GUARDED_BY(mu_);  // followers asleep
};

}  // namespace

Result<std::unique_ptr<Device>> OpenAioDevice(const std::string& path, uint64_t size,
                                              int queue_depth) {
    if (size == 0 || !IsAligned(size)) {
        return Status::InvalidArgument("device size " + std::to_string(size) +
                                       " is not a positive multiple of 4096");
    }
    if (queue_depth < 1 || queue_depth > 65536) {
        return Status::InvalidArgument("queue depth " + std::to_string(queue_depth) +
                                       " is out of range 1..65536");
    }
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0644);
    if (fd < 0) {
        int err = errno;
        if (err == EINVAL) {
            return Status::InvalidArgument("cannot open " + path +
                                           " with O_DIRECT: the filesystem does not support it");
        }
        return Status::IoError("open " + path + ": " + ErrnoText(err));
    }
    struct stat st {};
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return Status::IoError("stat " + path + ": " + ErrnoText(err));
    }
    if (static_cast<uint64_t>(st.st_size) < size) {
        int rc = posix_fallocate(fd, 0, static_cast<off_t>(size));
        if (rc == EOPNOTSUPP || rc == EINVAL) {
            rc = ftruncate(fd, static_cast<off_t>(size)) == 0 ? 0 : errno;
        }
        if (rc != 0) {
            close(fd);
            return Status::IoError("cannot size " + path + " to " + std::to_string(size) +
                                   " bytes: " + ErrnoText(rc));
        }
    }
    io_context_t ctx = nullptr;
    int rc = io_setup(queue_depth, &ctx);
    if (rc < 0) {
        close(fd);
        std::string hint = rc == -EAGAIN ? " (raise /proc/sys/fs/aio-max-nr)" : "";
        return Status::IoError("io_setup(" + std::to_string(queue_depth) + "): " + ErrnoText(-rc) +
                               hint);
    }
    return std::unique_ptr<Device>(new AioDevice(fd, size, queue_depth, ctx, path));
}

}  // namespace mooncake
