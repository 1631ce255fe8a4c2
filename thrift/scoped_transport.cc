#include "thrift/scoped_transport.h"

#include <vector>

namespace mooncake {
namespace {

class ScopedTransport final : public DataTransport {
public:
    ScopedTransport(std::shared_ptr<DataTransport> inner, KeyScope scope)
        : inner_(std::move(inner)), scope_(std::move(scope)) {}

    Status WriteMemory(std::string_view address, std::string_view key, Generation generation,
                       uint64_t offset, std::span<const std::byte> data) override {
        return WithKey(key, [&](std::string_view k) {
            return inner_->WriteMemory(address, k, generation, offset, data);
        });
    }
    Status Read(std::string_view address, Tier tier, std::string_view key, Generation generation,
                uint64_t offset, std::span<std::byte> out) override {
        return WithKey(key, [&](std::string_view k) {
            return inner_->Read(address, tier, k, generation, offset, out);
        });
    }
    Status WriteMemoryFrom(std::string_view address, std::string_view key, Generation generation,
                           uint64_t offset, uint64_t length, ByteSource& source) override {
        return WithKey(key, [&](std::string_view k) {
            return inner_->WriteMemoryFrom(address, k, generation, offset, length, source);
        });
    }
    Status WriteMemoryEndingPut(std::string_view address, std::string_view key,
                                Generation generation, uint64_t offset,
                                std::span<const std::byte> data, ClientId client,
                                bool* ended) override {
        return WithKey(key, [&](std::string_view k) {
            return inner_->WriteMemoryEndingPut(address, k, generation, offset, data, client, ended);
        });
    }
    Status WriteMemoryFromEndingPut(std::string_view address, std::string_view key,
                                    Generation generation, uint64_t offset, uint64_t length,
                                    ByteSource& source, ClientId client, bool* ended) override {
        return WithKey(key, [&](std::string_view k) {
            return inner_->WriteMemoryFromEndingPut(address, k, generation, offset, length, source,
                                                    client, ended);
        });
    }
    Status ReadTo(std::string_view address, Tier tier, std::string_view key,
                  Generation generation, uint64_t offset, uint64_t length,
                  ByteSink& sink) override {
        return WithKey(key, [&](std::string_view k) {
            return inner_->ReadTo(address, tier, k, generation, offset, length, sink);
        });
    }

    bool HasByKey() const override { return inner_->HasByKey(); }
    bool IsNear(std::string_view address) override { return inner_->IsNear(address); }
    Result<uint64_t> ReadByKey(std::string_view address, std::string_view key, uint64_t max_size,
                               const std::function<std::span<std::byte>(uint64_t size)>& buffer_for,
                               Tier* served_from) override {
        return WithKey(key, [&](std::string_view k) {
            return inner_->ReadByKey(address, k, max_size, buffer_for, served_from);
        });
    }
    Result<uint64_t> ReadByKeyInto(std::string_view address, std::string_view key,
                                   std::span<std::byte> out, Tier* served_from) override {
        return WithKey(key, [&](std::string_view k) {
            return inner_->ReadByKeyInto(address, k, out, served_from);
        });
    }
    Status PutByKey(std::string_view address, std::string_view key, ClientId client,
                    std::span<const std::byte> value, bool* sent) override {
        if (sent != nullptr) *sent = false;
        return WithKey(key, [&](std::string_view k) {
            return inner_->PutByKey(address, k, client, value, sent);
        });
    }

    Status WriteMemoryPieces(std::string_view address, std::string_view key,
                             Generation generation, uint64_t offset, ConstPieces data) override {
        return WithKey(key, [&](std::string_view k) {
            return inner_->WriteMemoryPieces(address, k, generation, offset, data);
        });
    }
    Status WriteMemoryPiecesEndingPut(std::string_view address, std::string_view key,
                                      Generation generation, uint64_t offset, ConstPieces data,
                                      ClientId client, bool* ended) override {
        return WithKey(key, [&](std::string_view k) {
            return inner_->WriteMemoryPiecesEndingPut(address, k, generation, offset, data, client,
                                                      ended);
        });
    }
    Status ReadPieces(std::string_view address, Tier tier, std::string_view key,
                      Generation generation, uint64_t offset, MutablePieces out) override {
        return WithKey(key, [&](std::string_view k) {
            return inner_->ReadPieces(address, tier, k, generation, offset, out);
        });
    }
    Status PutPiecesByKey(std::string_view address, std::string_view key, ClientId client,
                          ConstPieces value, bool* sent) override {
        if (sent != nullptr) *sent = false;
        return WithKey(key, [&](std::string_view k) {
            return inner_->PutPiecesByKey(address, k, client, value, sent);
        });
    }
    Result<uint64_t> ReadByKeyIntoPieces(std::string_view address, std::string_view key,
                                         MutablePieces out, Tier* served_from) override {
        return WithKey(key, [&](std::string_view k) {
            return inner_->ReadByKeyIntoPieces(address, k, out, served_from);
        });
    }

    void RunBatch(std::string_view address, std::span<BatchOp> ops) override {
        // The ops that scope go on as one batch with their stored keys; the answers come back
        // to the caller's ops.
        std::vector<std::string> stored;
        std::vector<size_t> index;
        stored.reserve(ops.size());
        for (size_t i = 0; i < ops.size(); ++i) {
            Result<std::string> key = scope_.Scope(ops[i].key);
            if (!key.ok()) {
                ops[i].status = key.status();
                continue;
            }
            stored.push_back(std::move(*key));
            index.push_back(i);
        }
        std::vector<BatchOp> scoped;
        scoped.reserve(index.size());
        for (size_t j = 0; j < index.size(); ++j) {
            scoped.push_back(ops[index[j]]);
            scoped.back().key = stored[j];
        }
        if (!scoped.empty()) inner_->RunBatch(address, scoped);
        for (size_t j = 0; j < index.size(); ++j) {
            const std::string_view caller_key = ops[index[j]].key;
            ops[index[j]] = scoped[j];
            ops[index[j]].key = caller_key;
        }
    }

private:
    // `call` with the stored key of `key`, or the refusal to scope it.
    template <typename Call>
    auto WithKey(std::string_view key, Call&& call) -> decltype(call(std::string_view{})) {
        Result<std::string> stored = scope_.Scope(key);
        if (!stored.ok()) return stored.status();
        return call(std::string_view(*stored));
    }

    const std::shared_ptr<DataTransport> inner_;
    const KeyScope scope_;
};

}  // namespace

std::shared_ptr<DataTransport> ScopeTransport(std::shared_ptr<DataTransport> inner,
                                              const KeyScope& scope) {
    if (scope.is_default()) return inner;
    return std::make_shared<ScopedTransport>(std::move(inner), scope);
}

}  // namespace mooncake
