// HostMemAllocator: the memory behind mooncake_tier.store.MooncakeHostMemAllocator, which
// SGLang's standalone-storage mode uses for its host KV pool (MooncakeHostTensorAllocator).
//
// Each allocation is its own anonymous shared-memory file (memfd_create) mapped MAP_SHARED,
// so another process that is handed the descriptor can map the same pages: a store set up
// with setup_dummy hands a registered pool to the local mooncaked, which copies object bytes
// in and out of it itself (python/src/shared_pool_transport.h, docs/PYTHON.md "Standalone
// storage"). The file is sealed against resizing, so the daemon's mapping can never run past
// its end (a shrunk file would fault the daemon's copy).
//
// Process-wide, as Mooncake's ShmHelper is: dropping the Python allocator object unmaps
// nothing (tensors built on its pointers stay valid); only Free does.
//
// Thread-safety: every function may be called from many threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace mooncake::py {

class HostMemAllocator {
public:
    // The address of `size` fresh zeroed bytes, page aligned; 0 when size is 0 or the memory
    // cannot be had (logged; the Python method raises RuntimeError then, as Mooncake's does).
    static uintptr_t Alloc(size_t size);
    // 0 when `address` is one Alloc returned and is now unmapped; -1 otherwise (logged).
    static int Free(uintptr_t address);

    // The allocation holding the byte at `address`, if any: its start, mapped length and
    // memfd (owned by the allocator; dup it to keep it).
    struct Allocation {
        uintptr_t base = 0;
        size_t length = 0;
        int fd = -1;
    };
    static std::optional<Allocation> Find(uintptr_t address);
};

}  // namespace mooncake::py
