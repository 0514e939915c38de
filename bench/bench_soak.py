# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Soak under process churn (section `soak` of bench/RESULTS.md; bpf/common.bpf.h, "Map
lifetimes"): `bpfsight record -a -t osrt` while tests/workloads/churn forks 50,000 short
children (each 7 sched_get_priority_max, a call nothing else on the machine makes) and a
shell loop runs /bin/true beside it. Every second: the entries in the recorder's `sys_agg`
map (osrt's aggregates) and the recorder's RSS. The aggregates of exited threads are
flushed and deleted, so both must stay flat; every call of the children must be counted.

    python3 bench/run_bench.py --build B --only soak --no-results   # this section alone
"""

import json
import os
import re
import signal
import subprocess
import time

from bench_common import BenchError, block_end, block_head, median, prog_ids

NAME = "soak"
CALLS = 7
SAMPLE_S = 1.0
# Goals: flat means the last samples are not above the early ones by more than this.
RSS_GROWTH_MB = 8
OCC_GROWTH = 2.0  # last third's max occupancy / first third's max (plus the floor below)
OCC_FLOOR = 20_000


def map_id(pid, name):
    """The id of the BPF map NAME that process PID holds."""
    for mid in prog_ids(pid, "map_id"):
        r = subprocess.run(["bpftool", "-j", "map", "show", "id", str(mid)],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            if json.loads(r.stdout).get("name") == name:
                return mid
        except ValueError:
            continue
    return None


def entries(mid):
    r = subprocess.run(["bpftool", "-j", "map", "dump", "id", str(mid)],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        return len(json.loads(r.stdout))
    except ValueError:
        return None


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"^VmRSS:\s+(\d+)", f.read(), re.M).group(1)) / 1024


def run(ctx):
    children = 10_000 if ctx.quick else 50_000
    out = ctx.r.tmpfile(".bst")
    rec_cmd = [ctx.r.bpfsight, "record", "--force", "-a", "-t", "osrt", "-o", out]
    churn_cmd = [os.path.join(ctx.r.build, "tests", "churn"), str(children), str(CALLS), "2",
                 "prio"]
    loop_cmd = ["sh", "-c", "while :; do /bin/true; done"]
    if not os.access(churn_cmd[0], os.X_OK):
        raise BenchError(f"{churn_cmd[0]} is missing: run `make test-build`")
    rec = subprocess.Popen(rec_cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
    for line in rec.stderr:
        if "Ctrl-C" in line:
            break
    if rec.poll() is not None:
        raise BenchError(f"{' '.join(rec_cmd)} exited {rec.returncode}")
    mid = map_id(rec.pid, "sys_agg")
    loop = subprocess.Popen(loop_cmd, start_new_session=True)
    t0 = time.monotonic()
    churn = subprocess.Popen(churn_cmd, stdout=subprocess.DEVNULL)
    samples = []
    while churn.poll() is None:
        samples.append((time.monotonic() - t0, entries(mid) if mid else None,
                        rss_mb(rec.pid)))
        ctx.progress("soak", len(samples), "-", f"{samples[-1][1]} entries, "
                     f"{samples[-1][2]:.1f} MB RSS")
        time.sleep(SAMPLE_S)
    took = time.monotonic() - t0
    os.killpg(loop.pid, signal.SIGKILL)
    loop.wait()
    rec.send_signal(signal.SIGINT)
    tail = rec.stderr.read()
    rec.wait(120)
    if churn.returncode or rec.returncode:
        raise BenchError(f"churn exited {churn.returncode}, recorder {rec.returncode}: "
                         f"{tail[-500:]}")
    meta = ctx.r.json_of([ctx.r.bpfsight, "info", "--json", out])
    rows = ctx.r.json_of([ctx.r.bpfsight, "stats", out, "-r", "osrt_sum", "--format",
                          "json"])["reports"]["osrt_sum"]
    got = sum(r["count"] for r in rows if r["name"] == "sched_get_priority_max")
    return {"children": children, "expected": children * CALLS, "got": got, "took": took,
            "lost": meta["lost"], "samples": samples, "rec": ctx.r.show_cmd(rec_cmd),
            "churn": ctx.r.show_cmd(churn_cmd), "loop": ctx.r.show_cmd(loop_cmd)}


def figures(res):
    s = res["samples"]
    third = max(1, len(s) // 3)
    occ = [x[1] for x in s if x[1] is not None]
    rss = [x[2] for x in s]
    occ_first = max(occ[:third]) if occ else 0
    occ_last = max(occ[-third:]) if occ else 0
    return {"occ_first": occ_first, "occ_last": occ_last, "occ_max": max(occ or [0]),
            "rss_first": rss[0] if rss else 0, "rss_last": rss[-1] if rss else 0,
            "rss_max": max(rss or [0])}


def check_goals(ctx, res, f):
    g = ctx.goals
    return {
        "exact": g.check(NAME, "churn: every call counted, 0 agg_map_full",
                         f"{res['got']:,} of {res['expected']:,}, agg_map_full "
                         f"{res['lost'].get('agg_map_full', 0)}", "all, 0",
                         res["got"] == res["expected"] and
                         not res["lost"].get("agg_map_full")),
        "occ": g.check(NAME, "churn: sys_agg entries, last third vs first third",
                       f"{f['occ_last']:,} vs {f['occ_first']:,}",
                       f"<= {OCC_GROWTH:g}x + {OCC_FLOOR:,}",
                       f["occ_last"] <= OCC_GROWTH * f["occ_first"] + OCC_FLOOR),
        "rss": g.check(NAME, "churn: recorder RSS growth", f"{f['rss_last'] - f['rss_first']:.1f}"
                       f" MB", f"<= {RSS_GROWTH_MB} MB",
                       f["rss_last"] - f["rss_first"] <= RSS_GROWTH_MB),
    }


def text(ctx, res):
    f = figures(res)
    return (f"soak: {res['children']:,} children in {res['took']:.0f} s: "
            f"{res['got']:,} of {res['expected']:,} calls, lost {res['lost'] or 'none'}; "
            f"sys_agg entries first third max {f['occ_first']:,}, last third max "
            f"{f['occ_last']:,}; RSS {f['rss_first']:.1f} -> {f['rss_last']:.1f} MB "
            f"(max {f['rss_max']:.1f})")


def markdown(ctx, res):
    f = figures(res)
    cells = check_goals(ctx, res, f)
    out = block_head(ctx, NAME, "Soak: osrt under process churn")
    out.append("```")
    out.append(f"{res['rec']} &   # then, once it is recording:")
    out.append(f"{res['loop']} &")
    out.append(res["churn"])
    out.append("# every second: `bpftool -j map dump id ID` of the recorder's sys_agg map "
               "(entries), VmRSS of the recorder; at the end SIGINT, `info --json`, "
               "`stats -r osrt_sum`")
    out.append("```")
    out.append("")
    out.append(f"{res['children']:,} children in {res['took']:.0f} s, {len(res['samples'])} "
               f"samples.")
    out.append("")
    out.append("| figure | value | goal |")
    out.append("|---|---|---|")
    out.append(f"| sched_get_priority_max counted (of {res['expected']:,}) | {res['got']:,} "
               f"| {cells['exact']} |")
    out.append(f"| losses | {res['lost'] or 'none'} | |")
    out.append(f"| sys_agg entries, max of first / last third | {f['occ_first']:,} / "
               f"{f['occ_last']:,} (max {f['occ_max']:,}) | {cells['occ']} |")
    out.append(f"| recorder RSS first / last / max | {f['rss_first']:.1f} / "
               f"{f['rss_last']:.1f} / {f['rss_max']:.1f} MB | {cells['rss']} |")
    out.append("")
    occ = [x[1] for x in res["samples"]]
    out.append("Entries per second: " + ", ".join(f"{x:,}" if x is not None else "?"
                                                    for x in occ))
    out.append("")
    meaning = (f"the aggregates of exited threads leave the map within about a second "
               f"(median {median([x for x in occ if x is not None] or [0]):,.0f} entries "
               f"while {res['children'] / max(res['took'], 1):,.0f} processes a second "
               f"came and went), so the map holds the live threads' keys and a second of "
               f"churn, not every thread ever seen; the recorder's memory stays flat.")
    return block_end(ctx, NAME, out, meaning)
