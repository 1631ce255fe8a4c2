#include "python/src/host_mem_allocator.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "core/base/mutex.h"
#include "python/src/shared_pool_transport.h"
#include "spdlog/spdlog.h"

namespace mooncake::py {
namespace {

struct Mapping {
    int fd = -1;
    size_t size = 0;  // the mapped length (size rounded up to pages)
};

Mutex& Mu() {
    static Mutex mu;
    return mu;
}

// start -> mapping. Never destroyed: allocations outlive the interpreter's module teardown (a
// tensor may still point into one).
std::map<uintptr_t, Mapping>& Mappings() MC_REQUIRES(Mu()) {
    static auto* m = new std::map<uintptr_t, Mapping>;
    return *m;
}

}  // namespace

uintptr_t HostMemAllocator::Alloc(size_t size) {
    if (size == 0) {
        spdlog::error("MooncakeHostMemAllocator.alloc: size 0");
        return 0;
    }
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    if (size > SIZE_MAX - page) {
        spdlog::error("MooncakeHostMemAllocator.alloc: size {} too large", size);
        return 0;
    }
    const size_t length = (size + page - 1) / page * page;
    int fd = memfd_create("mooncake-tier-host-pool", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        spdlog::error("MooncakeHostMemAllocator.alloc: memfd_create: {}", std::strerror(errno));
        return 0;
    }
    if (ftruncate(fd, static_cast<off_t>(length)) != 0) {
        spdlog::error("MooncakeHostMemAllocator.alloc: {} bytes: {}", length, std::strerror(errno));
        close(fd);
        return 0;
    }
    // Fixed size from here on: a process we hand it to maps it whole and must never find it
    // shorter (node/shm_server.h refuses a pool without F_SEAL_SHRINK).
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        spdlog::error("MooncakeHostMemAllocator.alloc: sealing: {}", std::strerror(errno));
        close(fd);
        return 0;
    }
    void* p = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        spdlog::error("MooncakeHostMemAllocator.alloc: mmap {} bytes: {}", length,
                      std::strerror(errno));
        close(fd);
        return 0;
    }
    const auto address = reinterpret_cast<uintptr_t>(p);
    MutexLock lock(Mu());
    Mappings()[address] = Mapping{fd, length};
    return address;
}

std::optional<HostMemAllocator::Allocation> HostMemAllocator::Find(uintptr_t address) {
    MutexLock lock(Mu());
    auto it = Mappings().upper_bound(address);
    if (it == Mappings().begin()) return std::nullopt;
    --it;
    if (address - it->first >= it->second.size) return std::nullopt;
    return Allocation{it->first, it->second.size, it->second.fd};
}

int HostMemAllocator::Free(uintptr_t address) {
    Mapping m;
    {
        MutexLock lock(Mu());
        auto it = Mappings().find(address);
        if (it == Mappings().end()) {
            spdlog::error("MooncakeHostMemAllocator.free: {:#x} is no allocation of it", address);
            return -1;
        }
        m = it->second;
        Mappings().erase(it);
    }
    // Stores that handed this pool to a daemon stop using it there (the daemon unmaps it).
    ForgetSharedPool(address);
    int rc = munmap(reinterpret_cast<void*>(address), m.size);
    close(m.fd);
    if (rc != 0) {
        spdlog::error("MooncakeHostMemAllocator.free: munmap: {}", std::strerror(errno));
        return -1;
    }
    return 0;
}

}  // namespace mooncake::py
