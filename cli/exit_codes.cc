#include "cli/exit_codes.h"

#include <algorithm>

namespace mooncake::cli {

int CombineExitCodes(std::span<const int> per_key) {
    bool missing = false;
    int worst = kExitOk;
    for (int code : per_key) {
        if (code == kExitNotFound) {
            missing = true;
        } else {
            worst = std::max(worst, code);  // 4 > 2 > 1 > 0
        }
    }
    if (worst != kExitOk) return worst;
    return missing ? kExitNotFound : kExitOk;
}

}  // namespace mooncake::cli
