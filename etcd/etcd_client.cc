#include "etcd/etcd_client.h"

#include <httplib.h>

#include <cstring>

#include <nlohmann/json.hpp>

namespace mooncake::ha {
namespace {

using nlohmann::json;

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string B64(std::string_view in) {
    std::string out;
    out.reserve((in.size() + 2) / 3 * 4);
    size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
        for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
    }
    if (i < in.size()) {
        uint32_t v = uint8_t(in[i]) << 16;
        if (i + 1 < in.size()) v |= uint8_t(in[i + 1]) << 8;
        out += kAlphabet[(v >> 18) & 63];
        out += kAlphabet[(v >> 12) & 63];
        out += i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

Result<std::string> Unb64(std::string_view in) {
    std::string out;
    uint32_t acc = 0;
    int bits = 0;
    for (char c : in) {
        if (c == '=') break;
        const char* p = std::strchr(kAlphabet, c);
        if (p == nullptr || c == '\0') return Status::Internal("etcd sent invalid base64");
        acc = (acc << 6) | static_cast<uint32_t>(p - kAlphabet);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += static_cast<char>((acc >> bits) & 0xFF);
        }
    }
    return out;
}

// etcd's gateway writes int64 fields as JSON strings (and omits zero values).
int64_t Int(const json& j, const char* field) {
    auto it = j.find(field);
    if (it == j.end()) return 0;
    if (it->is_string()) return std::stoll(it->get<std::string>());
    if (it->is_number()) return it->get<int64_t>();
    return 0;
}

// The smallest key greater than every key starting with `prefix` (etcd's range_end).
std::string PrefixEnd(std::string prefix) {
    while (!prefix.empty()) {
        if (static_cast<uint8_t>(prefix.back()) < 0xFF) {
            prefix.back() = static_cast<char>(static_cast<uint8_t>(prefix.back()) + 1);
            return prefix;
        }
        prefix.pop_back();
    }
    return std::string(1, '\0');
}

Result<json> Parse(const std::string& body) {
    json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
        return Status::Internal("etcd sent a reply that is not JSON: " + body.substr(0, 120));
    }
    return j;
}

Result<std::vector<EtcdKv>> ReadKvs(const json& reply) {
    std::vector<EtcdKv> out;
    auto kvs = reply.find("kvs");
    if (kvs == reply.end()) return out;
    for (const json& kv : *kvs) {
        EtcdKv e;
        auto key = Unb64(kv.value("key", ""));
        if (!key.ok()) return key.status();
        auto value = Unb64(kv.value("value", ""));
        if (!value.ok()) return value.status();
        e.key = std::move(*key);
        e.value = std::move(*value);
        e.create_revision = Int(kv, "create_revision");
        e.mod_revision = Int(kv, "mod_revision");
        e.lease = Int(kv, "lease");
        out.push_back(std::move(e));
    }
    return out;
}

}  // namespace

Result<std::vector<EtcdEndpoint>> ParseEndpoints(std::string_view text) {
    std::vector<EtcdEndpoint> out;
    size_t start = 0;
    while (start <= text.size()) {
        size_t end = text.find_first_of(";,", start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view one = text.substr(start, end - start);
        if (one.starts_with("http://")) one.remove_prefix(7);
        if (!one.empty()) {
            size_t colon = one.rfind(':');
            int port = 0;
            if (colon != std::string_view::npos && colon > 0) {
                std::string digits(one.substr(colon + 1));
                port = digits.empty() || digits.find_first_not_of("0123456789") !=
                                             std::string::npos || digits.size() > 5
                           ? 0
                           : std::stoi(digits);
            }
            if (port <= 0 || port > 65535) {
                return Status::InvalidArgument("etcd endpoint '" + std::string(one) +
                                               "' is not HOST:PORT");
            }
            std::string host(one.substr(0, colon));
            if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
                host = host.substr(1, host.size() - 2);
            }
            out.push_back({host, static_cast<uint16_t>(port)});
        }
        start = end + 1;
    }
    if (out.empty()) return Status::InvalidArgument("no etcd endpoint given (HOST:PORT[;...])");
    return out;
}

Result<std::unique_ptr<EtcdClient>> EtcdClient::Create(std::string_view endpoints,
                                                       std::chrono::milliseconds timeout) {
    auto parsed = ParseEndpoints(endpoints);
    if (!parsed.ok()) return parsed.status();
    return std::unique_ptr<EtcdClient>(
        new EtcdClient(std::move(*parsed), std::string(endpoints), timeout));
}

Result<std::string> EtcdClient::Post(const std::string& path, const std::string& body) {
    const size_t n = endpoints_.size();
    const size_t first = preferred_.load(std::memory_order_relaxed);
    std::string failures;
    bool timed_out = false;
    for (size_t k = 0; k < n; ++k) {
        const size_t i = (first + k) % n;
        const EtcdEndpoint& ep = endpoints_[i];
        httplib::Client http(ep.host, ep.port);
        auto secs = std::chrono::duration_cast<std::chrono::seconds>(timeout_);
        auto usecs = std::chrono::duration_cast<std::chrono::microseconds>(timeout_ - secs);
        http.set_connection_timeout(secs.count(), usecs.count());
        http.set_read_timeout(secs.count(), usecs.count());
        http.set_write_timeout(secs.count(), usecs.count());
        http.set_keep_alive(false);
        auto res = http.Post(path, body, "application/json");
        if (!res) {
            timed_out |= res.error() == httplib::Error::Read;
            failures += (failures.empty() ? "" : "; ") + ep.ToString() + ": " +
                        httplib::to_string(res.error());
            continue;
        }
        preferred_.store(i, std::memory_order_relaxed);
        if (res->status != 200) {
            return Status::Unavailable("etcd " + ep.ToString() + " " + path + ": HTTP " +
                                       std::to_string(res->status) + " " +
                                       res->body.substr(0, 200));
        }
        return res->body;
    }
    std::string msg = "etcd " + text_ + " unreachable (" + failures + ")";
    return timed_out ? Status::Timeout(msg) : Status::Unavailable(msg);
}

Result<std::optional<EtcdKv>> EtcdClient::Get(std::string_view key) {
    json req = {{"key", B64(key)}};
    auto body = Post("/v3/kv/range", req.dump());
    if (!body.ok()) return body.status();
    auto reply = Parse(*body);
    if (!reply.ok()) return reply.status();
    auto kvs = ReadKvs(*reply);
    if (!kvs.ok()) return kvs.status();
    if (kvs->empty()) return std::optional<EtcdKv>();
    return std::optional<EtcdKv>(std::move(kvs->front()));
}

Result<std::vector<EtcdKv>> EtcdClient::List(std::string_view prefix) {
    json req = {{"key", B64(prefix)}, {"range_end", B64(PrefixEnd(std::string(prefix)))}};
    auto body = Post("/v3/kv/range", req.dump());
    if (!body.ok()) return body.status();
    auto reply = Parse(*body);
    if (!reply.ok()) return reply.status();
    return ReadKvs(*reply);
}

Status EtcdClient::Put(std::string_view key, std::string_view value, int64_t lease) {
    json req = {{"key", B64(key)}, {"value", B64(value)}};
    if (lease != 0) req["lease"] = std::to_string(lease);
    auto body = Post("/v3/kv/put", req.dump());
    return body.status();
}

Status EtcdClient::Delete(std::string_view key) {
    json req = {{"key", B64(key)}};
    return Post("/v3/kv/deleterange", req.dump()).status();
}

Result<bool> EtcdClient::Txn(const std::vector<EtcdCompare>& compares,
                             const std::vector<EtcdPut>& puts) {
    json compare = json::array();
    for (const EtcdCompare& c : compares) {
        bool create = c.target == EtcdCompare::Target::kCreateRevision;
        compare.push_back({{"target", create ? "CREATE" : "MOD"},
                           {"result", "EQUAL"},
                           {"key", B64(c.key)},
                           {create ? "create_revision" : "mod_revision",
                            std::to_string(c.revision)}});
    }
    json success = json::array();
    for (const EtcdPut& p : puts) {
        json put = {{"key", B64(p.key)}, {"value", B64(p.value)}};
        if (p.lease != 0) put["lease"] = std::to_string(p.lease);
        success.push_back({{"request_put", put}});
    }
    json req = {{"compare", compare}, {"success", success}};
    auto body = Post("/v3/kv/txn", req.dump());
    if (!body.ok()) return body.status();
    auto reply = Parse(*body);
    if (!reply.ok()) return reply.status();
    return reply->value("succeeded", false);
}

Result<int64_t> EtcdClient::GrantLease(int64_t ttl_seconds) {
    json req = {{"TTL", std::to_string(ttl_seconds)}};
    auto body = Post("/v3/lease/grant", req.dump());
    if (!body.ok()) return body.status();
    auto reply = Parse(*body);
    if (!reply.ok()) return reply.status();
    int64_t id = Int(*reply, "ID");
    if (id == 0) {
        return Status::Unavailable("etcd granted no lease: " + reply->value("error", *body));
    }
    return id;
}

Result<int64_t> EtcdClient::KeepAlive(int64_t lease) {
    json req = {{"ID", std::to_string(lease)}};
    auto body = Post("/v3/lease/keepalive", req.dump());
    if (!body.ok()) return body.status();
    // A stream of one message: {"result": {..., "TTL": "3"}}; no TTL once the lease is gone.
    auto reply = Parse(*body);
    if (!reply.ok()) return reply.status();
    auto result = reply->find("result");
    if (result == reply->end()) {
        return Status::Unavailable("etcd keepalive failed: " + body->substr(0, 200));
    }
    int64_t ttl = Int(*result, "TTL");
    if (ttl <= 0) return Status::NotFound("etcd lease " + std::to_string(lease) + " expired");
    return ttl;
}

Status EtcdClient::Revoke(int64_t lease) {
    json req = {{"ID", std::to_string(lease)}};
    return Post("/v3/lease/revoke", req.dump()).status();
}

}  // namespace mooncake::ha
