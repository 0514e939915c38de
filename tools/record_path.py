#!/usr/bin/env python3
"""How far one ring-buffer record travels: the files the recording's record callback reaches,
and how often the way climbs back up the floors of docs/ARCHITECTURE.md's "Layers" section.

The call graph is the compiler's own: every C file of user/ compiled by gcc with
-fcallgraph-info (at -O0, so that no function disappears into its caller), direct calls only
(a call through a function pointer, a family's hook, ends there: gcc cannot see its target).
From the roots (by default the session driver's on_record, and write_out, where record_ctx__write
sends records through a pointer: the sink, the flight window, the capture files, the writer), a
depth-first walk takes each call once per function, in the order the code makes them, and
counts:
  files      the files of user/ it enters, lib/ (the floor everything stands on) left out;
  climbs     calls from a file on one floor into a file on a floor above it (the floors in the
             order of the layers table: lib, core, then the services in their row's order,
             family, registry, session, commands, cli), lib/ left out;
  re-entries calls into a file entered before, from another file, lib/ left out.
The old tree (before the session driver) had its driver in user/record/: its floor is
record's, so its calls into the services above are climbs, which is the point.

  tools/record_path.py [--root DIR] [--build DIR] [--doc FILE] [--root-fn FILE:FUNCTION] [-v]
"""
import argparse
import collections
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

NODE = re.compile(r'node: \{ title: "([^"]+)" label: "([^"\\]+)\\n')
EDGE = re.compile(r'edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"')
TICKS = re.compile(r"`([^`]+)`")
FLOOR_ROWS = ("lib", "core", "services", "family", "registry", "session", "commands", "cli")


def floors(doc):
    """{folder: floor number}, from the layers table: rows in FLOOR_ROWS' order, a row's
    folders in its own order when it is ordered (the services)."""
    out, n, rows = {}, 0, {}
    inside = False
    with open(doc) as f:
        for line in f:
            if line.startswith("## "):
                inside = line.startswith("## Layers")
            if not inside or not line.startswith("| "):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 3 and cells[0] in FLOOR_ROWS:
                rows[cells[0]] = (TICKS.findall(cells[1]), "earlier folders" in cells[2])
    for row in FLOOR_ROWS:
        folders, ordered = rows.get(row, ([], False))
        for f in folders:
            out[f] = n
            n += ordered
        n += not ordered or not folders
    return out


def floor_of(path, fl):
    """The floor of a file user/FOLDER/..., or None outside user/."""
    parts = path.split("/")
    if parts[0] != "user" or len(parts) < 3:
        return None
    folder = "/".join(parts[1:-1])
    if folder in fl:
        return fl[folder]
    if folder.startswith("families/") and "families/*" in fl:
        return fl["families/*"]
    return fl.get(parts[1])


def compile_graph(root, build, out):
    """Every user/ C file compiled with -fcallgraph-info into OUT; returns the .ci files."""
    incs = sorted({os.path.dirname(p) for p in glob.glob(os.path.join(root, "user/*/*.c")) +
                   glob.glob(os.path.join(root, "user/*/*/*.c"))})
    flags = ["-O0", "-std=gnu11", "-D_GNU_SOURCE", "-w", "-I" + build,
             "-I" + os.path.join(root, "bpf"), '-DBPFSIGHT_VERSION="x"', "-fcallgraph-info"]
    for d in incs:
        flags += ["-iquote", d]
    srcs = sorted(glob.glob(os.path.join(root, "user/*/*.c")) +
                  glob.glob(os.path.join(root, "user/*/*/*.c")))

    def one(src):
        rel = os.path.relpath(src, root)
        base = os.path.join(out, rel.replace("/", "_")[:-2])
        cmd = ["gcc"] + flags + ["-c", rel, "-o", base + ".o", "-dumpbase", base + ".c"]
        p = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
        if p.returncode:
            raise SystemExit(f"{' '.join(map(shlex.quote, cmd))}:\n{p.stderr}")
        return base + ".c.ci"

    with ThreadPoolExecutor(os.cpu_count() or 2) as ex:
        return list(ex.map(one, srcs))


def load(cis):
    """({function: its file}, {function: [callees in call order]})."""
    defs, calls = {}, collections.defaultdict(list)
    for ci in cis:
        tu = None
        with open(ci) as f:
            for line in f:
                if line.startswith("graph:"):
                    tu = line.split('"')[1]
                    continue
                m = NODE.match(line)
                if m and "shape : ellipse" not in line:
                    defs[m.group(1)] = tu
                    continue
                m = EDGE.match(line)
                if m:
                    calls[m.group(1)].append(m.group(2))
    return defs, calls


def walk(defs, calls, roots, fl):
    files, climbs, reentries = [], [], []
    seen = set()
    sys.setrecursionlimit(100000)

    def visit(fn):
        seen.add(fn)
        here = defs[fn]
        for callee in calls.get(fn, ()):
            if callee not in defs:
                continue  # outside user/: libc, libbpf
            there = defs[callee]
            if there != here and not there.startswith("user/lib/"):
                a, b = floor_of(here, fl), floor_of(there, fl)
                if a is not None and b is not None and b > a:
                    climbs.append((here, fn, there, callee))
                if there in files:
                    reentries.append((here, there))
                else:
                    files.append(there)
            if callee not in seen:
                visit(callee)

    for root in roots:
        if defs[root] not in files:
            files.append(defs[root])
        visit(root)
    return files, climbs, reentries


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--root", default=here, help="the checkout (default: this one)")
    ap.add_argument("--build", help="where the skeletons are (default: ROOT/build)")
    ap.add_argument("--doc", help="the layers table (default: this checkout's ARCHITECTURE.md)")
    ap.add_argument("--root-fn", action="append", help="FILE:FUNCTION to start from, "
                    "repeatable (default: the driver's on_record, and where records go when "
                    "the context writes through a pointer: the session's write_out; in an old "
                    "tree, user/record/recorder.c's on_record)")
    ap.add_argument("-v", action="store_true", help="list the files and the climbs")
    args = ap.parse_args()
    fl = floors(args.doc or os.path.join(here, "docs", "ARCHITECTURE.md"))
    with tempfile.TemporaryDirectory() as tmp:
        defs, calls = load(compile_graph(args.root, args.build or
                                         os.path.join(args.root, "build"), tmp))
    roots = args.root_fn
    if not roots:
        roots = [r for r in ("user/session/recorder.c:on_record",
                             "user/session/recorder_output.c:write_out",
                             "user/record/recorder.c:on_record") if r in defs]
    for root in roots or ["(none)"]:
        if root not in defs:
            raise SystemExit(f"no function {root} in the call graph")
    files, climbs, reentries = walk(defs, calls, roots, fl)
    root = " + ".join(roots)
    entered = [f for f in files if not f.startswith("user/lib/")]
    if args.v:
        print("files:\n  " + "\n  ".join(entered))
        print("climbs:")
        for a, fa, b, fb in climbs:
            print(f"  {a} ({fa.split(':')[-1]}) -> {b} ({fb.split(':')[-1]})")
        print("re-entered:", dict(collections.Counter(b for _, b in reentries).most_common()))
    print(f"record path from {root}: {len(entered)} files entered, {len(climbs)} climbs up a "
          f"floor, {len(reentries)} re-entries (lib/ left out; direct calls)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
