#include "cli/batch.h"

#include <map>

#include "cli/progress.h"
#include "core/base/types.h"

namespace mooncake::cli {

std::string CheckKeyArguments(const std::vector<std::string>& keys) {
    for (const std::string& key : keys) {
        Status st = ValidateUserKey(key);
        if (!st.ok()) return "bad key " + QuoteKey(key) + ": " + st.message();
    }
    return "";
}

Result<std::vector<std::string>> KeysWithPrefix(Client& client, std::string_view prefix) {
    ListOptions options;
    options.prefix = std::string(prefix);
    options.limit = 1000;
    auto all = client.ListAll(options);
    if (!all.ok()) return all.status();
    std::vector<std::string> keys;
    keys.reserve(all->size());
    for (ObjectInfo& info : *all) keys.push_back(std::move(info.object.key));
    return keys;
}

Status RunInChunks(const std::vector<std::string>& keys, size_t chunk, const std::string& label,
                   bool draw_progress, const ChunkCall& call, std::vector<KeyResult>& results) {
    Progress progress(label, keys.size(), draw_progress);
    std::span<const std::string> all(keys);
    for (size_t i = 0; i < all.size(); i += chunk) {
        std::span<const std::string> part = all.subspan(i, std::min(chunk, all.size() - i));
        auto got = call(part);
        if (!got.ok()) return got.status();
        for (KeyResult& r : *got) results.push_back(std::move(r));
        progress.Advance(part.size());
    }
    progress.Finish();
    return Status::Ok();
}

std::string SummaryLine(std::string_view what, const std::vector<KeyResult>& results) {
    std::map<std::string, size_t> counts;
    std::vector<std::string> order;  // outcome texts in first-seen order
    size_t failed = 0, missing = 0;
    for (const KeyResult& r : results) {
        if (r.status.Is(StatusCode::kNotFound)) {
            ++missing;
        } else if (!r.status.ok()) {
            ++failed;
        } else if (counts[r.text]++ == 0) {
            order.push_back(r.text);
        }
    }
    std::string line = std::string(what) + ": " + std::to_string(results.size()) +
                       (results.size() == 1 ? " key" : " keys");
    std::string parts;
    for (const std::string& text : order) {
        parts += (parts.empty() ? "" : ", ") + std::to_string(counts[text]) + " " + text;
    }
    if (missing > 0) parts += (parts.empty() ? "" : ", ") + std::to_string(missing) + " not found";
    if (failed > 0) parts += (parts.empty() ? "" : ", ") + std::to_string(failed) + " failed";
    if (!parts.empty()) line += ": " + parts;
    return line + "\n";
}

int ExitCodeOf(const std::vector<KeyResult>& results, const std::vector<int>& overrides) {
    std::vector<int> codes;
    codes.reserve(results.size());
    for (size_t i = 0; i < results.size(); ++i) {
        int code = ExitCodeFor(results[i].status);
        if (i < overrides.size() && overrides[i] >= 0) code = overrides[i];
        codes.push_back(code);
    }
    return CombineExitCodes(codes);
}

int PrintKeyResults(Context& ctx, std::string_view command, bool prefix_form,
                    const std::vector<KeyResult>& results, const std::vector<int>& overrides) {
    if (ctx.format() == Format::kJson || !prefix_form) {
        ctx.Print(RenderKeyResults(results, ctx.format()));
    } else {
        ctx.Print(SummaryLine(command, results));
        std::vector<KeyResult> failed;
        for (const KeyResult& r : results) {
            if (!r.status.ok()) failed.push_back(r);
        }
        if (!failed.empty()) ctx.Print(RenderKeyResults(failed, Format::kTable));
    }
    int code = ExitCodeOf(results, overrides);
    if (code != kExitOk) {
        size_t bad = 0;
        for (const KeyResult& r : results) bad += r.status.ok() ? 0 : 1;
        if (results.size() == 1) {
            ctx.Error(code, std::string(command) + " " + QuoteKey(results[0].key) + ": " +
                                results[0].status.message());
        } else {
            ctx.Error(code, std::string(command) + ": " + std::to_string(bad) + " of " +
                                std::to_string(results.size()) + " keys failed");
        }
    }
    return code;
}

}  // namespace mooncake::cli
