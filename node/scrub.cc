#include "node/scrub.h"

#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TSocket.h>

#include <climits>
#include <memory>

#include "NodeService.h"
#include "core/disk/disk_store.h"
#include "mooncake_constants.h"
#include "spdlog/spdlog.h"
#include "thrift/convert.h"
#include "net/net.h"

namespace mooncake {

rpc::ScrubReply ScrubDisk(DiskStore* disk, const std::string& node_name) {
    rpc::ScrubReply out;
    out.node = node_name;
    if (disk == nullptr) {
        out.__set_error("this node has no LOCAL_DISK tier");
        return out;
    }
    spdlog::info("scrub of {} records started", disk->object_count());
    ScrubReport report = disk->Scrub();
    out.checked = static_cast<int64_t>(report.checked);
    out.checked_bytes = static_cast<int64_t>(report.checked_bytes);
    out.io_errors = static_cast<int64_t>(report.io_errors);
    for (const DiskObjectInfo& bad : report.corrupt) {
        rpc::KeyGeneration kg;
        kg.key = bad.key;
        kg.generation = static_cast<int64_t>(bad.generation);
        out.corrupt.push_back(std::move(kg));
    }
    spdlog::info("scrub done: {} records ({} bytes) read, {} corrupt, {} unreadable",
                 report.checked, report.checked_bytes, report.corrupt.size(), report.io_errors);
    return out;
}

rpc::ScrubReply ScrubRemoteNode(const std::string& address, const std::string& auth_token,
                                std::chrono::milliseconds connect_timeout,
                                std::chrono::milliseconds call_timeout) {
    using apache::thrift::protocol::TBinaryProtocol;
    using apache::thrift::transport::TFramedTransport;
    using apache::thrift::transport::TSocket;
    rpc::ScrubReply out;
    out.node = address;
    auto hp = net::ParseHostPort(address);
    if (!hp.ok()) {
        out.__set_error(hp.status().message());
        return out;
    }
    auto clamp = [](std::chrono::milliseconds d) {
        return static_cast<int>(std::min<int64_t>(d.count(), INT_MAX));
    };
    try {
        auto socket = std::make_shared<TSocket>(hp->host, hp->port);
        socket->setConnTimeout(clamp(connect_timeout));
        socket->setRecvTimeout(clamp(connect_timeout));
        auto transport = std::make_shared<TFramedTransport>(socket);
        rpc::NodeServiceClient client(std::make_shared<TBinaryProtocol>(transport));
        transport->open();
        rpc::HelloReply hello;
        client.Hello(hello, rpc::g_mooncake_constants.PROTOCOL_VERSION, auth_token, "master");
        socket->setRecvTimeout(clamp(call_timeout));
        client.Scrub(out);
        out.node = address;
    } catch (const rpc::StoreError& e) {
        out.__set_error(rpc::FromStoreError(e).message());
    } catch (const std::exception& e) {
        out.__set_error(std::string("cannot reach the node: ") + e.what());
    }
    return out;
}

}  // namespace mooncake
