// Mooncake's ErrorCode numbers (its mooncake-store/include/types.h), which callers of
// MooncakeDistributedStore compare return values against, and the one mapping from our Status.
#pragma once

#include <cstdint>

#include "core/base/status.h"

namespace mooncake::py {

enum MooncakeError : int32_t {
    kOK = 0,
    kInternalError = -1,
    kBufferOverflow = -10,
    kClientNotFound = -103,
    kNoAvailableHandle = -200,
    kInvalidVersion = -300,
    kInvalidKey = -400,
    kInvalidParams = -600,
    kIllegalClient = -601,
    kInvalidRead = -701,
    kReplicaIsNotReady = -703,
    kObjectNotFound = -704,
    kObjectAlreadyExists = -705,
    kObjectHasLease = -706,
    kTransferFail = -800,
    kRpcFail = -900,
    kUnavailableInCurrentStatus = -1010,
};

// 0 for ok, else the Mooncake number a caller of Mooncake's class would have seen.
int32_t ToMooncakeError(const Status& status);

}  // namespace mooncake::py
