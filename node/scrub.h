// Scrub: read every record of a node's disk and verify its checksum (mooncakectl scrub).
//
// A node scrubs its own DiskStore (DiskStore::Scrub: background priority, so the disk's
// background rate limit holds and foreground reads keep their slots); corrupt records are
// dropped there, logged and counted, and the master removes them as any dropped copy. A
// standalone daemon scrubs its in-process node; a master asks each node's NodeService.
//
// Thread-safety: both functions may run from any thread; a scrub may run beside normal work.
#pragma once

#include <chrono>
#include <string>

#include "mooncake_types.h"

namespace mooncake {

class DiskStore;

// Scrubs `disk` (null: the reply's error says the node has no disk tier).
rpc::ScrubReply ScrubDisk(DiskStore* disk, const std::string& node_name);

// Asks the node whose RPC address is `address` to scrub itself (NodeService.Scrub), with the
// cluster's access token. Failures are in the reply's error, never thrown.
rpc::ScrubReply ScrubRemoteNode(const std::string& address, const std::string& auth_token,
                                std::chrono::milliseconds connect_timeout,
                                std::chrono::milliseconds call_timeout);

}  // namespace mooncake
