// The in-process master that master_rpc_fuzz drives, shared with the seed generator so
// seeds replay exactly (same epoch, same clock steps, same ids and generations).
#pragma once

#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/transport/TBufferTransports.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "MasterService.h"
#include "core/base/clock.h"
#include "core/base/knobs.h"
#include "core/master/master_store.h"
#include "core/base/metrics.h"
#include "daemon/master_service.h"
#include "daemon/node_directory.h"
#include "node/rpc_server.h"
#include "fuzz/fuzz_check.h"
#include "spdlog/spdlog.h"
#include "thrift/rpc_limits.h"

namespace mooncake::fuzz {

using apache::thrift::TException;
using apache::thrift::protocol::TBinaryProtocolT;
using apache::thrift::transport::TMemoryBuffer;
using Protocol = TBinaryProtocolT<TMemoryBuffer>;

inline void Pin(mooncake::Config& config) {
    FUZZ_CHECK(config.Set("put_wait_for_offload_ms", "0").ok());
    spdlog::set_level(spdlog::level::off);
}

// One connection to a fresh master.
class MasterWorld {
public:
    static MasterServiceOptions ServiceOptions() {
        MasterServiceOptions options;
        options.role = "standalone";
        options.epoch = 7;
        options.max_long_poll_ms = 0;  // a real-time wait only slows the fuzzer
        return options;
    }

    MasterWorld()
        : store_(config_, clock_, metrics_, /*epoch=*/7),
          directory_(store_),
          service_(std::make_shared<MasterService>(
              ServiceOptions(), store_, directory_)),
          processor_(service_) {
        Pin(config_);
        CurrentRpcSession() = RpcSession{};  // a new connection
    }

    // Runs every call in `in`; replies go to `out` (cleared before each call). Stops where the
    // server would drop the connection. Returns the number of calls answered.
    int Run(const std::shared_ptr<TMemoryBuffer>& in, const std::shared_ptr<TMemoryBuffer>& out,
            int32_t container_limit, int max_calls = 64) {
        auto in_proto = std::make_shared<Protocol>(in, rpc::kMaxStringBytes, container_limit,
                                                   /*strict_read=*/true, /*strict_write=*/true);
        auto out_proto = std::make_shared<Protocol>(out, rpc::kMaxStringBytes, container_limit,
                                                    true, true);
        int calls = 0;
        while (calls < max_calls && in->available_read() > 0) {
            const uint32_t before = in->available_read();
            out->resetBuffer();
            try {
                if (!processor_.process(in_proto, out_proto, nullptr)) break;
            } catch (const TException&) {
                break;  // the server drops the connection
            }
            ++calls;
            FUZZ_CHECK(out->available_read() > 0);  // no oneway methods: every call is answered
            if (in->available_read() >= before) break;
            clock_.Advance(std::chrono::milliseconds(300));
            Pin(config_);
            store_.Tick();
        }
        return calls;
    }

    MasterStore& store() { return store_; }

private:
    Config config_;
    ManualClock clock_;
    MetricsRegistry metrics_;
    MasterStore store_;
    NodeDirectory directory_;
    std::shared_ptr<MasterService> service_;
    rpc::MasterServiceProcessor processor_;
};

}  // namespace mooncake::fuzz

