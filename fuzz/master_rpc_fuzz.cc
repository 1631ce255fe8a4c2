// The master's RPC handlers (daemon/master_service.cc) fed arbitrary Thrift bytes.
//
// Each input gets a fresh in-process master: MasterStore (ManualClock) + NodeDirectory +
// MasterService, wrapped in the generated MasterServiceProcessor. The input is read as a
// stream of strict TBinaryProtocol calls (what the server reads out of each frame) from a
// TMemoryBuffer; process() runs until the input is consumed or the protocol gives up (where
// the server would drop the connection). Between calls the clock moves 300 ms and the
// store's Tick() runs, so leases, node liveness, stale puts and task timeouts all happen.
//
// Properties: no crash, leak or undefined behaviour; every call gets a reply; and after the
// input the store's bookkeeping is consistent (MasterStore::CheckInvariants: DRAM used equals
// live allocations, pins equal task sources, the promotion and offload funnels balance).
//
// Real-time waits are turned off, since they would only make the fuzzer slow: the service is
// built with max_long_poll_ms = 0 and put_wait_for_offload_ms is held at 0.
#include <algorithm>
#include <cstdio>

#include "fuzz/master_world.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace mooncake;
    fuzz::MasterWorld world;
    auto in = std::make_shared<fuzz::TMemoryBuffer>(
        const_cast<uint8_t*>(data), static_cast<uint32_t>(size), fuzz::TMemoryBuffer::OBSERVE);
    auto out = std::make_shared<fuzz::TMemoryBuffer>();
    // The server's limits, except that a container cannot hold more items than there are
    // bytes left (each item takes at least one), which keeps the fuzzer fast.
    world.Run(in, out, std::min<int32_t>(rpc::kMaxContainerItems, static_cast<int32_t>(size) + 1));
    auto report = world.store().CheckInvariants();
    for (const std::string& v : report.violations) std::fprintf(stderr, "invariant: %s\n", v.c_str());
    FUZZ_CHECK(report.ok());
    return 0;
}
