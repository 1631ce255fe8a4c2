// mooncakectl ls [--tier MEMORY|LOCAL_DISK] [--prefix P] [--limit N]: list keys in key order.
// Inspection: never an access.
#include <memory>

#include "cli/commands.h"
#include "core/base/types.h"

namespace mooncake::cli {
namespace {

struct LsOptions {
    std::string tier;
    std::string prefix;
    size_t limit = 0;  // 0: all
};

int RunLs(Context& ctx, const LsOptions& opts) {
    ListOptions list;
    if (!opts.tier.empty()) list.tier = ParseTier(opts.tier);
    list.prefix = opts.prefix;
    int exit_code = kExitOk;
    Client* client = ctx.client(&exit_code);
    if (client == nullptr) return exit_code;

    std::vector<ObjectInfo> objects;
    if (opts.limit == 0) {
        list.limit = 1000;
        auto all = client->ListAll(list);
        if (!all.ok()) return ctx.Fail(all.status(), "ls");
        objects = std::move(*all);
    } else {
        while (objects.size() < opts.limit) {
            list.limit = std::min<size_t>(1000, opts.limit - objects.size());
            auto page = client->List(list);
            if (!page.ok()) return ctx.Fail(page.status(), "ls");
            if (page->objects.empty()) break;
            list.start_after = page->objects.back().object.key;
            for (ObjectInfo& o : page->objects) objects.push_back(std::move(o));
            if (!page->more) break;
        }
        if (objects.size() > opts.limit) objects.resize(opts.limit);
    }
    ctx.Print(RenderList(objects, ctx.format()));
    return kExitOk;
}

}  // namespace

void AddLsCommand(CLI::App& root, CommandSet& set) {
    auto opts = std::make_shared<LsOptions>();
    CLI::App* sub = root.add_subcommand("ls", "list keys with their size and tiers");
    sub->add_option("--tier", opts->tier, "only keys with a COMPLETE replica in this tier")
        ->check(CLI::IsMember({"MEMORY", "LOCAL_DISK"}))
        ->type_name("TIER");
    sub->add_option("--prefix", opts->prefix, "only keys starting with P")->type_name("P");
    sub->add_option("--limit", opts->limit, "at most N keys (default: all)")
        ->check(CLI::Range(size_t{1}, size_t{1} << 40))
        ->type_name("N");
    set.Add(sub, [opts](Context& ctx) { return RunLs(ctx, *opts); });
}

}  // namespace mooncake::cli
