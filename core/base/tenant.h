// Tenants: one store shared by several inference services, each in its own key space.
//
// Every object belongs to a tenant; the same key in two tenants is two objects. A tenant's
// objects are held under a scoped key, its name and the caller's key framed by NUL bytes:
//
//   "\0" tenant "\0" key        (tenant "default": the key itself, unframed)
//
// A caller's key may not contain NUL (ValidateUserKey), so no key of the default tenant can be
// mistaken for a scoped one, and no tenant's key can name another tenant's object. Scoped
// keys sort before every default-tenant key (NUL is the smallest byte), and a tenant's keys are
// the contiguous range of its frame. Everything below the session that named the key (the
// master's tables, tasks, disk records, HA state) holds the scoped key and needs no other
// notion of tenant; the session scopes what its caller names and unscopes what it answers.
#pragma once

#include <string>
#include <string_view>

#include "core/base/status.h"

namespace mooncake {

inline constexpr std::string_view kDefaultTenant = "default";
inline constexpr size_t kMaxTenantBytes = 64;

// 1..64 bytes of [A-Za-z0-9._-]. ("" is not a name; callers map it to kDefaultTenant.)
Status ValidateTenant(std::string_view tenant);

// The part of an object's key that names its tenant: kDefaultTenant for an unframed key.
// Only meaningful for a key that passed ValidateKey.
std::string_view TenantOfKey(std::string_view stored_key);
// The caller's part of an object's key (the key itself for the default tenant).
std::string_view UserPartOfKey(std::string_view stored_key);

// One tenant's view of the key space.
class KeyScope {
public:
    // "" and "default" are the default tenant. The name must pass ValidateTenant (see Make).
    static Result<KeyScope> Make(std::string_view tenant);
    static KeyScope Default() { return KeyScope(""); }

    bool is_default() const { return frame_.empty(); }
    std::string_view tenant() const;

    // The stored key of the caller's `key`: ValidateUserKey's refusal, or InvalidArgument when
    // the framed key would pass kMaxKeyBytes (the limit a tenant's keys have is 4096 less its
    // frame, said in the message).
    Result<std::string> Scope(std::string_view key) const;
    // A prefix (may be empty) of the caller's keys, as a prefix of stored keys.
    std::string ScopePrefix(std::string_view prefix) const { return frame_ + std::string(prefix); }
    // True when `stored_key` is one of this tenant's objects.
    bool Contains(std::string_view stored_key) const;
    // The caller's key of one of this tenant's stored keys (precondition: Contains).
    std::string_view Unscope(std::string_view stored_key) const {
        return stored_key.substr(frame_.size());
    }
    // The smallest `start_after` of a sorted listing that skips every other tenant's keys
    // before this tenant's range (the default tenant's range follows every framed key).
    std::string ListStartAfter(std::string_view caller_start_after) const;

private:
    explicit KeyScope(std::string frame) : frame_(std::move(frame)) {}
    std::string frame_;  // "\0" tenant "\0"; empty for the default tenant
};

}  // namespace mooncake
