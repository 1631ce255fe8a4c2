#include "thrift/auth_token.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace mooncake {
namespace {

void TrimTrailingSpace(std::string& s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' ||
                          s.back() == '\t')) {
        s.pop_back();
    }
}

}  // namespace

Result<std::string> ReadTokenFile(const std::string& path, std::string_view what) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return Status::InvalidArgument("cannot read " + std::string(what) + " '" + path +
                                       "': " + std::strerror(errno));
    }
    std::stringstream buf;
    buf << in.rdbuf();
    if (in.bad()) {
        return Status::InvalidArgument("cannot read " + std::string(what) + " '" + path +
                                       "': " + std::strerror(errno));
    }
    std::string token = buf.str();
    TrimTrailingSpace(token);
    if (token.empty()) {
        return Status::InvalidArgument(std::string(what) + " '" + path + "' holds no token");
    }
    if (token.size() > 4096) {
        return Status::InvalidArgument(std::string(what) + " '" + path +
                                       "': a token is at most 4096 bytes");
    }
    return token;
}

Result<std::string> ResolveClientToken(const std::string& flag_file) {
    if (!flag_file.empty()) return ReadTokenFile(flag_file, "--auth_token_file");
    const std::string file_env(kAuthTokenFileEnv);
    if (const char* path = std::getenv(file_env.c_str()); path != nullptr && *path != '\0') {
        return ReadTokenFile(path, "$" + file_env);
    }
    const std::string token_env(kAuthTokenEnv);
    if (const char* token = std::getenv(token_env.c_str()); token != nullptr) {
        std::string t(token);
        TrimTrailingSpace(t);
        if (t.size() > 4096) {
            return Status::InvalidArgument("$" + token_env + ": a token is at most 4096 bytes");
        }
        return t;
    }
    return std::string();
}

}  // namespace mooncake
