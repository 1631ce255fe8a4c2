#!/usr/bin/env bash
# Fails (exit 1, naming file:line) if a plain std mutex or condition variable is used in core/,
# node/, daemon/, thrift/, net/, fuse/ or python/src/ outside core/base/mutex.h. The clang thread-safety
# analysis only checks capability types: state guarded by a std::mutex would pass
# scripts/thread-safety.sh unchecked, so those directories use core/base/mutex.h's Mutex,
# SharedMutex and CondVar.
# Comments are ignored (text after //). Run from anywhere; called by scripts/thread-safety.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
# No \b in awk: the grep pass has already matched whole names.
names='std::(mutex|shared_mutex|recursive_mutex|timed_mutex|shared_timed_mutex'
names+='|recursive_timed_mutex|condition_variable|condition_variable_any)'
found=$(grep -rnE --include='*.h' --include='*.cc' --include='*.hpp' --include='*.cpp' \
  "${names}\b" core node daemon thrift net fuse python/src |
  grep -v '^core/base/mutex\.h:' |
  awk -v pat="$names" '{
      split($0, parts, ":");
      code = substr($0, length(parts[1]) + length(parts[2]) + 3);
      sub(/\/\/.*/, "", code);
      if (code ~ pat) print parts[1] ":" parts[2] ": " code;
    }' || true)
if [[ -n "$found" ]]; then
  echo "check-locks: plain std mutexes in checked code (use core/base/mutex.h's Mutex," \
    "SharedMutex, CondVar so the thread-safety analysis checks them):" >&2
  echo "$found" >&2
  exit 1
fi
echo "check-locks: core/, node/, daemon/, thrift/, net/, fuse/ and python/src/ use only" \
  "core/base/mutex.h's lock types"
