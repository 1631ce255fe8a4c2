// Status and Result<T>: errors as values. No exception crosses core's API.
//
// A Status is cheap to copy when ok (no message). Codes are stable: the Thrift layer maps
// each one to a declared IDL exception, the CLI maps them to exit codes.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace mooncake {

enum class StatusCode {
    kOk = 0,
    kNotFound,          // no such key (or no such replica / task)
    kAlreadyExists,     // key exists with a live incarnation
    kNoSpace,           // DRAM or disk cannot make room (nothing evictable now)
    kInvalidArgument,   // malformed key, size, knob value, ...
    kHasLease,          // refused while readers hold a lease
    kNotReady,          // object exists but is not COMPLETE yet, or work not finished
    kIllegalClient,     // caller is not the node/client the operation belongs to
    kStaleGeneration,   // names an older incarnation of the key
    kUnknownNode,       // node id not registered (or expired)
    kBusy,              // a bounded queue is full; retry later
    kIoError,           // device or network I/O failed
    kCorruption,        // checksum or format check failed
    kTimeout,           // a bounded wait ran out
    kUnavailable,       // peer unreachable
    kInternal,          // a bug: an invariant did not hold
    kNotLeader,         // this master is a standby (or lost its etcd lease): ask the leader
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
public:
    Status() = default;  // ok

    static Status Ok() { return Status(); }
    static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
    static Status AlreadyExists(std::string msg) {
        return {StatusCode::kAlreadyExists, std::move(msg)};
    }
    static Status NoSpace(std::string msg) { return {StatusCode::kNoSpace, std::move(msg)}; }
    static Status InvalidArgument(std::string msg) {
        return {StatusCode::kInvalidArgument, std::move(msg)};
    }
    static Status HasLease(std::string msg) { return {StatusCode::kHasLease, std::move(msg)}; }
    static Status NotReady(std::string msg) { return {StatusCode::kNotReady, std::move(msg)}; }
    static Status IllegalClient(std::string msg) {
        return {StatusCode::kIllegalClient, std::move(msg)};
    }
    static Status StaleGeneration(std::string msg) {
        return {StatusCode::kStaleGeneration, std::move(msg)};
    }
    static Status UnknownNode(std::string msg) {
        return {StatusCode::kUnknownNode, std::move(msg)};
    }
    static Status Busy(std::string msg) { return {StatusCode::kBusy, std::move(msg)}; }
    static Status IoError(std::string msg) { return {StatusCode::kIoError, std::move(msg)}; }
    static Status Corruption(std::string msg) { return {StatusCode::kCorruption, std::move(msg)}; }
    static Status Timeout(std::string msg) { return {StatusCode::kTimeout, std::move(msg)}; }
    static Status Unavailable(std::string msg) {
        return {StatusCode::kUnavailable, std::move(msg)};
    }
    static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }
    static Status NotLeader(std::string msg) { return {StatusCode::kNotLeader, std::move(msg)}; }

    Status(StatusCode code, std::string msg) : code_(code), message_(std::move(msg)) {}

    bool ok() const { return code_ == StatusCode::kOk; }
    StatusCode code() const { return code_; }
    const std::string& message() const { return message_; }
    bool Is(StatusCode code) const { return code_ == code; }

    // "NotFound: key 'abc' does not exist"; "OK" when ok.
    std::string ToString() const;

private:
    StatusCode code_ = StatusCode::kOk;
    std::string message_;
};

// A value or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] Result {
public:
    Result(T value) : data_(std::move(value)) {}  // NOLINT: implicit by design
    Result(Status status) : data_(std::move(status)) {  // NOLINT
        assert(!std::get<Status>(data_).ok() && "Result from an ok Status has no value");
    }

    bool ok() const { return std::holds_alternative<T>(data_); }
    const Status& status() const {
        static const Status kOk;
        return ok() ? kOk : std::get<Status>(data_);
    }
    T& value() & { return std::get<T>(data_); }
    const T& value() const& { return std::get<T>(data_); }
    T&& value() && { return std::get<T>(std::move(data_)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

private:
    std::variant<T, Status> data_;
};

#define MC_RETURN_IF_ERROR(expr)              \
    do {                                      \
        ::mooncake::Status _st = (expr);      \
        if (!_st.ok()) return _st;            \
    } while (0)

}  // namespace mooncake
