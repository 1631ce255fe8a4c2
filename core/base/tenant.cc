#include "core/base/tenant.h"

#include "core/base/types.h"

namespace mooncake {

namespace {

bool TenantByte(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '-';
}

}  // namespace

Status ValidateTenant(std::string_view tenant) {
    if (tenant.empty()) return Status::InvalidArgument("tenant name is empty");
    if (tenant.size() > kMaxTenantBytes) {
        return Status::InvalidArgument("tenant name is " + std::to_string(tenant.size()) +
                                       " bytes; the limit is " + std::to_string(kMaxTenantBytes));
    }
    for (char c : tenant) {
        if (!TenantByte(c)) {
            return Status::InvalidArgument("tenant name " + QuoteKey(tenant) +
                                           " may hold only letters, digits, '.', '_' and '-'");
        }
    }
    return Status::Ok();
}

std::string_view TenantOfKey(std::string_view stored_key) {
    if (stored_key.empty() || stored_key[0] != '\0') return kDefaultTenant;
    const size_t end = stored_key.find('\0', 1);
    return end == std::string_view::npos ? std::string_view{} : stored_key.substr(1, end - 1);
}

std::string_view UserPartOfKey(std::string_view stored_key) {
    if (stored_key.empty() || stored_key[0] != '\0') return stored_key;
    const size_t end = stored_key.find('\0', 1);
    return end == std::string_view::npos ? stored_key : stored_key.substr(end + 1);
}

Result<KeyScope> KeyScope::Make(std::string_view tenant) {
    if (tenant.empty() || tenant == kDefaultTenant) return Default();
    MC_RETURN_IF_ERROR(ValidateTenant(tenant));
    std::string frame;
    frame.reserve(tenant.size() + 2);
    frame += '\0';
    frame += tenant;
    frame += '\0';
    return KeyScope(std::move(frame));
}

std::string_view KeyScope::tenant() const {
    return is_default() ? kDefaultTenant
                        : std::string_view(frame_).substr(1, frame_.size() - 2);
}

Result<std::string> KeyScope::Scope(std::string_view key) const {
    MC_RETURN_IF_ERROR(ValidateUserKey(key));
    if (frame_.size() + key.size() > kMaxKeyBytes) {
        return Status::InvalidArgument(
            "key is " + std::to_string(key.size()) + " bytes; the limit in tenant '" +
            std::string(tenant()) + "' is " + std::to_string(kMaxKeyBytes - frame_.size()));
    }
    return frame_ + std::string(key);
}

bool KeyScope::Contains(std::string_view stored_key) const {
    if (is_default()) return stored_key.empty() || stored_key[0] != '\0';
    return stored_key.size() > frame_.size() && stored_key.compare(0, frame_.size(), frame_) == 0;
}

std::string KeyScope::ListStartAfter(std::string_view caller_start_after) const {
    if (!caller_start_after.empty()) return frame_ + std::string(caller_start_after);
    // Every framed key is "\0" + a tenant byte (all below 0xFF) + ...: "\0\xFF" is above them
    // all and below every unframed key (whose first byte is at least 1).
    return is_default() ? std::string("\0\xFF", 2) : std::string();
}

}  // namespace mooncake
