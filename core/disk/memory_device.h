// MemoryDevice: an in-memory Device for tests, with fault injection.
//
// The bytes live in a shared state, so a test can keep a handle (OpenHandle()) while a store
// owns another, inject faults through it, drop the store (a "crash": nothing is shut down
// cleanly) and open a new store on the same bytes.
//
// Faults:
//   - a hook consulted before every request: fail it (EIO), tear it (only a prefix reaches the
//     bytes, then it fails, as a crash in the middle of a write), or drop it silently; the hook
//     may also block, which is how tests hold an I/O "in flight" without sleeping;
//   - FlipBit() for media corruption;
//   - LoseUnflushedWrites() for a power loss: every block written since the last Flush()
//     goes back to what it held at that Flush().
//
// Thread-safety: all methods may be called concurrently. The hook runs outside the device's
// lock, on the thread doing the I/O.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "core/disk/device.h"
#include "core/base/mutex.h"

namespace mooncake {

class MemoryDevice final : public Device {
  public:
    enum class Op { kRead, kWrite };
    struct Fault {
        enum Kind { kNone, kIoError, kTorn, kDropSilently } kind = kNone;
        uint64_t torn_bytes = 0;  // kTorn: bytes of the request that reach the device
    };
    using FaultHook = std::function<Fault(Op, const IoRequest&)>;

    explicit MemoryDevice(uint64_t size);

    // Another handle on the same bytes and fault settings.
    std::unique_ptr<MemoryDevice> OpenHandle() const;

    uint64_t size() const override;
    Status ReadV(std::span<IoRequest> reqs) override;
    Status WriteV(std::span<IoRequest> reqs) override;
    Status Flush() override;

    void SetFaultHook(FaultHook hook);  // empty: no faults
    void FlipBit(uint64_t offset, int bit);
    void LoseUnflushedWrites();

    // Direct access for tests (no faults, no alignment rules).
    void Peek(uint64_t offset, std::span<std::byte> out) const;
    void Poke(uint64_t offset, std::span<const std::byte> data);

    uint64_t reads() const;
    uint64_t writes() const;
    uint64_t flushes() const;

  private:
    struct State {
        mutable SharedMutex mu;
        std::vector<std::byte> bytes MC_GUARDED_BY(mu);
        // block -> at last Flush
        std::unordered_map<uint64_t, std::vector<std::byte>> preimages MC_GUARDED_BY(mu);
        Mutex hook_mu;
        FaultHook hook MC_GUARDED_BY(hook_mu);
        std::atomic<uint64_t> reads{0}, writes{0}, flushes{0};
    };
    explicit MemoryDevice(std::shared_ptr<State> state) : state_(std::move(state)) {}
    Fault Consult(Op op, const IoRequest& req);

    std::shared_ptr<State> state_;
};

}  // namespace mooncake
