// ForwardingTransport: the TCP data transport with every call forwarded, for tests that meddle
// with a few calls (override them) and leave the rest as a client would make them.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string_view>

#include "net/data_transport.h"

namespace mooncake::test {

class ForwardingTransport : public DataTransport {
public:
    ForwardingTransport() : inner_(NewTcpTransport({})) {}

    Status WriteMemory(std::string_view address, std::string_view key, Generation generation,
                       uint64_t offset, std::span<const std::byte> data) override {
        return inner_->WriteMemory(address, key, generation, offset, data);
    }
    Status Read(std::string_view address, Tier tier, std::string_view key,
                Generation generation, uint64_t offset, std::span<std::byte> out) override {
        return inner_->Read(address, tier, key, generation, offset, out);
    }
    Status WriteMemoryEndingPut(std::string_view address, std::string_view key,
                                Generation generation, uint64_t offset,
                                std::span<const std::byte> data, ClientId client,
                                bool* ended) override {
        return inner_->WriteMemoryEndingPut(address, key, generation, offset, data, client,
                                            ended);
    }
    bool HasByKey() const override { return inner_->HasByKey(); }
    bool IsNear(std::string_view address) override { return inner_->IsNear(address); }
    Result<uint64_t> ReadByKey(std::string_view address, std::string_view key,
                               uint64_t max_size,
                               const std::function<std::span<std::byte>(uint64_t)>& buffer_for,
                               Tier* served_from) override {
        return inner_->ReadByKey(address, key, max_size, buffer_for, served_from);
    }
    Result<uint64_t> ReadByKeyInto(std::string_view address, std::string_view key,
                                   std::span<std::byte> out, Tier* served_from) override {
        return inner_->ReadByKeyInto(address, key, out, served_from);
    }
    Status PutByKey(std::string_view address, std::string_view key, ClientId client,
                    std::span<const std::byte> value, bool* sent) override {
        return inner_->PutByKey(address, key, client, value, sent);
    }

protected:
    DataTransport& inner() { return *inner_; }

private:
    std::unique_ptr<DataTransport> inner_;
};

}  // namespace mooncake::test
