// Mooncake's session API over the client library (python/src/range_sessions.h).
#include "python/src/range_sessions.h"

#include <algorithm>
#include <cstring>

#include "python/src/error_codes.h"
#include "spdlog/spdlog.h"

namespace mooncake::py {

std::vector<int> RangeSessions::PutStart(const std::vector<std::string>& keys,
                                         const std::vector<uint64_t>& sizes,
                                         const std::vector<std::string_view>& groups,
                                         NodeId preferred, const PutConfig& config) {
    std::vector<int> out(keys.size(), kInvalidParams);
    if (sizes.size() != keys.size() || groups.size() != keys.size()) {
        spdlog::error("batch_put_session_start: {} keys and {} sizes: one size per key",
                      keys.size(), sizes.size());
        return out;
    }
    std::vector<Client::PutBeginItem> items;
    std::vector<size_t> index;  // items[j] is keys[index[j]]
    {
        MutexLock lock(mu_);
        for (size_t i = 0; i < keys.size(); ++i) {
            if (puts_.count(keys[i]) != 0) {
                spdlog::error("batch_put_session_start: {} has a put session open already "
                              "(end or revoke it first)",
                              QuoteKey(keys[i]));
                continue;
            }
            items.push_back({keys[i], sizes[i], groups[i]});
            index.push_back(i);
        }
    }
    std::vector<Result<Client::PutStarted>> started = client_.BatchPutBegin(items, preferred, config);
    std::vector<std::string_view> lost_keys;  // opened by another thread meanwhile: given back
    std::vector<Generation> lost_generations;
    MutexLock lock(mu_);
    for (size_t j = 0; j < started.size(); ++j) {
        const size_t i = index[j];
        if (!started[j].ok()) {
            spdlog::debug("batch_put_session_start {}: {}", QuoteKey(keys[i]),
                          started[j].status().ToString());
            out[i] = ToMooncakeError(started[j].status());
            continue;
        }
        auto put = std::make_shared<Put>();
        put->size = sizes[i];
        put->started = std::move(*started[j]);
        if (!puts_.emplace(keys[i], put).second) {
            lost_keys.push_back(keys[i]);
            lost_generations.push_back(put->started.generation);
            continue;
        }
        out[i] = kOK;
    }
    if (!lost_keys.empty()) (void)client_.BatchPutAbandon(lost_keys, lost_generations);
    return out;
}

std::vector<int64_t> RangeSessions::PutRanges(const std::vector<std::string>& keys,
                                              const std::vector<std::vector<PutRange>>& ranges) {
    std::vector<int64_t> out(keys.size(), kInvalidParams);
    for (size_t i = 0; i < keys.size() && i < ranges.size(); ++i) {
        std::shared_ptr<Put> put;
        {
            MutexLock lock(mu_);
            auto it = puts_.find(keys[i]);
            if (it != puts_.end()) put = it->second;
        }
        if (!put) {
            spdlog::error("batch_put_from_multi_buffer_ranges: {} has no put session "
                          "(batch_put_session_start first)",
                          QuoteKey(keys[i]));
            continue;
        }
        bool fits = true;
        uint64_t taken = 0;
        for (const PutRange& r : ranges[i]) {
            if (r.offset > put->size || r.bytes.size() > put->size - r.offset) {
                spdlog::error("batch_put_from_multi_buffer_ranges: range [{}, +{}) is past the "
                              "end of {} ({} bytes)",
                              r.offset, r.bytes.size(), QuoteKey(keys[i]), put->size);
                fits = false;
            }
            taken += r.bytes.size();
        }
        if (!fits) continue;
        MutexLock bytes_lock(put->bytes_mu);
        if (put->closed) {
            spdlog::error("batch_put_from_multi_buffer_ranges: the put session of {} ended "
                          "while its ranges came",
                          QuoteKey(keys[i]));
            continue;
        }
        if (!put->bytes) put->bytes = TakeBuffer(put->size);
        for (const PutRange& r : ranges[i]) {
            if (r.bytes.empty()) continue;
            std::memcpy(put->bytes.get() + r.offset, r.bytes.data(), r.bytes.size());
            put->covered.emplace_back(r.offset, r.offset + r.bytes.size());
        }
        out[i] = static_cast<int64_t>(taken);
    }
    return out;
}

std::vector<std::shared_ptr<RangeSessions::Put>> RangeSessions::TakePuts(
    const std::vector<std::string>& keys) {
    std::vector<std::shared_ptr<Put>> taken(keys.size());
    MutexLock lock(mu_);
    for (size_t i = 0; i < keys.size(); ++i) {
        auto it = puts_.find(keys[i]);
        if (it == puts_.end()) continue;
        taken[i] = std::move(it->second);
        puts_.erase(it);
    }
    return taken;
}

std::vector<int> RangeSessions::PutEnd(const std::vector<std::string>& keys) {
    std::vector<int> out(keys.size(), kInvalidParams);
    std::vector<std::shared_ptr<Put>> puts = TakePuts(keys);
    std::vector<std::string_view> ending;
    std::vector<Client::PutStarted> started;
    std::vector<std::span<const std::byte>> spans;
    std::vector<size_t> index;  // ending[j] is keys[index[j]]
    for (size_t i = 0; i < keys.size(); ++i) {
        if (!puts[i]) {
            spdlog::error("batch_put_session_end: {} has no put session", QuoteKey(keys[i]));
            continue;
        }
        Put& put = *puts[i];
        MutexLock bytes_lock(put.bytes_mu);
        put.closed = true;
        if (!put.bytes) put.bytes = TakeBuffer(put.size);  // no range came
        put.ZeroWhatNoRangeGave();
        ending.push_back(keys[i]);
        started.push_back(put.started);
        spans.emplace_back(put.bytes.get(), put.size);
        index.push_back(i);
    }
    std::vector<ConstPieces> values;
    values.reserve(spans.size());
    for (const auto& span : spans) values.emplace_back(&span, 1);
    std::vector<Status> committed = client_.BatchPutCommit(ending, started, values);
    for (size_t j = 0; j < index.size(); ++j) {
        Put& put = *puts[index[j]];
        MutexLock bytes_lock(put.bytes_mu);
        KeepBuffer(put.size, std::move(put.bytes));
    }
    for (size_t j = 0; j < index.size(); ++j) {
        if (!committed[j].ok()) {
            spdlog::debug("batch_put_session_end {}: {}", QuoteKey(keys[index[j]]),
                          committed[j].ToString());
        }
        out[index[j]] = ToMooncakeError(committed[j]);
    }
    return out;
}

std::vector<int> RangeSessions::PutRevoke(const std::vector<std::string>& keys) {
    std::vector<int> out(keys.size(), kInvalidParams);
    std::vector<std::shared_ptr<Put>> puts = TakePuts(keys);
    std::vector<std::string_view> revoking;
    std::vector<Generation> generations;
    std::vector<size_t> index;
    for (size_t i = 0; i < keys.size(); ++i) {
        if (!puts[i]) {
            // Engines revoke every key whose start failed (an existing key among them): said
            // in the answer, not logged as an error.
            spdlog::debug("batch_put_session_revoke: {} has no put session", QuoteKey(keys[i]));
            continue;
        }
        revoking.push_back(keys[i]);
        generations.push_back(puts[i]->started.generation);
        index.push_back(i);
        MutexLock bytes_lock(puts[i]->bytes_mu);
        puts[i]->closed = true;
        if (puts[i]->bytes) KeepBuffer(puts[i]->size, std::move(puts[i]->bytes));
    }
    std::vector<Status> revoked = client_.BatchPutAbandon(revoking, generations);
    for (size_t j = 0; j < index.size(); ++j) out[index[j]] = ToMooncakeError(revoked[j]);
    return out;
}

std::vector<int> RangeSessions::GetStart(const std::vector<std::string>& keys,
                                         std::vector<std::optional<Tier>>* sources) {
    std::vector<int> out(keys.size(), kOK);
    std::vector<Result<ObjectInfo>> lists = client_.BatchGetReplicaList(keys);
    if (sources != nullptr) {
        sources->assign(keys.size(), std::nullopt);
        for (size_t i = 0; i < keys.size() && i < lists.size(); ++i) {
            if (!lists[i].ok()) continue;
            const size_t r = FirstReachableReplica(*lists[i]);  // the one a read tries first
            if (r < lists[i]->object.replicas.size()) {
                (*sources)[i] = lists[i]->object.replicas[r].tier;
            }
        }
    }
    MutexLock lock(mu_);
    if (gets_.size() + keys.size() > kMaxGetSessions) {
        spdlog::warn("{} get sessions were never ended (batch_get_session_end): dropped; their "
                     "range reads look the keys up again",
                     gets_.size());
        gets_.clear();
    }
    for (size_t i = 0; i < keys.size(); ++i) {
        if (i >= lists.size() || !lists[i].ok()) {
            out[i] = i < lists.size() ? ToMooncakeError(lists[i].status()) : kInternalError;
            continue;
        }
        gets_.insert_or_assign(keys[i], std::move(*lists[i]));
    }
    return out;
}

std::vector<int64_t> RangeSessions::GetRanges(
    const std::vector<std::string>& keys,
    const std::vector<std::vector<Client::ValueRange>>& ranges) {
    std::vector<int64_t> out(keys.size(), kInvalidParams);
    if (ranges.size() != keys.size()) return out;
    // The sessions' lists; a key with none is looked up with the others (one round trip).
    std::vector<Result<ObjectInfo>> lists;
    lists.reserve(keys.size());
    std::vector<std::string> unknown;
    std::vector<size_t> unknown_index;
    {
        MutexLock lock(mu_);
        for (size_t i = 0; i < keys.size(); ++i) {
            auto it = gets_.find(keys[i]);
            if (it != gets_.end()) {
                lists.emplace_back(it->second);
            } else {
                lists.emplace_back(Status::NotFound("not looked up yet"));
                unknown.push_back(keys[i]);
                unknown_index.push_back(i);
            }
        }
    }
    if (!unknown.empty()) {
        std::vector<Result<ObjectInfo>> looked = client_.BatchGetReplicaList(unknown);
        for (size_t j = 0; j < unknown_index.size() && j < looked.size(); ++j) {
            lists[unknown_index[j]] = std::move(looked[j]);
        }
    }
    std::vector<std::vector<Status>> got = client_.BatchGetRanges(keys, ranges, std::move(lists));
    for (size_t i = 0; i < keys.size(); ++i) {
        int64_t bytes = 0;
        for (size_t r = 0; r < got[i].size(); ++r) {
            if (!got[i][r].ok()) {
                bytes = ToMooncakeError(got[i][r]);
                break;
            }
            bytes += static_cast<int64_t>(ranges[i][r].out.size());
        }
        out[i] = bytes;
    }
    return out;
}

int RangeSessions::GetEnd(const std::vector<std::string>& keys) {
    MutexLock lock(mu_);
    for (const std::string& key : keys) gets_.erase(key);
    return kOK;
}

RangeSessions::Bytes RangeSessions::TakeBuffer(uint64_t size) {
    Bytes bytes;
    {
        MutexLock lock(mu_);
        auto it = kept_.find(size);
        if (it != kept_.end() && !it->second.empty()) {
            bytes = std::move(it->second.back());
            it->second.pop_back();
            kept_bytes_ -= size;
        }
    }
    if (!bytes) bytes.reset(new std::byte[size]);
    return bytes;
}

void RangeSessions::Put::ZeroWhatNoRangeGave() {
    // Bytes no range gave read as zeros, as a fresh allocation's do with Mooncake.
    std::sort(covered.begin(), covered.end());
    uint64_t at = 0;
    for (const auto& [begin, end] : covered) {
        if (begin > at) std::memset(bytes.get() + at, 0, begin - at);
        at = std::max(at, end);
    }
    if (at < size) std::memset(bytes.get() + at, 0, size - at);
    covered.clear();
}

void RangeSessions::KeepBuffer(uint64_t size, Bytes bytes) {
    if (!bytes) return;
    MutexLock lock(mu_);
    if (kept_bytes_ + size > kKeptBytes) return;  // freed as `bytes` goes
    kept_[size].push_back(std::move(bytes));
    kept_bytes_ += size;
}

void RangeSessions::AbandonAll() {
    std::vector<std::string> keys;
    {
        MutexLock lock(mu_);
        for (const auto& [key, put] : puts_) keys.push_back(key);
    }
    if (!keys.empty()) (void)PutRevoke(keys);
}

size_t RangeSessions::open_puts() const {
    MutexLock lock(mu_);
    return puts_.size();
}

size_t RangeSessions::open_gets() const {
    MutexLock lock(mu_);
    return gets_.size();
}

}  // namespace mooncake::py
