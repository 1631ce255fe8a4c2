// HostMemAllocator: the memory behind mooncake_tier.store.MooncakeHostMemAllocator, which
// SGLang's standalone-storage mode uses for its host KV pool (MooncakeHostTensorAllocator).
//
// Each allocation is its own anonymous shared-memory file (memfd_create) mapped MAP_SHARED,
// so another process that is handed the descriptor can map the same pages. mooncake-tier's
// store process does not map them yet: a store set up with setup_dummy moves the bytes over
// the data channel (docs/PYTHON.md, "Standalone storage").
//
// Process-wide, as Mooncake's ShmHelper is: dropping the Python allocator object unmaps
// nothing (tensors built on its pointers stay valid); only Free does.
//
// Thread-safety: every function may be called from many threads at once.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mooncake::py {

class HostMemAllocator {
public:
    // The address of `size` fresh zeroed bytes, page aligned; 0 when size is 0 or the memory
    // cannot be had (logged; the Python method raises RuntimeError then, as Mooncake's does).
    static uintptr_t Alloc(size_t size);
    // 0 when `address` is one Alloc returned and is now unmapped; -1 otherwise (logged).
    static int Free(uintptr_t address);
};

}  // namespace mooncake::py
