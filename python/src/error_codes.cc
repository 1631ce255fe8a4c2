#include "python/src/error_codes.h"

namespace mooncake::py {

int32_t ToMooncakeError(const Status& status) {
    switch (status.code()) {
        case StatusCode::kOk: return kOK;
        case StatusCode::kNotFound: return kObjectNotFound;
        case StatusCode::kAlreadyExists: return kObjectAlreadyExists;
        case StatusCode::kNoSpace: return kNoAvailableHandle;
        case StatusCode::kInvalidArgument: return kInvalidParams;
        case StatusCode::kHasLease: return kObjectHasLease;
        case StatusCode::kNotReady: return kReplicaIsNotReady;
        case StatusCode::kIllegalClient: return kIllegalClient;
        case StatusCode::kStaleGeneration: return kInvalidVersion;
        case StatusCode::kUnknownNode: return kClientNotFound;
        case StatusCode::kBusy: return kUnavailableInCurrentStatus;
        case StatusCode::kIoError: return kTransferFail;
        case StatusCode::kCorruption: return kInvalidRead;
        case StatusCode::kTimeout:
        case StatusCode::kNotLeader:  // no leader answered within the call: as unreachable
        case StatusCode::kUnavailable: return kRpcFail;
        case StatusCode::kInternal: return kInternalError;
    }
    return kInternalError;
}

}  // namespace mooncake::py
