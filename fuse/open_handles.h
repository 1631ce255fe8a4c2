// The per-open state the kernel holds between an open and its release (fuse_file_info::fh).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "core/base/mutex.h"

namespace mooncake::tierfs {

// Owns every handle handed to the kernel. The kernel sends release and releasedir
// asynchronously, after close() has returned, so a session that ends on an unmount or a signal
// can stop before the last ones arrive: what is still open then is freed when this table is,
// not leaked.
class OpenHandles {
  public:
    OpenHandles() = default;
    OpenHandles(const OpenHandles&) = delete;
    OpenHandles& operator=(const OpenHandles&) = delete;
    ~OpenHandles() {
        for (auto& [handle, destroy] : owned_) destroy(handle);
    }

    // Takes `handle` and returns the value for fuse_file_info::fh.
    template <typename T>
    uint64_t Adopt(std::unique_ptr<T> handle) {
        T* raw = handle.release();
        MutexLock lock(mu_);
        owned_.emplace(raw, [](void* p) { delete static_cast<T*>(p); });
        return reinterpret_cast<uintptr_t>(raw);
    }

    // The handle behind fh (which Adopt<T> returned and Release has not ended).
    template <typename T>
    static T* Get(uint64_t fh) {
        return reinterpret_cast<T*>(static_cast<uintptr_t>(fh));
    }

    // Frees the handle behind fh; an fh this table does not own is ignored.
    void Release(uint64_t fh) {
        void* handle = reinterpret_cast<void*>(static_cast<uintptr_t>(fh));
        void (*destroy)(void*) = nullptr;
        {
            MutexLock lock(mu_);
            auto it = owned_.find(handle);
            if (it == owned_.end()) return;
            destroy = it->second;
            owned_.erase(it);
        }
        destroy(handle);
    }

    size_t size() const {
        MutexLock lock(mu_);
        return owned_.size();
    }

  private:
    mutable Mutex mu_;
    std::unordered_map<void*, void (*)(void*)> owned_ MC_GUARDED_BY(mu_);
};

}  // namespace mooncake::tierfs
