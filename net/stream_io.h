// Moving a value of any length between a socket and a ByteSource/ByteSink without holding it
// whole: sendfile (regular file -> socket), splice (pipe -> socket; socket -> pipe -> file,
// device or pipe), else a copy through one kChunkBytes buffer. Memory use is bounded by that
// buffer (or a pipe of that size), whatever `length` is.
//
// The socket's SO_SNDTIMEO/SO_RCVTIMEO bound each kernel call, as for SendAll/RecvAll.
// Errors: a socket that closes mid-value -> kIoError "peer closed the connection mid-message";
// a timeout -> kTimeout; a source that ends before `length` bytes -> kIoError naming how many
// it gave. Thread-safe (no state).
#pragma once

#include <cstdint>

#include "core/base/status.h"
#include "net/byte_stream.h"

namespace mooncake::net {

// Sends exactly `length` bytes of `source` to `sock`. On failure `*source_failed` (if given)
// tells whether the source failed or ended early (rather than the socket).
Status SendStream(int sock, ByteSource& source, uint64_t length, bool* source_failed = nullptr);
// Receives exactly `length` bytes from `sock` into `sink`.
Status RecvStream(int sock, ByteSink& sink, uint64_t length);

}  // namespace mooncake::net
