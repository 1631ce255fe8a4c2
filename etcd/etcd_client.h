// EtcdClient: the few etcd v3 calls master high availability needs, over etcd's JSON gateway
// (POST /v3/kv/range, /v3/kv/put, /v3/kv/txn, /v3/kv/deleterange, /v3/lease/grant,
// /v3/lease/keepalive, /v3/lease/revoke; keys and values travel base64), so no gRPC stack.
//
// Every call has a deadline (`timeout`, connect and read alike) and tries the endpoints in
// turn, starting with the last one that answered; an etcd that answers with an error is not
// retried elsewhere (the cluster said no). Errors are Status values: kUnavailable when no
// endpoint answered, kTimeout when one stopped answering mid-call, kNotFound for an expired
// lease, kInternal for an answer this client cannot read.
//
// Thread-safety: every method may be called from any thread (each call opens its own
// connection; the preferred endpoint is an atomic).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace mooncake::ha {

struct EtcdEndpoint {
    std::string host;
    uint16_t port = 0;
    std::string ToString() const { return host + ":" + std::to_string(port); }
};

struct EtcdKv {
    std::string key;
    std::string value;
    int64_t create_revision = 0;
    int64_t mod_revision = 0;
    int64_t lease = 0;
};

// One condition of a transaction: the key's create (or mod) revision equals `revision`
// (0 for create: the key does not exist).
struct EtcdCompare {
    enum class Target { kCreateRevision, kModRevision };
    std::string key;
    Target target = Target::kCreateRevision;
    int64_t revision = 0;
};

struct EtcdPut {
    std::string key;
    std::string value;
    int64_t lease = 0;  // 0: no lease
};

class EtcdClient {
public:
    // `endpoints`: "HOST:PORT[;HOST:PORT...]" (commas accepted too).
    static Result<std::unique_ptr<EtcdClient>> Create(
        std::string_view endpoints, std::chrono::milliseconds timeout = std::chrono::seconds(2));

    // The key (nullopt if absent), or every key under `prefix`.
    Result<std::optional<EtcdKv>> Get(std::string_view key);
    Result<std::vector<EtcdKv>> List(std::string_view prefix);
    Status Put(std::string_view key, std::string_view value, int64_t lease = 0);
    Status Delete(std::string_view key);
    // All `compares` hold -> `puts` are applied, true; otherwise nothing changes, false.
    Result<bool> Txn(const std::vector<EtcdCompare>& compares, const std::vector<EtcdPut>& puts);

    Result<int64_t> GrantLease(int64_t ttl_seconds);  // the lease id
    // Renews `lease`; returns its TTL in seconds. kNotFound if it already expired.
    Result<int64_t> KeepAlive(int64_t lease);
    Status Revoke(int64_t lease);

    const std::string& endpoints_text() const { return text_; }

private:
    EtcdClient(std::vector<EtcdEndpoint> endpoints, std::string text,
               std::chrono::milliseconds timeout)
        : endpoints_(std::move(endpoints)), text_(std::move(text)), timeout_(timeout) {}
    // POSTs `body` (JSON) to `path`, endpoint after endpoint; the parsed-later reply body.
    Result<std::string> Post(const std::string& path, const std::string& body);

    const std::vector<EtcdEndpoint> endpoints_;
    const std::string text_;
    const std::chrono::milliseconds timeout_;
    std::atomic<size_t> preferred_{0};
};

// "HOST:PORT;HOST:PORT" -> endpoints; InvalidArgument naming the bad one.
Result<std::vector<EtcdEndpoint>> ParseEndpoints(std::string_view text);

}  // namespace mooncake::ha
