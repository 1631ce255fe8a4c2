// Helpers for commands over several keys (rm, promote, offload, evict): key checks, the
// keys under a --prefix, and running a batch call chunk by chunk with progress.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cli/context.h"
#include "cli/printers.h"

namespace mooncake::cli {

// Keys per batch RPC for --prefix forms: small enough that a progress bar moves.
inline constexpr size_t kPrefixChunk = 256;
// Keys per batch RPC for explicit KEY... lists (the wire's limit).
inline constexpr size_t kMaxChunk = 10000;

// Usage errors for bad keys (empty, over 4096 bytes): "" when all are fine.
std::string CheckKeyArguments(const std::vector<std::string>& keys);

// Every key under `prefix` with a COMPLETE replica, sorted; pages through List (inspection).
Result<std::vector<std::string>> KeysWithPrefix(Client& client, std::string_view prefix);

// Calls `call` on consecutive chunks of `keys` (at most `chunk` each), appending its per-key
// results, and advances a progress bar drawn when `draw_progress`. Stops at the first chunk
// whose call fails as a whole and returns that status.
using ChunkCall = std::function<Result<std::vector<KeyResult>>(std::span<const std::string>)>;
Status RunInChunks(const std::vector<std::string>& keys, size_t chunk, const std::string& label,
                   bool draw_progress, const ChunkCall& call, std::vector<KeyResult>& results);

// "12 keys: 10 queued, 2 already in MEMORY" / "... , 1 failed": counts by outcome text.
std::string SummaryLine(std::string_view what, const std::vector<KeyResult>& results);

// Exit code over per-key results: see CombineExitCodes. `overrides[i]`, when not -1, replaces
// the code key i's status would map to.
int ExitCodeOf(const std::vector<KeyResult>& results, const std::vector<int>& overrides = {});

// Prints per-key results the way multi-key commands do: every key (explicit keys, or --json),
// or, for a --prefix form in a table, the summary line and the keys that failed. Also writes
// one stderr line when some keys failed. Returns the exit code.
int PrintKeyResults(Context& ctx, std::string_view command, bool prefix_form,
                    const std::vector<KeyResult>& results, const std::vector<int>& overrides = {});

}  // namespace mooncake::cli
