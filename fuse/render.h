// What mooncake-tierfs shows for a key: the text of its file and its extended attributes, and
// the errno an RPC failure becomes. Pure functions of what Stat returned: no I/O, any thread.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/status.h"
#include "core/base/types.h"
#include "thrift/client.h"

namespace mooncake::tierfs {

// "MEMORY,LOCAL_DISK": tiers holding a COMPLETE replica, MEMORY first ("" if none).
std::string TiersText(const ObjectView& object);

// The key's last promotion decision: "<outcome> reads=<n> threshold=<n>[ age_s=<n>]", or
// "none". The file's text leaves the age out, so its size holds still between getattr and read.
std::string PromotionText(const ObjectView& object, bool with_age);

// The content of keys/<name> (and MEMORY/<name>, LOCAL_DISK/<name>):
//   key: <the key, percent-escaped as in a plain name, never hashed>
//   size: <bytes>
//   tiers: MEMORY,LOCAL_DISK
//   generation: <n>
//   sketch_estimate: <n>
//   promotion_in_flight: true|false
//   offload_in_flight: true|false
//   last_promotion: <outcome> reads=<n> threshold=<n> | none
//   replicas:
//     <TIER> <STATE> node=<node address>
// Replicas are every replica the master knows, any state, MEMORY first.
std::string Describe(const ObjectInfo& info);

// Extended attributes of a key's file, in listxattr order; values carry no trailing newline.
//   user.mooncake.key                  the raw key bytes
//   user.mooncake.tiers                as TiersText
//   user.mooncake.size                 decimal bytes
//   user.mooncake.replicas             TIER:STATE@NODE, comma-separated, MEMORY first
//   user.mooncake.generation           decimal
//   user.mooncake.sketch_estimate      decimal (the admission sketch's count; not an access)
//   user.mooncake.promotion_in_flight  true|false
//   user.mooncake.offload_in_flight    true|false
//   user.mooncake.promotion            the key's last promotion decision, "why is it not in
//                                      MEMORY?": <outcome> reads=<n> threshold=<n> age_s=<n>,
//                                      or none (outcomes: core/base/promotion_decision.h)
std::vector<std::pair<std::string, std::string>> KeyXattrs(const ObjectInfo& info);
// The names alone, in the same order (listxattr needs no RPC).
const std::vector<std::string>& KeyXattrNames();

// The errno a failed call becomes: kNotFound ENOENT, kInvalidArgument EINVAL, kUnavailable
// ENOTCONN (the master is gone), kTimeout and I/O errors EIO, kIllegalClient EACCES,
// kBusy EAGAIN, kNoSpace ENOSPC, anything else EIO.
int ErrnoOf(const Status& status);

}  // namespace mooncake::tierfs
