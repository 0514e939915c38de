# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What a traced call is made of (part of section `probes` of bench/RESULTS.md).

The kernel's BPF stats (sysctl kernel.bpf_stats_enabled) time every run of a program. On
the cudaStreamQuery loop (bench/cuda_loop), bench/floor --body NAME attaches entry and
return programs that each do one thing (bench/floor.bpf.c's probe bodies: a clock read, a
helper, a map lookup, a ring-buffer record, a user-memory read), and bpfsight records the
same loop with -t cuda; each program's ns per run minus the empty body's is what that part
costs, the stats' own two clock reads per run cancelling out. Stats are on only while this
runs, and put back as they were.

    python3 bench/bench_parts.py [--build build] [--rounds N]
"""

import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_common import BenchError, Runner, fmt_spread, median, prog_ids  # noqa: E402

STATS = "/proc/sys/kernel/bpf_stats_enabled"
# (body, what it is in bpfsight's programs); "empty" first: the baseline.
PARTS = [
    ("empty", "an empty program (the baseline, subtracted from every other row)"),
    ("ktime", "`bpf_ktime_get_ns`: the entry time, and the return time"),
    ("pid", "`bpf_get_current_pid_tgid`: the tid that finds the thread's slot"),
    ("cookie", "`bpf_get_attach_cookie`: which function, what to copy (entry)"),
    ("array", "an array-map lookup (inlined): the thread's slot"),
    ("task", "`bpf_get_current_task_btf` and a load: the task, for task storage"),
    ("tstore", "`bpf_task_storage_get`: a thread's stack without a slot"),
    ("rbuf", "`bpf_ringbuf_reserve` + `bpf_ringbuf_submit` of a 152-byte record (return)"),
    ("query", "`bpf_ringbuf_query`: whether to wake the consumer (every 16th record)"),
    ("read8", "`bpf_probe_read_user` of 8 bytes: an out value (return)"),
    ("read48", "`bpf_probe_read_user` of 48 bytes: the stack argument words (entry)"),
]
BPFSIGHT = [("ucall_entry", "bpfsight's entry program (bpf/ucall.bpf.h)"),
            ("ucall_return", "bpfsight's return program")]


def prog_stats(r, pid):
    """{name: (run_time_ns, run_cnt)} of the programs of PID that ran."""
    out = {}
    for i in prog_ids(pid):
        p = r.json_of(["bpftool", "prog", "show", "id", str(i), "--json"], check=False)
        if p.get("run_cnt"):
            out[p["name"]] = (p["run_time_ns"], p["run_cnt"])
    return out


def sample(r, cmd, settle):
    """Run CMD (a loader of programs, which runs the loop), read its programs' stats
    SETTLE s in, while the loop runs; {name: ns per run}."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(settle)
        st = prog_stats(r, p.pid)
    finally:
        _, err = p.communicate(timeout=120)
    if p.returncode:
        raise BenchError(f"{' '.join(cmd)} exited {p.returncode}: {err.strip()[-800:]}")
    return {n: t / c for n, (t, c) in st.items()}


def measure(r, lib, rounds, loop_ms=900, settle=0.7):
    """{part: [ns per call, one per round]}, configurations interleaved round by round: a
    body's entry and return program together (one of them does the part, once per call)."""
    loop = [r.bench_bin("cuda_loop"), "-m", str(loop_ms), "-r", "1", "streamquery"]
    with open(STATS) as f:
        was = f.read().strip()
    vals = {name: [] for name, _ in PARTS + BPFSIGHT}
    cmds = {}
    try:
        with open(STATS, "w") as f:
            f.write("1")
        for _ in range(rounds):
            for body, _ in PARTS:
                cmd = [r.bench_bin("floor"), "--body", body, "-u", f"{lib}:cudaStreamQuery",
                       "--"] + loop
                got = sample(r, cmd, settle)
                if len(got) != 2:
                    raise BenchError(f"{' '.join(cmd)}: programs that ran: {got}")
                vals[body].append(sum(got.values()))
                cmds["floor"] = r.show_cmd(cmd).replace(f"--body {body}", "--body NAME")
            trace = r.tmpfile(".bst")
            cmd = [r.bpfsight, "record", "--force", "-o", trace, "-t", "cuda", "--"] + loop
            got = sample(r, cmd, settle)
            for name, _ in BPFSIGHT:
                vals[name].append(got.get(name))
            cmds["bpfsight"] = r.show_cmd(cmd)
            os.unlink(trace)
    finally:
        with open(STATS, "w") as f:
            f.write(was)
    # bpfsight's programs one by one, against an empty one (half the empty pair).
    base = {n: median(vals["empty"]) / (2 if n in dict(BPFSIGHT) else 1) for n in vals}
    added = {n: [v - base[n] for v in vs if v is not None] for n, vs in vals.items()}
    return {"raw": vals, "added": added, "commands": cmds, "rounds": rounds}


def part(res, name):
    return median(res["added"][name])


def markdown(res):
    """The subsection of the probes block."""
    out = ["### What a traced call is made of", ""]
    out.append(f"The kernel's BPF stats (`kernel.bpf_stats_enabled`, on only meanwhile) on the "
               f"same cudaStreamQuery loop, {res['rounds']} rounds interleaved: "
               f"`bench/floor --body NAME` attaches entry and return programs that each do one "
               f"part of what bpfsight's do (bench/floor.bpf.c), and bpfsight records the loop "
               f"as above; each part runs once per call. ns per call above the empty pair's "
               f"({fmt_spread(res['raw']['empty'], ' ns')} for its entry and return program: "
               f"the stats' own two clock reads per run and the dispatch), and bpfsight's "
               f"programs above one empty program each (bench/bench_parts.py):")
    out.append("")
    out.append("```")
    for c, cmd in res["commands"].items():
        out.append(f"# {c}\n{cmd}")
    out.append("```")
    out.append("")
    out.append("| part | ns per call above empty |")
    out.append("|---|---|")
    for name, desc in PARTS[1:] + BPFSIGHT:
        out.append(f"| {desc} | {fmt_spread(res['added'][name], ' ns')} |")
    out.append("")
    out.append(composition(res))
    return out


def composition(res):
    """What ucall_entry and ucall_return add up to, from the parts."""
    k, p, c, a, rb = (part(res, n) for n in ("ktime", "pid", "cookie", "array", "rbuf"))
    e, r = part(res, "ucall_entry"), part(res, "ucall_return")
    if None in (k, p, c, a, rb, e, r):
        return "Some parts did not run: no composition."
    ent = k + p + c + a
    ret = k + p + a + rb
    return (f"A call of a function with at most 6 argument words and nothing to read at return "
            f"(cudaStreamQuery) costs bpfsight {e + r:.0f} ns of program time: entry "
            f"{e:.0f} ns (its parts measured alone: clock read {k:.0f}, tid {p:.0f}, cookie "
            f"{c:.0f}, slot lookup {a:.0f}: {ent:.0f} ns; alone, each also pays a store and "
            f"its own pipeline stalls), return {r:.0f} ns (clock read, tid, slot and the "
            f"ring-buffer record: {ret:.0f} ns; the rest copies the arguments and fills the "
            f"record). Two clock reads alone are {2 * k:.0f} ns and the record {rb:.0f} ns. A "
            f"function with stack arguments adds the 48-byte user read "
            f"({part(res, 'read48'):.0f} ns) at entry, one with an out value the 8-byte one "
            f"({part(res, 'read8'):.0f} ns) at return.")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_parts: needs root (BPF, bpf_stats_enabled)")
    r = Runner(args.build)
    try:
        from bench_probes import library_of
        lib = library_of(r.bench_bin("cuda_loop"), "libcudart.so")
        res = measure(r, lib, args.rounds)
    except BenchError as e:
        sys.exit(f"bench_parts: {e}")
    finally:
        r.cleanup()
    print("\n".join(markdown(res)))


if __name__ == "__main__":
    main()
