"""bpfsight report's page answers first (issue 44): the verdict on top, equal to stats', the
headline figures, info folded as tables; human units in every table; nothing wider than a
laptop. Pages are opened in Debian's chromium (headless), several at once in frames of one
page, so that the real traces cost one browser start."""
import json
import os
import re

from helpers import BPFSIGHT, check, eq, need_root, record, run, tmpdir

import helpers
from test_report import TRACES, VIEWPORT, browse, chromium

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 15

PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "page_probe.js")


def real_traces():
    if not os.path.isdir(TRACES):
        raise helpers.Skip(f"no {TRACES} (the real traces)")
    # The .ndjson.zst files there are dump's output, not traces bpfsight reads.
    return sorted(os.path.join(TRACES, t) for t in os.listdir(TRACES) if t.endswith(".bst"))


def pages(traces, args=None):
    """Each trace's page as chromium shows it, all in one start: {trace: what page_probe.js
    saw}, after checking the console."""
    d = tmpdir()
    frames = []
    for i, t in enumerate(traces):
        out = os.path.join(d, f"p{i}.html")
        p = run([BPFSIGHT, "report", t, "-o", out])
        eq(p.returncode, 0, f"report {t}: {p.stderr[-400:]}")
        frames.append(f'<iframe name="p{i}" src="p{i}.html" width="{VIEWPORT}" height="900">'
                      "</iframe>")
    with open(PROBE) as f:
        js = f.read().replace("PROBE_ARGS", json.dumps(args))
    wrap = os.path.join(d, "all.html")
    with open(wrap, "w") as f:
        f.write("<!DOCTYPE html><html><body style=\"margin:0\">" + "".join(frames) +
                f"<script>window.addEventListener('load', function () {{{js}}});</script>"
                "</body></html>")
    dom, console = browse(wrap, "--dump-dom", "--allow-file-access-from-files")
    eq(console, [], "console messages")
    m = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    check(m, "the probe ran")
    import html
    seen = json.loads(html.unescape(m.group(1)))
    return {t: seen[f"p{i}"] for i, t in enumerate(traces)}


# {trace: stats --format json's reports}, {trace: info --json}: each asked once per trace,
# however many checks read it (check_units and check_families, the figures and the bands).
_reports, _infos = {}, {}


def stats_reports(trace):
    if trace not in _reports:
        _reports[trace] = json.loads(run([BPFSIGHT, "stats", trace, "--format", "json"],
                                         check=True).stdout)["reports"]
    return _reports[trace]


def info_json(trace):
    if trace not in _infos:
        _infos[trace] = json.loads(run([BPFSIGHT, "info", "--json", trace], check=True).stdout)
    return _infos[trace]


def stats_verdict(trace):
    """stats' verdict, piped: (headline, [claim lines], "N more" or None)."""
    out = run([BPFSIGHT, "stats", trace], check=True).stdout
    lines = out.split("\n")
    i = next(k for k, l in enumerate(lines) if l.startswith("Verdict: "))
    head = lines[i][len("Verdict: "):]
    if head.startswith("nothing to judge"):
        return lines[i], [], None
    claims, more = [], None
    for l in lines[i + 2:]:
        if l.startswith("* = "):
            break
        m = re.match(r"   \((\d+) more", l)
        if m:
            more = int(m.group(1))
        else:
            claims.append(l)
    return head, claims, more


def claim_line(c):
    """A claim the page shows, as stats prints it (verdict.c's print_claim)."""
    share = c["share"] and "%5.1f%%" % float(c["share"].rstrip("%"))
    text = c["text"] + (f" ({c['link']})" if c["link"] else "")
    return f" {c['mark'] or ' '} {c['kind'] or '':<8} {share or '':>6}  {text}"


def check_verdict(trace, seen):
    head, claims, more = stats_verdict(trace)
    eq(seen["first_section"], "verdict", f"{trace}: the first section after the title")
    eq(seen["headline"], head, f"{trace}: the verdict's headline")
    eq([claim_line(c) for c in seen["claims"]], claims, f"{trace}: the claims")
    for c in seen["claims"]:
        if c["link"]:
            check(c["link"].startswith("-r ") and c["target"],
                  f"{trace}: {c['link']} links to its section on the page")
    eq(seen["more"] is not None and int(seen["more"].split()[0]), more or False,
       f"{trace}: the claims left out")


def check_info(trace, seen):
    """info's text, folded, as tables: every word of it in order, in the tables' cells and
    the notes under them."""
    eq(seen["info_open"], False, f"{trace}: the details folded")
    info = run([BPFSIGHT, "info", trace], check=True).stdout
    words = [w for w in info.replace(":", " ").split() if not re.fullmatch(r"-{3,}", w)]
    eq(" ".join(seen["info_cells"]).replace(":", " ").split(), words, f"{trace}: info's words")


def check_boxes(trace, seen):
    eq(seen["boxes"], [], f"{trace}: boxes wider than the {VIEWPORT} px window or scrolling")
    eq(seen["broken"], [], f"{trace}: a cell's one word on two lines")
    check(seen["page_width"] <= seen["viewport"], f"{trace}: page {seen['page_width']} px")


def check_units(trace, seen):
    """No report table on the page shows a duration as a raw ns integer: each of stats' _ns
    values of the rows shown is in human units, the exact value on hover; sizes likewise."""
    reports = stats_reports(trace)
    checked = 0
    for rid, rows in seen["reports"].items():
        for row, cells in zip(reports[rid[2:]], rows):
            for key, v in row.items():
                unit = "ns" if key.endswith("_ns") else "B" if key.endswith("bytes") else None
                if not unit or isinstance(v, bool) or not isinstance(v, (int, float)):
                    continue
                for text, _ in cells:
                    if re.fullmatch(r"-?\d+(\.\d+)?", text) and v >= 1000:
                        check(abs(float(text) - v) > 0.5, f"{trace} {rid}: {key} raw {text}")
                # (a column 0 on every row may be left out: a CPU job's GPU columns)
                if isinstance(v, int) and v:
                    shown = human(v) if unit == "ns" else human(v, ("B", "KiB", "MiB", "GiB",
                                                                   "TiB"), 1024)
                    check([shown, f"{v} {unit}"] in cells,
                          f"{trace} {rid}: {key}={v} shown as {shown}, exact on hover: {cells}")
                    checked += 1
    return checked


X, W = 60, 890  # page_axis.h: the plot's left and width in every timeline's SVG units


def near(plots, want, what):
    """Every plot's [x, width] within a pixel of WANT, all the same."""
    eq(len({(x, w) for _, x, w, _ in plots}), 1, f"{what}: one range for all {plots}")
    for _, x, w, _ in plots:
        check(abs(x - want[0]) < 1 and abs(w - want[1]) < 1, f"{what}: {x}, {w} != {want}")


def check_zoom(trace, z, shaded):
    """A drag over a quarter of the first timeline zooms every timeline and lane to it, a drag
    over the right half of the last timeline zooms into that, a click puts them all back; the
    ticks say the times shown; SHADED bands (steps, capture ranges) lie behind every plot."""
    before = z["before"]["plots"]
    check(len(before) >= 3 and z["timelines"] == len(before), f"{trace}: plots {before}")
    eq({(x, w) for _, x, w, _ in before}, {(X, W)}, f"{trace}: the whole recording first")
    eq(sorted({p[0] for p in z["dragged"]["plots"]}), sorted({p[0] for p in before}),
       f"{trace}: the same plots")
    # (clientX is a whole pixel: a pixel of 1240 is 0.8 of the SVG's units)
    near(z["dragged"]["plots"], (X + W / 4, W / 4), f"{trace}: every plot shows the quarter "
         "dragged over")
    check(z["dragged"]["ticks"] != z["before"]["ticks"], f"{trace}: the ticks relabelled")
    near(z["again"]["plots"], (X + W * 3 / 8, W / 8),
         f"{trace}: a drag on another timeline zooms into the zoomed range")
    eq(z["clicked"], z["before"], f"{trace}: a click resets every plot and tick")
    for fid, _, _, n in before:
        if fid != "tl-ranges":
            eq(n, shaded, f"{trace}: {fid}: the shaded bands behind it")


def check_families(trace, seen):
    """Each family's part looks the same: a heading with its name and what it records (as
    `bpfsight record --help` says), then its reports' tables, headed and drawn alike; every
    report with rows is in its family's part, once; no text cell is wider than 48 characters,
    those cut in the middle whole on hover."""
    reports = {k for k, v in stats_reports(trace).items() if v}
    fams = seen["families"]
    check(fams, f"{trace}: family sections")
    eq(len({f["h2"] for f in fams}), 1, f"{trace}: one look of the families' headings {fams}")
    tables = [r for f in fams for r in f["reports"]]
    eq(sorted(r[0][2:] for r in tables), sorted(reports), f"{trace}: each report once")
    eq(len({tuple(r[1:]) for r in tables}), 1, f"{trace}: one look of the tables {tables}")
    for f in fams:
        eq(f["id"], "family-" + f["name"], f"{trace}: the family's id")
        check(f["what"], f"{trace}: {f['name']} says what it records")
    cut = 0
    for rid, rows in seen["reports"].items():
        for row in rows:
            for text, title in row:
                check(len(text) <= 48 or re.fullmatch(r"[\d.]+( \S+)?", text),
                      f"{trace} {rid}: a cell of {len(text)} characters: {text}")
                if "…" in text:
                    check(len(title) > len(text), f"{trace} {rid}: {text} whole on hover")
                    cut += 1
    return cut


def test_report_page_real_traces():
    """Every real trace: the verdict first, equal to stats' (claims, numbers, links to their
    tables), figures, info folded as tables, nothing wider than the window."""
    chromium()
    traces = real_traces()
    drag = {"first": 0, "second": -1, "a": 0.25, "b": 0.5}
    cut = 0
    for trace, seen in pages(traces, {"drag": drag}).items():
        z = seen["zoom"]
        events = info_json(trace)
        check(seen["bands"].get("NVTX", 0) > 0, f"{trace}: NVTX bands {seen['bands']}")
        capture = "cudaProfilerApi" in events.get("command", "")
        eq("capture" in seen["bands"], capture, f"{trace}: the capture range drawn")
        check_zoom(trace, z, seen["bands"].get("capture", 0))
        eq(len(seen["lanes"]), min(8, seen["lane_groups"]), f"{trace}: lanes named")
        check(len(seen["lanes"]) >= 2, f"{trace}: lanes {seen['lanes']}")
        check_verdict(trace, seen)
        check_info(trace, seen)
        check_boxes(trace, seen)
        check(check_units(trace, seen) > 50, f"{trace}: durations checked")
        cut += check_families(trace, seen)
        figs = {f[0]: f for f in seen["figures"]}
        info = info_json(trace)
        eq(figs["events lost"][1], str(info["lost_total"]) if info["lost_total"] else "none",
           f"{trace}: the events lost")
        check(any(k.startswith("GPU 0 busy") for k in figs), f"{trace}: GPU busy {figs}")
    check(cut > 10, f"long names cut: {cut}")


SCRIPT = """
import ctypes, threading, time
import torch
torch.set_num_threads(1)  # no OpenMP pool spinning beside the threads below
libc = ctypes.CDLL(None)

def spin(name, secs):
    libc.prctl(15, name.encode())  # PR_SET_NAME: the thread's name in the trace
    end = time.process_time() + secs  # this thread's own CPU time
    while time.process_time() < end:
        pass

def sleep(name):
    libc.prctl(15, name.encode())
    time.sleep(0.3)

threads = [threading.Thread(target=spin, args=(n, s))
           for n, s in (("spin-a", 0.9), ("spin-b", 0.6), ("spin-c", 0.3))]
threads += [threading.Thread(target=sleep, args=(f"idle-{i}",)) for i in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
m = torch.nn.Linear(256, 256)
opt = torch.optim.SGD(m.parameters(), lr=0.01)
x = torch.randn(64, 256)
for i in range(12):
    opt.zero_grad()
    m(x).sum().backward()
    time.sleep(0.03)  # each step wider than a column of the page's axis
    opt.step()
"""


def test_report_page_torch_trace():
    """A torch trace made here (Debian's torch), with threads of known CPU time: the verdict
    equals stats', the step time's median and spread are torch_step_sum's, each step a band
    behind every timeline, zoomed with them; a lane for each of the 8 busiest threads, named,
    the three spinning ones in the order of their CPU time."""
    need_root()
    chromium()
    script = os.path.join(tmpdir(), "steps.py")
    with open(script, "w") as f:
        f.write(SCRIPT)
    p, trace = record(["/usr/bin/python3", script], "-t", "torch,sched")
    eq(p.returncode, 0, f"record ({p.stderr[-400:]})")
    seen = pages([trace], {"drag": {"first": 0, "second": -1, "a": 0.25, "b": 0.5}})[trace]
    check_verdict(trace, seen)
    check(seen["claims"], "the torch trace has claims (sched's)")
    check_info(trace, seen)
    check_boxes(trace, seen)
    check(check_units(trace, seen) > 20, "torch tables' durations checked")
    check_families(trace, seen)
    steps = json.loads(run([BPFSIGHT, "stats", trace, "-r", "torch_step_sum", "--format",
                            "json"], check=True).stdout)["reports"]["torch_step_sum"]
    walls = sorted(s["wall_ns"] for s in steps)
    n = len(walls)
    check(n >= 10, f"{n} steps")
    figs = {f[0]: f for f in seen["figures"]}
    med = figs[f"step time, median of {n}"]
    mid = (walls[(n - 1) // 2] + walls[n // 2]) / 2
    check(re.fullmatch(r"[\d.]+ (ns|µs|ms|s)", med[1]), f"median in human units: {med}")
    eq(human(mid), med[1], "the median step")
    check("step time spread (p10 – p90)" in figs, f"the spread: {figs}")
    eq(seen["bands"].get("steps"), n, "a band per step")
    check_zoom(trace, seen["zoom"], n)
    lanes = seen["lanes"]
    eq(len(lanes), 8, f"the 8 busiest threads: {lanes}")
    for lane in lanes:
        check(re.fullmatch(r"\S+ \((tid \d+|main thread), pid \d+\) · [\d.]+ (ms|s|µs)", lane),
              f"a lane named: {lane}")
    spin = [l.split()[0] for l in lanes if l.startswith("spin-")]
    eq(spin, ["spin-a", "spin-b", "spin-c"], f"the spinning threads by CPU time: {lanes}")


def human(v, units=("ns", "µs", "ms", "s"), factor=1000):
    """human.c's scaled(): the first unit that keeps V under 1000 once rounded, three
    significant digits, the first unit whole."""
    u = 0
    while u + 1 < len(units) and v >= 999.5:
        v /= factor
        u += 1
    if not u or v >= 99.95:
        return f"{v:.0f} {units[u]}"
    return f"{v:.1f} {units[u]}" if v >= 9.995 else f"{v:.2f} {units[u]}"
