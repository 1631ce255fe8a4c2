#include "core/base/status.h"

namespace mooncake {

std::string_view StatusCodeName(StatusCode code) {
    switch (code) {
        case StatusCode::kOk: return "OK";
        case StatusCode::kNotFound: return "NotFound";
        case StatusCode::kAlreadyExists: return "AlreadyExists";
        case StatusCode::kNoSpace: return "NoSpace";
        case StatusCode::kInvalidArgument: return "InvalidArgument";
        case StatusCode::kHasLease: return "HasLease";
        case StatusCode::kNotReady: return "NotReady";
        case StatusCode::kIllegalClient: return "IllegalClient";
        case StatusCode::kStaleGeneration: return "StaleGeneration";
        case StatusCode::kUnknownNode: return "UnknownNode";
        case StatusCode::kBusy: return "Busy";
        case StatusCode::kIoError: return "IoError";
        case StatusCode::kCorruption: return "Corruption";
        case StatusCode::kTimeout: return "Timeout";
        case StatusCode::kUnavailable: return "Unavailable";
        case StatusCode::kInternal: return "Internal";
        case StatusCode::kNotLeader: return "NotLeader";
    }
    return "Unknown";
}

std::string Status::ToString() const {
    if (ok()) return "OK";
    std::string out(StatusCodeName(code_));
    if (!message_.empty()) {
        out += ": ";
        out += message_;
    }
    return out;
}

}  // namespace mooncake
