// ScopedTransport: a client's data transport in one tenant. The master's session scopes the
// keys of control calls (daemon/master_service.cc); the data channel names objects as they are
// stored, so this gives every key the client's tenant frame (core/base/tenant.h) before the
// transport it wraps sends it. A key that cannot be scoped is refused before a byte moves.
//
// Thread-safety: as the wrapped transport (the scope is immutable).
#pragma once

#include <memory>

#include "core/base/tenant.h"
#include "net/data_transport.h"

namespace mooncake {

// `inner` itself for the default tenant (its keys are stored as named).
std::shared_ptr<DataTransport> ScopeTransport(std::shared_ptr<DataTransport> inner,
                                              const KeyScope& scope);

}  // namespace mooncake
