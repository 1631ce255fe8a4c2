#!/usr/bin/env python3
"""Checks that the code a markdown walk-through names still exists.

For each markdown file given (default: docs/READING_A_GET.md), every inline code span
(`...`, outside fenced blocks) is sorted by this rule:

  path   has a '/' and only path characters, optionally ':LINE'
         (`core/master/master_store.cc`, `node/`, `thrift/client.h:40`): the file or folder must
         exist under the repository root; with ':LINE', the file must have that many lines.
  file   a bare file name with a known extension (`knobs.def`): some file of that name must
         exist in the repository.
  name   a C++ identifier or qualified name, optionally ending in an argument list
         (`RunGet`, `Client::GetTo`, `NodeWorker::RunPromotion()`, `Client::Get(key)`,
         `TaskQueue::kPromotion`): looked up as a whole word (see below).
  other  anything else -- flags (`--json`), shell commands and phrases (`mooncakectl get KEY`),
         expressions (`meta.reads()`), labels (`{reason=...}`) -- is prose and not checked.

Where a name is looked up: the "unit" it appears in is a numbered or lettered step
(`1. ...`, `a. ...`, up to the next step, heading or blank line) or else a paragraph. If the
unit names paths, the name must be found in those files (a named folder stands for its source
files); otherwise anywhere in the sources (*.h, *.cc, *.def, *.thrift, *.py under core node
daemon thrift net cli fuse python etcd). Two exceptions, both looked up anywhere in the
sources: all-lowercase names (knobs such as `promotion_admission_threshold`, metrics such as
`promotion_attempts_total`: each is declared once, in knobs.def or where the metric is
registered, and elsewhere read through generated accessors or as a string). A named file
of any kind counts (a README's names are looked up in the README).

A qualified name `A::B` is found when the text `A::B` occurs, or when the file declares `A`
(class, struct, enum or namespace) and uses `B` -- a method defined inline in its class body
is never written qualified.

Exits 1 listing each stale reference as FILE:LINE: `token` not found (where it looked);
exits 0 with a one-line total otherwise. Run by ctest (doc_references); by hand:
scripts/check_doc_refs.py [FILE.md ...]. Relative arguments are taken from the working
directory; the repository is found from this script's location.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DOCS = [os.path.join(ROOT, "docs", "READING_A_GET.md")]
SOURCE_DIRS = ("core", "node", "daemon", "thrift", "net", "cli", "fuse", "python", "etcd")
SOURCE_EXTENSIONS = (".h", ".cc", ".def", ".thrift", ".py")
# Folders that hold build output, not the repository's files.
SKIP_DIRS = {".git", "build", "build-tsa", "__pycache__"}

CODE_SPAN = re.compile(r"`([^`\n]+)`")
PATH = re.compile(r"^[A-Za-z0-9_.\-]+(?:/[A-Za-z0-9_.\-]*)+(?::(\d+))?$")
BARE_FILE = re.compile(r"^[A-Za-z0-9_.\-]+\.(?:h|cc|def|thrift|py|md|txt|sh|cmake|bats)$")
IDENT = r"~?[A-Za-z_][A-Za-z0-9_]*"
NAME = re.compile(rf"^({IDENT}(?:::{IDENT})*)(?:\(.*\))?$")
STEP = re.compile(r"^\s*(?:\d+|[a-z])\.\s")
HEADING = re.compile(r"^\s*#")
FENCE = re.compile(r"^\s*```")

_text_cache = {}


def read_text(path):
    if path not in _text_cache:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                _text_cache[path] = f.read()
        except OSError:
            _text_cache[path] = ""
    return _text_cache[path]


def walk_files(top, extensions=None):
    for folder, dirs, names in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(names):
            if extensions is None or name.endswith(extensions):
                yield os.path.join(folder, name)


def all_sources():
    out = []
    for d in SOURCE_DIRS:
        out.extend(walk_files(os.path.join(ROOT, d), SOURCE_EXTENSIONS))
    return out


def units(lines):
    """Yields each unit as [(line number, text)]: a step, a paragraph or a heading. Fenced
    blocks are skipped (shell commands, not references)."""
    current = []
    fenced = False
    for number, text in enumerate(lines, 1):
        fence = FENCE.match(text)
        if fence:
            fenced = not fenced
        # A unit ends at a fence, inside a fenced block, at a blank line, at a heading (itself a
        # unit of one line) and before the next step.
        ends = fence or fenced or not text.strip() or HEADING.match(text) or STEP.match(text)
        if ends and current:
            yield current
            current = []
        if fence or fenced or not text.strip():
            continue
        if HEADING.match(text):
            yield [(number, text)]
            continue
        current.append((number, text))
    if current:
        yield current


def classify(token):
    """('path', path, line) | ('file', name) | ('name', name) | None for prose."""
    token = token.strip()
    m = PATH.match(token)
    if m:
        path = token.rsplit(":", 1)[0] if m.group(1) else token
        return ("path", path, int(m.group(1)) if m.group(1) else None)
    if BARE_FILE.match(token) and not NAME.match(token):
        return ("file", token)
    m = NAME.match(token)
    if m:
        return ("name", m.group(1))
    return None


def word_in(text, word):
    return re.search(r"(?<![A-Za-z0-9_])" + re.escape(word) + r"(?![A-Za-z0-9_])", text)


def found_in(text, name):
    if word_in(text, name):
        return True
    if "::" not in name:
        return False
    scope, member = name.rsplit("::", 1)
    outer = scope.split("::")[-1]
    declares = re.search(r"\b(?:class|struct|enum\s+class|enum|namespace)\s+(?:\w+::)*" +
                         re.escape(outer) + r"\b", text)
    return bool(declares) and bool(word_in(text, member))


def check(doc, shown, sources, basenames):
    problems = []
    refs = 0
    lines = read_text(doc).splitlines()
    for unit in units(lines):
        spans = [(n, t) for n, text in unit for t in CODE_SPAN.findall(text)]
        named = []  # the files this unit names, for its names
        for n, token in spans:
            kind = classify(token)
            if kind is None or kind[0] != "path":
                continue
            refs += 1
            path, line = kind[1], kind[2]
            full = os.path.join(ROOT, path)
            if not os.path.exists(full):
                problems.append(f"{shown}:{n}: `{token}` not found (no such path under {ROOT})")
                continue
            if line is not None:
                if os.path.isdir(full) or len(read_text(full).splitlines()) < line:
                    problems.append(f"{shown}:{n}: `{token}` not found ({path} has no line "
                                    f"{line})")
            if os.path.isdir(full):
                named.extend(walk_files(full, SOURCE_EXTENSIONS))
            else:
                named.append(full)
        for n, token in spans:
            kind = classify(token)
            if kind is None or kind[0] == "path":
                continue
            refs += 1
            if kind[0] == "file":
                if kind[1] not in basenames:
                    problems.append(f"{shown}:{n}: `{token}` not found (no file of that name "
                                    f"in the repository)")
                continue
            name = kind[1]
            local = bool(named) and name != name.lower()
            where = named if local else sources
            if any(found_in(read_text(p), name) for p in where):
                continue
            if local:
                looked = ", ".join(os.path.relpath(p, ROOT) for p in where)
            else:
                looked = "the sources under " + " ".join(SOURCE_DIRS)
            problems.append(f"{shown}:{n}: `{token}` not found (looked in {looked})")
    return refs, problems


def main(argv):
    docs = argv or [os.path.relpath(d) for d in DEFAULT_DOCS]
    sources = all_sources()
    basenames = {os.path.basename(p) for p in walk_files(ROOT)}
    total = 0
    problems = []
    for doc in docs:
        if not os.path.isfile(doc):
            problems.append(f"{doc}: no such file")
            continue
        refs, found = check(os.path.abspath(doc), doc, sources, basenames)
        total += refs
        problems.extend(found)
    if problems:
        for p in problems:
            print(p)
        print(f"{len(problems)} stale reference(s) of {total} checked in {len(docs)} file(s)")
        return 1
    print(f"doc references: {total} checked in {len(docs)} file(s), all found")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
