// Size limits of the control wire, shared by server and client so both refuse the same frames.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mooncake::rpc {

// Largest Thrift frame either side accepts. Object bytes never travel in a frame, so this only
// has to fit the largest control reply: a List page of 1000 objects with 4 KiB keys, a batch.
inline constexpr int32_t kMaxFrameBytes = 16 * 1024 * 1024;
// Largest string or binary field and container inside a frame.
inline constexpr int32_t kMaxStringBytes = 8 * 1024 * 1024;
inline constexpr int32_t kMaxContainerItems = 1 << 20;
// Keys in one batch call; more is refused with INVALID_ARGUMENT.
inline constexpr size_t kMaxBatchKeys = 10000;
// Longest wait a node may ask of a long-poll.
inline constexpr int32_t kMaxLongPollMs = 60000;

}  // namespace mooncake::rpc
