#!/usr/bin/env python3
"""Checks the house's floors: each folder includes only the folders below it that it is
allowed to (ALLOWED), and no file's includes run in a circle. Exits 1 naming every include
that breaks a rule (file:line), 0 with one line of totals otherwise. Run by ctest
(include_layers) in the test command; `scripts/check_layers.py [ROOT]` by hand.

Only the project's own includes are read ("folder/..." with a folder of the table); system,
third-party and Thrift-generated headers ("NodeService.h") are not part of any floor.
"""
import os
import re
import sys

# Folder -> the folders its files may include (besides their own). Bottom up: core/base is the
# ground floor; core/disk and core/master stand on it side by side (neither sees the other);
# core/node on disk; the wire (net, etcd, thrift) on base; node/ (a node process's parts) on
# all of those; the programs on top: daemon/ and python/ both use node/, neither the other.
ALLOWED = {
    "core/base": [],
    "core/disk": ["core/base"],
    "core/master": ["core/base"],
    "core/node": ["core/base", "core/disk"],
    "net": ["core/base"],
    "etcd": ["core/base"],
    "thrift": ["core/base", "net", "etcd"],
    "node": ["core/base", "core/disk", "core/node", "core/master", "net", "etcd", "thrift"],
    "daemon": ["core/base", "core/disk", "core/node", "core/master", "net", "etcd", "thrift",
               "node"],
    "cli": ["core/base", "net", "etcd", "thrift"],
    "fuse": ["core/base", "net", "thrift"],
    "python/src": ["core/base", "net", "thrift", "node"],
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCE = (".h", ".cc", ".def")


def unit_of(path):
    """The table's folder a repository path belongs to (the longest match), or None."""
    best = None
    for unit in ALLOWED:
        if path == unit or path.startswith(unit + "/"):
            if best is None or len(unit) > len(best):
                best = unit
    return best


def main(root):
    edges = {}  # file -> [(line, included file)] among the table's files
    problems = []
    for unit in ALLOWED:
        for folder, _, names in os.walk(os.path.join(root, unit)):
            for name in names:
                if not name.endswith(SOURCE):
                    continue
                path = os.path.relpath(os.path.join(folder, name), root)
                lines = open(os.path.join(root, path), encoding="utf-8").read().splitlines()
                for number, text in enumerate(lines, 1):
                    match = INCLUDE.match(text)
                    if not match:
                        continue
                    target = match.group(1)
                    target_unit = unit_of(target)
                    if target_unit is None:
                        if target.startswith("core/"):  # core/ itself holds no files now
                            problems.append(f"{path}:{number}: includes {target}, on no floor")
                        continue
                    edges.setdefault(path, []).append((number, target))
                    own = unit_of(path)
                    if target_unit != own and target_unit not in ALLOWED[own]:
                        problems.append(f"{path}:{number}: {own}/ includes {target}: "
                                        f"{target_unit}/ is not below {own}/")
                    if not os.path.exists(os.path.join(root, target)):
                        problems.append(f"{path}:{number}: includes {target}, which is not there")
    # Circles: a depth-first walk over the file graph; a back edge closes one.
    state = {}

    def walk(path, trail):
        state[path] = "open"
        for number, target in edges.get(path, []):
            if state.get(target) == "open":
                circle = trail[trail.index(target):] + [target]
                problems.append(f"{path}:{number}: include circle: {' -> '.join(circle)}")
            elif target not in state:
                walk(target, trail + [target])
        state[path] = "done"

    sys.setrecursionlimit(10000)
    for path in sorted(edges):
        if path not in state:
            walk(path, [path])
    for line in problems:
        print(line)
    if problems:
        print(f"check_layers: {len(problems)} includes break the floors", file=sys.stderr)
        return 1
    total = sum(len(v) for v in edges.values())
    print(f"check_layers: {len(edges)} files, {total} project includes, all on the floors "
          f"they may use, no circle")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else
                  os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")))
