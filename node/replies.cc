#include "node/replies.h"

#include <sys/uio.h>

#include <string_view>

#include "core/base/metrics.h"
#include "net/data_protocol.h"
#include "net/net.h"

namespace mooncake {

Status Replies::Send(const Status& status, std::span<const std::byte> payload,
                     std::optional<Tier> served_from) {
    data::ResponseHeader h;
    if (status.ok()) h.served_from = served_from;
    // Codes newer than the data channel's range (kNotLeader, from a master link) travel as
    // kUnavailable: the message still says what happened.
    h.status = status.code() > StatusCode::kInternal ? StatusCode::kUnavailable : status.code();
    std::string_view message = status.message();
    if (message.size() > data::kMaxMessageBytes) message = message.substr(0, data::kMaxMessageBytes);
    h.message_length = status.ok() ? 0 : static_cast<uint32_t>(message.size());
    h.length = status.ok() ? payload.size() : 0;
    const data::ResponseBytes header = data::SerializeResponse(h);
    const auto text = std::as_bytes(std::span(message.data(), h.message_length));
    const auto body = payload.first(static_cast<size_t>(h.length));
    const size_t size = header.size() + text.size() + body.size();
    if (body.size() <= kCopyBytes && held_.size() + size <= kMaxHeldBytes) {
        held_.insert(held_.end(), header.begin(), header.end());
        held_.insert(held_.end(), text.begin(), text.end());
        held_.insert(held_.end(), body.begin(), body.end());
        return hold_ ? Status::Ok() : Flush();
    }
    // Too large to copy (or to hold): out now, behind what is held, in one writev.
    iovec iov[4] = {{held_.data(), held_.size()},
                    {const_cast<std::byte*>(header.data()), header.size()},
                    {const_cast<std::byte*>(text.data()), text.size()},
                    {const_cast<std::byte*>(body.data()), body.size()}};
    writes_.Inc();  // before the send: a client that has its answers finds the write counted
    Status st = net::SendAll(fd_, iov);
    held_.clear();
    return st;
}

Status Replies::Flush() {
    if (held_.empty()) return Status::Ok();
    writes_.Inc();  // before the send, as above
    Status st = net::SendAll(fd_, held_.data(), held_.size());
    held_.clear();
    return st;
}

}  // namespace mooncake
