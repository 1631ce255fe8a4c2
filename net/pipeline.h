// One window of a pipelined batch on one data connection (net/data_protocol.h kFlagMore):
// every request in one vectored send, straight from the caller's pieces, then the answers in
// order. The TCP transport (tcp_transport.cc) cuts a batch into windows, takes connections
// from its pool and decides what is sent again; this file is the exchange itself.
//
// Why windows, and why these bounds: the client sends a whole window before it reads an
// answer, and the server answers as it reads. Nothing deadlocks as long as one side's unread
// bytes fit the socket buffers while the other side is blocked: a window's answers to writes
// (a header and at most a 4 KiB message each) and a window's read requests (a header and a
// key each) are kept under ~128 KiB, what loopback and LAN sockets buffer by default
// (tcp_rmem's default plus the sender's buffer). A read's large answers are read while no
// request of the window is still unsent, and a write's large requests are read by the server
// whatever it has not sent yet.
//
// Thread-safety: a function over one connection, used by one thread.
#pragma once

#include <span>
#include <string_view>

#include "core/base/status.h"
#include "net/data_transport.h"

namespace mooncake::net {

inline constexpr size_t kWindowOps = 32;
inline constexpr size_t kWindowRequestBytes = 64 * 1024;  // headers + keys, payloads aside

// The end of the window that starts at ops[first]: at most kWindowOps ops, and as many as
// keep their headers and keys within kWindowRequestBytes (at least one); one fewer when the
// batch's last op would otherwise be left for a window alone.
size_t WindowEnd(std::span<BatchOp* const> ops, size_t first);

struct WindowResult {
    size_t answered = 0;  // ops[0, answered) have their answer in op->status
    Status broken;        // not ok: the connection failed before ops[answered] was answered
    bool reusable = true; // the stream is in sync (every op answered and nothing left over)
};

// Sends the window's requests (after a hello with `token` when `greet`) and reads their
// answers. A refused hello answers every op with its refusal.
WindowResult RunWindow(int fd, bool greet, std::string_view token, std::span<BatchOp* const> ops);

}  // namespace mooncake::net
