// Mutexes the thread-safety analysis understands. libstdc++'s std::mutex carries no
// capability annotations, so MC_GUARDED_BY(a std::mutex) checks nothing; these thin wrappers
// do (clang -Wthread-safety, scripts/thread-safety.sh). Same cost as the std types.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#include "core/base/thread_annotations.h"

namespace mooncake {

class MC_CAPABILITY("mutex") Mutex {
public:
    void lock() MC_ACQUIRE() { mu_.lock(); }
    void unlock() MC_RELEASE() { mu_.unlock(); }
    bool try_lock() MC_TRY_ACQUIRE(true) { return mu_.try_lock(); }

private:
    std::mutex mu_;
};

class MC_CAPABILITY("shared_mutex") SharedMutex {
public:
    void lock() MC_ACQUIRE() { mu_.lock(); }
    void unlock() MC_RELEASE() { mu_.unlock(); }
    void lock_shared() MC_ACQUIRE_SHARED() { mu_.lock_shared(); }
    void unlock_shared() MC_RELEASE_SHARED() { mu_.unlock_shared(); }
    // For a look that must not wait for a writer (Segment::Held skips records being written).
    bool try_lock_shared() MC_TRY_ACQUIRE_SHARED(true) { return mu_.try_lock_shared(); }

private:
    std::shared_mutex mu_;
};

// Holds `mu` for its scope (std::lock_guard).
class MC_SCOPED_CAPABILITY MutexLock {
public:
    explicit MutexLock(Mutex& mu) MC_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
    ~MutexLock() MC_RELEASE() { mu_.unlock(); }
    MutexLock(const MutexLock&) = delete;
    MutexLock& operator=(const MutexLock&) = delete;

private:
    Mutex& mu_;
};

// Holds a SharedMutex exclusively / shared for its scope.
class MC_SCOPED_CAPABILITY WriterLock {
public:
    explicit WriterLock(SharedMutex& mu) MC_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
    ~WriterLock() MC_RELEASE() { mu_.unlock(); }
    WriterLock(const WriterLock&) = delete;
    WriterLock& operator=(const WriterLock&) = delete;

private:
    SharedMutex& mu_;
};

class MC_SCOPED_CAPABILITY ReaderLock {
public:
    explicit ReaderLock(SharedMutex& mu) MC_ACQUIRE_SHARED(mu) : mu_(mu) { mu_.lock_shared(); }
    ~ReaderLock() MC_RELEASE() { mu_.unlock_shared(); }
    ReaderLock(const ReaderLock&) = delete;
    ReaderLock& operator=(const ReaderLock&) = delete;

private:
    SharedMutex& mu_;
};

// A condition variable over Mutex. The caller holds `mu` (a MutexLock in scope); waiting
// releases and re-acquires it, as std::condition_variable does. No predicate overloads: the
// caller loops on its condition in its own body, where the analysis sees the lock held.
class CondVar {
public:
    void NotifyAll() { cv_.notify_all(); }
    // For hand-offs that must wake exactly one waiter (a follower taking over polling, a
    // worker for one queued job): waking all would be a thundering herd.
    void NotifyOne() { cv_.notify_one(); }
    void Wait(Mutex& mu) MC_REQUIRES(mu) { cv_.wait(mu); }
    // False once `deadline` has passed.
    template <typename Clock, typename Duration>
    bool WaitUntil(Mutex& mu, const std::chrono::time_point<Clock, Duration>& deadline)
        MC_REQUIRES(mu) {
        return cv_.wait_until(mu, deadline) == std::cv_status::no_timeout;
    }

private:
    std::condition_variable_any cv_;
};

}  // namespace mooncake
