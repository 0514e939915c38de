#!/usr/bin/env python3
"""Following ring records through the code, as they really go: a build of bpfsight compiled
with -finstrument-functions (tools/record_follow.c writes every function a followed call
enters), a real recording, and for each record the driver's callback took, the files of user/
it entered and how often it climbed up a floor of docs/ARCHITECTURE.md's "Layers" section
(tools/record_path.py's floors: a call from a file on one floor into one above it). Function
pointers are followed too (the families' hooks, where records go): it is the run's own path.

  tools/record_follow.py [--root DIR] [--doc FILE] [--workload CMD...] [-n N] [-v]

It builds ROOT's bpfsight into ROOT/build-follow (make OUT=build-follow), records the
workload (default: build/tests/cuda/cuda_api_shared 3, with the default families) as root,
and prints, over the first N records (default 2000): records followed, files entered per
record (median, mean, max), climbs per record, and the commonest paths. lib/ is left out: the
floor everything stands on.
"""
import argparse
import collections
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from record_path import floor_of, floors  # noqa: E402

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build(root):
    out = os.path.join(root, "build-follow")
    os.makedirs(out, exist_ok=True)
    obj = os.path.join(out, "record_follow.o")
    subprocess.run(["gcc", "-O2", "-c", os.path.join(HERE, "tools", "record_follow.c"),
                    "-o", obj], check=True)
    cflags = ("-g -O1 -fno-inline-functions-called-once -finstrument-functions "
              "-finstrument-functions-exclude-file-list=user/lib/,/usr/include")
    subprocess.run(["make", "-s", f"OUT={out}", f"CFLAGS={cflags}", "WARN=-w",
                    f"LDFLAGS=-static {obj}", f"{out}/bpfsight"], cwd=root, check=True,
                   stdout=subprocess.DEVNULL)
    return os.path.join(out, "bpfsight")


def symbol(binary, name):
    nm = subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout
    for line in nm.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == name:
            return parts[0]
    raise SystemExit(f"no {name} in {binary}")


def files_of(binary, addrs, root):
    """{address: the user/ file it is in (relative), or None}."""
    p = subprocess.run(["addr2line", "-f", "-e", binary] + list(addrs), capture_output=True,
                       text=True, check=True)
    lines = p.stdout.splitlines()
    out = {}
    for i, a in enumerate(addrs):
        path = lines[2 * i + 1].split(":")[0]
        rel = os.path.relpath(path, root) if path.startswith("/") else path
        out[a] = rel if rel.startswith("user/") else None
    return out


def spans(path):
    cur = None
    with open(path) as f:
        for line in f:
            if line.startswith("R"):
                cur = []
            elif line.startswith("E") and cur is not None:
                cur.append(("E", line.split()[1]))
            elif line.startswith("L") and cur is not None:
                cur.append(("L", None))
            elif line.startswith("X") and cur is not None:
                yield cur
                cur = None


def follow(root, workload, n, fl):
    binary = build(root)
    root_fn = symbol(binary, "on_record")
    with tempfile.TemporaryDirectory() as d:
        trace, out = os.path.join(d, "follow.txt"), os.path.join(d, "t.bst")
        env = dict(os.environ, BPFSIGHT_FOLLOW_FN=root_fn, BPFSIGHT_FOLLOW_OUT=trace,
                   BPFSIGHT_FOLLOW_N=str(n))
        subprocess.run([binary, "record", "-o", out, "--", *workload], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        recs = list(spans(trace))
    addrs = sorted({a for r in recs for k, a in r if k == "E"})
    where = files_of(binary, addrs, root)
    driver = files_of(binary, [root_fn], root)[root_fn]
    per, climbs, paths = [], [], collections.Counter()
    for r in recs:
        stack, entered, up = [driver], [driver], 0
        for k, a in r:
            if k == "L":
                stack.pop()
                continue
            f = where.get(a) or stack[-1]  # a function outside user/ stays in its caller's
            here = stack[-1]
            if f != here and not f.startswith("user/lib/"):
                a_fl, b_fl = floor_of(here, fl), floor_of(f, fl)
                if a_fl is not None and b_fl is not None and b_fl > a_fl:
                    up += 1
                if f not in entered:
                    entered.append(f)
            stack.append(f)
        per.append(len(entered))
        climbs.append(up)
        paths[tuple(entered)] += 1
    return per, climbs, paths


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=HERE, help="the checkout (default: this one)")
    ap.add_argument("--doc", help="the layers table (default: this checkout's ARCHITECTURE.md)")
    ap.add_argument("--workload", nargs="+",
                    default=[os.path.join(HERE, "build/tests/cuda/cuda_api_shared"), "3"])
    ap.add_argument("-n", type=int, default=2000, help="records to follow (default 2000)")
    ap.add_argument("-v", action="store_true", help="the commonest paths, file by file")
    args = ap.parse_args()
    fl = floors(args.doc or os.path.join(HERE, "docs", "ARCHITECTURE.md"))
    per, climbs, paths = follow(os.path.abspath(args.root), args.workload, args.n, fl)
    if not per:
        raise SystemExit("no record followed")
    print(f"{len(per)} records followed from the driver's on_record: files entered per "
          f"record median {statistics.median(per):g}, mean {statistics.mean(per):.1f}, max "
          f"{max(per)}; climbs up a floor per record mean {statistics.mean(climbs):.2f}, max "
          f"{max(climbs)}, {sum(climbs)} in all (lib/ left out)")
    for path, count in paths.most_common(5 if args.v else 1):
        print(f"  {count} records: {len(path)} files: " + " > ".join(
            p.split("/", 1)[1] for p in path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
