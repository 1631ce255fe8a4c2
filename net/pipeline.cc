#include "net/pipeline.h"

#include <array>
#include <cstring>
#include <optional>
#include <vector>

#include "net/data_protocol.h"
#include "net/net.h"
#include "net/spill_reader.h"

namespace mooncake::net {
namespace {

// A spill this large takes many small answers in one readv; answers of at least
// kLargeAnswer are read with a spill that holds the next header and little more, so their
// payloads are not copied.
constexpr size_t kSmallSpill = 64 * 1024;
constexpr size_t kLargeSpill = 512;
constexpr uint64_t kLargeAnswer = 32 * 1024;

bool ByKey(const BatchOp& op) {
    return op.kind == BatchOp::Kind::kPutByKey || op.kind == BatchOp::Kind::kReadByKey;
}
bool Writes(const BatchOp& op) {
    return op.kind == BatchOp::Kind::kWrite || op.kind == BatchOp::Kind::kPutByKey;
}

data::RequestHeader HeaderOf(const BatchOp& op, bool more) {
    data::RequestHeader h;
    h.op = Writes(op) ? data::Op::kWrite : data::Op::kRead;
    h.key_length = static_cast<uint32_t>(op.key.size());
    h.flags = (ByKey(op) ? data::kFlagByKey : 0) | (more ? data::kFlagMore : 0);
    if (!ByKey(op)) {
        h.tier = op.kind == BatchOp::Kind::kRead ? op.tier : Tier::kMemory;
        h.generation = op.generation;
        h.offset = op.offset;
    }
    h.length = Writes(op) ? PiecesSize(op.send) : PiecesSize(op.receive);
    return h;
}

struct Answer {
    Status transport;  // not ok: no (complete) answer; the stream is lost
    Status server;
};

// One answer: header, message, and for an OK read its payload straight into op.receive.
Answer ReadAnswer(SpillReader& in, BatchOp& op) {
    data::ResponseBytes raw;
    if (Status st = in.Read(raw.data(), raw.size()); !st.ok()) return {st, {}};
    auto h = data::ParseResponse(raw);
    if (!h.ok()) return {Status::IoError("data channel: " + h.status().message()), {}};
    std::string message(h->message_length, '\0');
    if (Status st = in.Read(message.data(), message.size()); !st.ok()) {
        return {st.Is(StatusCode::kUnavailable)
                    ? Status::IoError("peer closed the connection mid-message")
                    : st,
                {}};
    }
    if (h->status != StatusCode::kOk) return {Status::Ok(), Status(h->status, message)};
    const bool reads = !Writes(op);
    uint64_t expected = reads ? PiecesSize(op.receive) : 0;
    if (op.kind == BatchOp::Kind::kReadByKey) {
        if (!h->served_from) {
            return {Status::IoError("data channel: a by-key answer names no tier"), {}};
        }
        op.served_from = *h->served_from;
        if (h->length <= expected) expected = h->length;  // a value up to the buffer's size
        op.size = expected;
    }
    if (h->length != expected) {
        return {Status::IoError("data channel: response of " + std::to_string(h->length) +
                                " bytes, expected " + std::to_string(expected)),
                {}};
    }
    if (expected > 0) {
        std::vector<iovec> iov;
        AppendIovecs(op.receive, 0, expected, iov);
        if (Status st = in.Read(iov); !st.ok()) {
            return {st.Is(StatusCode::kUnavailable)
                        ? Status::IoError("peer closed the connection mid-message")
                        : st,
                    {}};
        }
    }
    return {Status::Ok(), Status::Ok()};
}

}  // namespace

size_t WindowEnd(std::span<BatchOp* const> ops, size_t first) {
    size_t bytes = 0;
    size_t end = first;
    while (end < ops.size() && end - first < kWindowOps) {
        const size_t request = data::kRequestHeaderSize + ops[end]->key.size() +
                               data::kClientIdBytes;
        if (end > first && bytes + request > kWindowRequestBytes) break;
        bytes += request;
        ++end;
    }
    // The batch's last op never goes alone in a window of its own: beside at least one other
    // value the server can tell a smaller last value (a request's partial tail) from the
    // others (node/data_server.h Window, core/master/put_hint.h BatchShape).
    if (end + 1 == ops.size() && end - first > 1) --end;
    return end;
}

WindowResult RunWindow(int fd, bool greet, std::string_view token,
                       std::span<BatchOp* const> ops) {
    data::RequestHeader hello;
    hello.op = data::Op::kHello;
    hello.length = token.size();
    const data::RequestBytes hello_bytes = data::SerializeRequest(hello);
    // Storage the iovecs point into, sized up front (never reallocated).
    std::vector<data::RequestBytes> headers(ops.size());
    std::vector<std::array<std::byte, data::kClientIdBytes>> ids(ops.size());
    std::vector<iovec> iov;
    iov.reserve(2 + ops.size() * 4);
    if (greet) {
        iov.push_back({const_cast<std::byte*>(hello_bytes.data()), hello_bytes.size()});
        iov.push_back({const_cast<char*>(token.data()), token.size()});
    }
    uint64_t largest = 0;
    for (size_t i = 0; i < ops.size(); ++i) {
        BatchOp& op = *ops[i];
        // Every request but the window's last says another follows: the server may hold its
        // answer and send the window's answers together.
        const data::RequestHeader h = HeaderOf(op, /*more=*/i + 1 < ops.size());
        headers[i] = data::SerializeRequest(h);
        iov.push_back({headers[i].data(), headers[i].size()});
        iov.push_back({const_cast<char*>(op.key.data()), op.key.size()});
        if (op.kind == BatchOp::Kind::kPutByKey) {
            for (size_t b = 0; b < ids[i].size(); ++b) {
                ids[i][b] = static_cast<std::byte>((op.client >> (8 * b)) & 0xFF);
            }
            iov.push_back({ids[i].data(), ids[i].size()});
            op.sent = true;  // from here on the put may happen
        }
        if (Writes(op)) AppendIovecs(op.send, 0, UINT64_MAX, iov);
        if (!Writes(op)) largest = std::max<uint64_t>(largest, PiecesSize(op.receive));
    }
    const Status sent = SendAll(fd, iov);
    SpillReader in(fd, largest >= kLargeAnswer ? kLargeSpill : kSmallSpill);
    WindowResult result;
    if (greet) {
        // A refused hello closes the connection: its refusal is every op's answer.
        BatchOp none;
        none.kind = BatchOp::Kind::kWrite;
        Answer a = ReadAnswer(in, none);
        if (!a.transport.ok()) return {0, sent.ok() ? a.transport : sent, false};
        if (!a.server.ok()) {
            for (BatchOp* op : ops) op->status = a.server;
            return {ops.size(), Status::Ok(), false};
        }
    }
    // Even after a failed send the answers the server gave (to the requests it got, or a
    // refusal it sent before closing) are read: each op answered keeps its answer.
    for (; result.answered < ops.size(); ++result.answered) {
        BatchOp& op = *ops[result.answered];
        Answer a = ReadAnswer(in, op);
        if (!a.transport.ok()) {
            result.broken = sent.ok() ? a.transport : sent;
            result.reusable = false;
            return result;
        }
        op.status = a.server;
    }
    result.reusable = sent.ok();
    if (!sent.ok()) result.broken = sent;
    return result;
}

}  // namespace mooncake::net
