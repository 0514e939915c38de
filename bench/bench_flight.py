# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The flight recorder (section `flight` of bench/RESULTS.md; docs/PRODUCTION.md):

- CPU: the recorder's own CPU time while bench/loadgen makes ~1 M getppid/s (osrt, every
  call a record: --osrt-threshold 0), plain `record` against `record --flight-recorder`,
  alternating, same load; ratio flight / plain per pair.
- Dump latency: a window of 60 s (10 s in --quick) filled at 200 k events/s, then SIGUSR1:
  from the signal to the dump's "wrote" line (the file closed and fsync'ed).
- Soak: a small SIZE (1M: full after ~10 s) at ~100 k events/s, a SIGUSR1 every second
  (no cool-down, no limit): the recorder's RSS every second must stay flat, the flight
  recorder's own memory under SIZE, every dump written.

    python3 bench/run_bench.py --build B --only flight   # this section alone
    BPFSIGHT_FLIGHT_SOAK_S=3600 python3 bench/run_bench.py --build B --only flight
                                                          # the longer soak (an hour)
"""

import os
import re
import signal
import subprocess
import time

from bench_common import BenchError, block_end, block_head, fmt_spread, median

NAME = "flight"
RATE = 1_000_000
SOAK_RATE = 100_000
SOAK_SIZE = "1M"
RSS_GROWTH_MB = 4
CPU_RATIO_GOAL = 1.25


def proc_cpu_s(pid):
    """utime + stime of PID itself (not its children), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"^VmRSS:\s+(\d+)", f.read(), re.M).group(1)) / 1024


class Rec:
    """A recorder on a loadgen that waits for its cue (-p), stderr read line by line."""

    def __init__(self, ctx, opts, load, env=None):
        self.load = subprocess.Popen([ctx.r.bench_bin("loadgen"), *load, "--wait-stdin"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env)
        self.out = ctx.r.tmpfile(".bst")
        self.cmd = [ctx.r.bpfsight, "record", "--force", "-t", "osrt", "--osrt-threshold", "0",
                    "--buffer-size", "64M", "-o", self.out, "-p", str(self.load.pid), *opts]
        self.p = subprocess.Popen(self.cmd, stderr=subprocess.PIPE, text=True)
        self.lines = []
        for line in self.p.stderr:
            self.lines.append(line)
            if "Ctrl-C" in line:
                break
        if self.p.poll() is not None:
            raise BenchError(f"{' '.join(self.cmd)}: {''.join(self.lines)[-400:]}")

    def go(self):
        self.load.stdin.write("x")
        self.load.stdin.close()

    def until(self, what, eof_ok=False):
        """Read stderr until a line has WHAT; returns (line, monotonic time it came), or
        None at the end of the recording when EOF_OK."""
        for line in self.p.stderr:
            self.lines.append(line)
            if what in line:
                return line, time.monotonic()
        if eof_ok:
            return None
        raise BenchError(f"no '{what}' from the recorder: {''.join(self.lines)[-400:]}")

    def finish(self):
        if self.load.poll() is None:
            self.load.kill()
        self.load.wait()
        self.lines += self.p.stderr.readlines()
        self.p.wait(120)
        return "".join(self.lines)


TRIGGER = ["--trigger", "osrt:nanosleep>1s"]  # decodes every getppid record, never fires


def cpu_pair(ctx, flight, seconds, extra=()):
    r = Rec(ctx, (["--flight-recorder", "60s"] if flight else []) + list(extra),
            ["-t", "2", "-d", str(seconds), "-r", str(RATE)])
    c0 = proc_cpu_s(r.p.pid)
    r.go()
    made = r.load.stdout.read()
    r.load.wait()
    cpu = proc_cpu_s(r.p.pid) - c0
    err = r.finish()
    calls = int(re.search(r'"calls":\s*(\d+)', made).group(1))
    lost = re.search(r"(\d+) events lost", err)
    return {"cpu": cpu, "calls": calls, "lost": int(lost.group(1)) if lost else None,
            "cmd": ctx.r.show_cmd(r.cmd, {r.out: "T.bst", str(r.load.pid): "PID"})}


def latency(ctx, window_s):
    r = Rec(ctx, ["--flight-recorder", f"{window_s}s,1G"],
            ["-t", "1", "-d", str(window_s + 30), "-r", "200000"])
    r.go()
    time.sleep(window_s + 2)
    t0 = time.monotonic()
    r.p.send_signal(signal.SIGUSR1)
    line, t1 = r.until("flight recorder: wrote")
    m = re.search(r"wrote (\S+): ([\d.]+) s, (\d+) records.* in (\d+) ms", line)
    size = os.path.getsize(m.group(1))
    err = r.finish()
    return {"ms": (t1 - t0) * 1000, "inner_ms": int(m.group(4)), "window": float(m.group(2)),
            "records": int(m.group(3)), "bytes": size, "cmd": ctx.r.show_cmd(
                r.cmd, {r.out: "T.bst", str(r.load.pid): "PID"}), "tail": err[-200:]}


def soak(ctx, seconds):
    r = Rec(ctx, ["--flight-recorder", f"60s,{SOAK_SIZE}", "--trigger-cooldown", "0s",
                  "--max-dumps", "0"], ["-t", "1", "-d", str(seconds), "-r", str(SOAK_RATE)])
    r.go()
    rss = []
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds - 1:
        time.sleep(1)
        rss.append(rss_mb(r.p.pid))
        r.p.send_signal(signal.SIGUSR1)
        if not r.until("flight recorder: wrote", eof_ok=True):
            rss.pop()  # the load ended first: the recording with it
            break
        ctx.progress("flight soak", len(rss), "-", f"{rss[-1]:.1f} MB RSS")
    err = r.finish()
    held = float(re.search(r"at most ([\d.]+) MiB held", err).group(1))
    dumps = int(re.search(r"(\d+) dumps written, (\d+) failed", err).group(1))
    return {"rss": rss, "held": held, "dumps": dumps, "asked": len(rss),
            "cmd": ctx.r.show_cmd(r.cmd, {r.out: "T.bst", str(r.load.pid): "PID"})}


def run(ctx):
    seconds = 2 if ctx.quick else 5
    pairs = []
    for _ in range(2 if ctx.quick else 3):
        plain = cpu_pair(ctx, False, seconds)
        fl = cpu_pair(ctx, True, seconds)
        fl["trig"] = cpu_pair(ctx, True, seconds, TRIGGER)
        pairs.append((plain, fl))
        ctx.progress("flight cpu", len(pairs), "-", f"plain {plain['cpu']:.2f} s, flight "
                     f"{fl['cpu']:.2f} s")
    lat = latency(ctx, 10 if ctx.quick else 60)
    sk = soak(ctx, int(os.environ.get("BPFSIGHT_FLIGHT_SOAK_S", 10 if ctx.quick else 40)))
    return {"pairs": pairs, "latency": lat, "soak": sk, "seconds": seconds}


def per_mcall(run):
    """The recorder's CPU seconds per million calls of the load."""
    return run["cpu"] / run["calls"] * 1e6 if run["calls"] else None


def figures(res):
    ratios = [per_mcall(f) / per_mcall(p) for p, f in res["pairs"] if p["cpu"] > 0 and
              p["calls"] and f["calls"]]
    trig = [per_mcall(f["trig"]) / per_mcall(p) for p, f in res["pairs"] if p["cpu"] > 0 and
            p["calls"] and f["trig"]["calls"]]
    rss = res["soak"]["rss"]
    third = max(1, len(rss) // 3)
    return {"ratios": ratios, "ratio": median(ratios), "trig": trig,
            "rss_first": max(rss[:third]), "rss_last": max(rss[-third:])}


def check_goals(ctx, res, f):
    g, s = ctx.goals, res["soak"]
    return {
        "cpu": g.check(NAME, "flight recorder CPU per event / plain record's",
                       f"{f['ratio']:.2f}x", f"<= {CPU_RATIO_GOAL}x",
                       f["ratio"] <= CPU_RATIO_GOAL),
        "lat": g.check(NAME, f"dump latency, {res['latency']['window']:.0f} s window",
                       f"{res['latency']['ms']:.0f} ms", "<= 2000 ms",
                       res["latency"]["ms"] <= 2000),
        "rss": g.check(NAME, "soak: recorder RSS growth (max of last third - first third)",
                       f"{f['rss_last'] - f['rss_first']:.1f} MB", f"<= {RSS_GROWTH_MB} MB",
                       f["rss_last"] - f["rss_first"] <= RSS_GROWTH_MB),
        "held": g.check(NAME, "soak: flight recorder memory, at most", f"{s['held']:.1f} MiB",
                        f"<= {SOAK_SIZE}", s["held"] <= int(SOAK_SIZE[:-1])),
        "dumps": g.check(NAME, "soak: every dump asked for written",
                         f"{s['dumps']} of {s['asked']}", "all", s["dumps"] == s["asked"]),
    }


def text(ctx, res):
    f = figures(res)
    lat, s = res["latency"], res["soak"]
    return (f"flight: CPU flight/plain {f['ratio']:.2f}x; dump of {lat['window']:.0f} s "
            f"({lat['records']:,} records) in {lat['ms']:.0f} ms; soak {s['dumps']} dumps, "
            f"RSS {f['rss_first']:.1f} -> {f['rss_last']:.1f} MB, held <= {s['held']} MiB")


def markdown(ctx, res):
    f = figures(res)
    cells = check_goals(ctx, res, f)
    lat, s, pairs = res["latency"], res["soak"], res["pairs"]
    out = block_head(ctx, NAME, "Flight recorder")
    out.append("```")
    out.append(f"# CPU, {len(pairs)} rounds alternating (plain, flight, flight + trigger), the recorder's own utime+stime while "
               f"loadgen runs ({res['seconds']} s paced at 1 M calls/s, 2 threads; what "
               f"they reach traced is below):")
    out.append(pairs[0][0]["cmd"])
    out.append(pairs[0][1]["cmd"])
    out.append(pairs[0][1]["trig"]["cmd"])
    out.append(f"# latency: {lat['window']:.0f} s of 200 k calls/s, then `kill -USR1` until "
               f"the 'wrote' line:")
    out.append(lat["cmd"])
    out.append(f"# soak: {len(s['rss'])} s at 100 k calls/s, `kill -USR1` and VmRSS every "
               f"second:")
    out.append(s["cmd"])
    out.append("```")
    out.append("")
    out.append("| figure | value | goal |")
    out.append("|---|---|---|")
    out.append(f"| recorder CPU, plain record | "
               f"{fmt_spread([p['cpu'] for p, _ in pairs], ' s', 2)} | |")
    out.append(f"| recorder CPU, --flight-recorder 60s | "
               f"{fmt_spread([q['cpu'] for _, q in pairs], ' s', 2)} | |")
    out.append(f"| CPU per million calls (plain, flight) | "
               f"{fmt_spread([per_mcall(p) for p, _ in pairs], ' s', 3)}, "
               f"{fmt_spread([per_mcall(q) for _, q in pairs], ' s', 3)} | |")
    out.append(f"| ratio per pair (CPU per call) | {' '.join(f'{x:.2f}' for x in f['ratios'])} "
               f"(median {f['ratio']:.2f}x) | {cells['cpu']} |")
    out.append(f"| with {' '.join(TRIGGER)} (each getppid record decoded, none fires): "
               f"ratio per run | {' '.join(f'{x:.2f}' for x in f['trig'])} (median "
               f"{median(f['trig']):.2f}x) | |")
    out.append(f"| calls made per run (plain, flight) | "
               f"{fmt_spread([p['calls'] for p, _ in pairs])}, "
               f"{fmt_spread([q['calls'] for _, q in pairs])} | |")
    out.append(f"| events lost (plain, flight) | {[p['lost'] for p, _ in pairs]}, "
               f"{[q['lost'] for _, q in pairs]} | |")
    out.append(f"| dump latency, SIGUSR1 to the file closed | {lat['ms']:.0f} ms "
               f"(recorder's own timing {lat['inner_ms']} ms) | {cells['lat']} |")
    out.append(f"| that dump | {lat['window']:.1f} s, {lat['records']:,} records, "
               f"{lat['bytes'] / 1048576:.1f} MiB | |")
    out.append(f"| soak: dumps | {s['dumps']} of {s['asked']} | {cells['dumps']} |")
    out.append(f"| soak: recorder RSS first third / last third (max) | {f['rss_first']:.1f} / "
               f"{f['rss_last']:.1f} MB | {cells['rss']} |")
    out.append(f"| soak: flight recorder memory (chunks + metadata), at most | "
               f"{s['held']:.1f} MiB | {cells['held']} |")
    out.append("")
    out.append("RSS per second: " + ", ".join(f"{x:.1f}" for x in s["rss"]))
    out.append("")
    meaning = ("keeping the window in memory costs about what writing it to a file costs "
               "(the same encoding and compression, no write()); a dump copies the window's "
               "compressed chunks and cuts only the oldest one, so even a full minute is "
               "written in well under a second; hundreds of dumps leave the memory flat and "
               "the window within its SIZE.")
    return block_end(ctx, NAME, out, meaning)
