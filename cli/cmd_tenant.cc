// mooncakectl tenant ls | tenant set NAME [--memory SIZE] [--disk SIZE] | tenant rm NAME
// [--purge]: tenants' quotas (issue 34). A malformed name or size is a usage error (2), found
// before anything is sent; the daemon refuses a change without the cluster's token, and `rm`
// of a tenant holding objects without --purge (1). Warnings (quotas past the capacity, a
// change kept in memory only) go to stderr, one `warning: ...` line each.
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "core/base/tenant.h"
#include "core/base/types.h"

namespace mooncake::cli {
namespace {

struct TenantSetOptions {
    std::string name;
    std::string memory;
    std::string disk;
};

struct TenantRmOptions {
    std::string name;
    bool purge = false;
};

int Show(Context& ctx, const TenantListing& listing) {
    for (const std::string& w : listing.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
    ctx.Print(RenderTenants(listing, ctx.format()));
    return kExitOk;
}

Status CheckName(const std::string& name) {
    if (name.empty()) return Status::InvalidArgument("name the tenant (the default one is 'default')");
    return ValidateTenant(name);
}

// SIZE as ParseSize reads it (8GiB, 512M); omitted: 0, no quota.
Result<uint64_t> QuotaArg(const std::string& text, const char* option) {
    if (text.empty()) return uint64_t{0};
    auto bytes = ParseSize(text);
    if (!bytes.ok()) return Status::InvalidArgument(std::string(option) + ": " + bytes.status().message());
    return bytes;
}

int RunTenantLs(Context& ctx) {
    int exit_code = kExitOk;
    Client* client = ctx.client(&exit_code);
    if (client == nullptr) return exit_code;
    auto listing = client->TenantList();
    if (!listing.ok()) return ctx.Fail(listing.status(), "tenant ls");
    return Show(ctx, *listing);
}

int RunTenantSet(Context& ctx, const TenantSetOptions& opts) {
    if (Status bad = CheckName(opts.name); !bad.ok()) return ctx.Usage("tenant set: " + bad.message());
    auto memory = QuotaArg(opts.memory, "--memory");
    if (!memory.ok()) return ctx.Usage("tenant set: " + memory.status().message());
    auto disk = QuotaArg(opts.disk, "--disk");
    if (!disk.ok()) return ctx.Usage("tenant set: " + disk.status().message());
    int exit_code = kExitOk;
    Client* client = ctx.client(&exit_code);
    if (client == nullptr) return exit_code;
    auto listing = client->TenantSet(opts.name, *memory, *disk);
    if (!listing.ok()) return ctx.Fail(listing.status(), "tenant set");
    return Show(ctx, *listing);
}

int RunTenantRm(Context& ctx, const TenantRmOptions& opts) {
    if (Status bad = CheckName(opts.name); !bad.ok()) return ctx.Usage("tenant rm: " + bad.message());
    int exit_code = kExitOk;
    Client* client = ctx.client(&exit_code);
    if (client == nullptr) return exit_code;
    auto listing = client->TenantRemove(opts.name, opts.purge);
    if (!listing.ok()) return ctx.Fail(listing.status(), "tenant rm");
    if (opts.purge && ctx.format() == Format::kTable) {
        std::fprintf(stderr, "removed tenant '%s' and %llu object(s)\n", opts.name.c_str(),
                     static_cast<unsigned long long>(listing->removed));
    }
    return Show(ctx, *listing);
}

}  // namespace

void AddTenantCommand(CLI::App& root, CommandSet& set) {
    CLI::App* tenant = root.add_subcommand("tenant", "list tenants, set or remove their quotas");
    tenant->require_subcommand(1);

    CLI::App* ls = tenant->add_subcommand(
        "ls", "each tenant's quotas, use and figures (a tenant's token: its own row)");
    set.Add(ls, [](Context& ctx) { return RunTenantLs(ctx); });

    auto set_opts = std::make_shared<TenantSetOptions>();
    CLI::App* setter = tenant->add_subcommand(
        "set", "register a tenant or change its quotas (the cluster's token)");
    setter->add_option("NAME", set_opts->name, "tenant: 1..64 bytes of [A-Za-z0-9._-]")
        ->required();
    setter->add_option("--memory", set_opts->memory, "MEMORY quota, e.g. 8GiB (omitted: none)");
    setter->add_option("--disk", set_opts->disk, "LOCAL_DISK quota, e.g. 512M (omitted: none)");
    set.Add(setter, [set_opts](Context& ctx) { return RunTenantSet(ctx, *set_opts); });

    auto rm_opts = std::make_shared<TenantRmOptions>();
    CLI::App* rm = tenant->add_subcommand(
        "rm", "unregister a tenant; refused while it holds objects unless --purge");
    rm->add_option("NAME", rm_opts->name, "tenant")->required();
    rm->add_flag("--purge", rm_opts->purge, "remove the tenant's objects first");
    set.Add(rm, [rm_opts](Context& ctx) { return RunTenantRm(ctx, *rm_opts); });
}

}  // namespace mooncake::cli
