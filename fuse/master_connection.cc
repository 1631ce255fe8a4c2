#include "fuse/master_connection.h"

namespace mooncake::tierfs {

Result<std::shared_ptr<Client>> MasterConnection::Get() {
    {
        MutexLock lock(mu_);
        if (client_) return client_;
    }
    // Connect without the lock: a slow attempt must not hold up calls that could fail fast.
    auto connected = Client::Connect(address_, options_);
    if (!connected.ok()) return connected.status();
    std::shared_ptr<Client> fresh = std::move(*connected);
    MutexLock lock(mu_);
    if (!client_) client_ = std::move(fresh);
    return client_;
}

Status MasterConnection::Probe() {
    auto client = Get();
    return client.ok() ? Status::Ok() : client.status();
}

}  // namespace mooncake::tierfs
