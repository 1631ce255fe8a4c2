// Test-only fault points in the node's byte work.
//
// MOONCAKE_FAULT_POINT("name") marks a place where a fault test may hold, slow down or fail
// the node. The release daemon (`mooncaked`) is compiled without MOONCAKE_FAULT_INJECTION:
// every point is an empty statement and nothing reads the environment, so no setting can turn
// a fault on in production. Only the `mooncaked-fault` binary that tests/fault builds (never
// installed) has the points live. There, MOONCAKE_FAULTS configures them:
//
//   MOONCAKE_FAULTS="point=action[,point=action...]"   actions:
//     sleep:MS   sleep MS milliseconds at every hit (a slow disk, a slow peer)
//     fail       the operation fails with an injected IoError
//     hold       stop here until the file $MOONCAKE_FAULT_DIR/<point>.release exists
//     fail_until_release   fail, until $MOONCAKE_FAULT_DIR/<point>.release exists
//
// Every hit of a configured point first creates $MOONCAKE_FAULT_DIR/<point>.reached, so a test
// knows the node is in the middle of that operation (and may kill -9 it there).
//
// Points: disk.read, disk.write (before the LOCAL_DISK I/O), offload.before_report (disk copy
// written, master not yet told), promotion.before_copy (source read, staging not yet asked
// for), promotion.before_commit (bytes in the staging range, master not yet told),
// heartbeat.reply (a heartbeat reply arrived, not yet acted on: `fail` drops it, as if lost).
#pragma once

#include "core/base/status.h"

#ifdef MOONCAKE_FAULT_INJECTION

namespace mooncake::fault {
// Runs the action configured for `point`; returns IoError for `fail`, Ok otherwise.
Status Hit(const char* point);
}  // namespace mooncake::fault

#define MOONCAKE_FAULT_POINT(point) ::mooncake::fault::Hit(point)

#else

#define MOONCAKE_FAULT_POINT(point) ::mooncake::Status::Ok()

#endif
