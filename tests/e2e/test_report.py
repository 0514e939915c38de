"""bpfsight report: one self-contained HTML page of a trace, opened in a real browser
(Debian's chromium, headless): the elements it must show, no console error, and its
content checked against info and stats of the same trace."""
import html
import json
import os
import re
import shutil
import signal

import browser
from helpers import (BPFSIGHT, check, eq, need_root, record, run, tmpdir, workload)

import helpers
from test_gil import WORK, need_pyenv, truth_of

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 45

DEMO = workload("demo_pipeline")


def chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        raise helpers.Skip("no chromium (apt-get install chromium; make deps)")
    return exe


def browse(page, *what):
    """Open PAGE in headless chromium (this job's: browser.py): (the DOM as --dump-dom prints
    it, or ""; the console messages as --enable-logging's ":CONSOLE" lines said them). WHAT:
    --dump-dom, --screenshot=PNG, or flags for the browser."""
    shot = [w.split("=", 1)[1] for w in what if w.startswith("--screenshot=")]
    flags = [w for w in what if w != "--dump-dom" and not w.startswith("--screenshot=")]
    return browser.browse(chromium(), "file://" + os.path.abspath(page), flags,
                          (VIEWPORT, 1600), dom="--dump-dom" in what,
                          screenshot=shot[0] if shot else None)


def test_browser_check_sees_console_errors():
    """The console check below can fail: a page that logs an error is caught."""
    page = os.path.join(tmpdir(), "bad.html")
    with open(page, "w") as f:
        f.write('<!DOCTYPE html><html><body><p id="x">x</p>'
                '<script>console.error("report-test-error")</script></body></html>')
    dom, console = browse(page, "--dump-dom")
    check('<p id="x">x</p>' in dom, dom)
    eq(len(console), 1, f"console messages {console}")
    check("report-test-error" in console[0], console[0])


def test_browser_check_sees_uncaught_exceptions():
    """A script that throws, or a promise rejected with no handler, is a console message
    too (as chromium's log said them: "Uncaught ..."), in the page or a frame of it."""
    d = tmpdir()
    with open(os.path.join(d, "frame.html"), "w") as f:
        f.write("<html><body><script>null.x</script></body></html>")
    page = os.path.join(d, "throws.html")
    with open(page, "w") as f:
        f.write('<!DOCTYPE html><html><body><iframe src="frame.html"></iframe>'
                '<script>throw new Error("report-test-throw")</script>'
                '<script>Promise.reject(new Error("report-test-reject"))</script>'
                '<p id="y">y</p></body></html>')
    dom, console = browse(page, "--dump-dom")
    check('<p id="y">y</p>' in dom, dom)
    eq(len(console), 3, f"console messages {console}")
    for want in ('"Uncaught Error: report-test-throw"',
                 '"Uncaught (in promise) Error: report-test-reject"',
                 '"Uncaught TypeError: Cannot read properties of null'):
        check(any(c.startswith(want) for c in console), f"{want} in {console}")


def test_browser_death_is_a_failure():
    """A browser that dies under a page fails that page, saying so; the next page gets a
    new browser."""
    page = os.path.join(tmpdir(), "ok.html")
    with open(page, "w") as f:
        f.write('<!DOCTYPE html><html><body><p id="z">z</p></body></html>')
    browse(page, "--dump-dom")
    running = browser.running(chromium(), (), (VIEWPORT, 1600))
    os.kill(running.pid, signal.SIGKILL)
    try:
        browse(page, "--dump-dom")
    except AssertionError as e:
        check("chromium died" in str(e) and "exit status -9" in str(e), str(e))
    else:
        raise AssertionError("a page opened in a killed browser")
    check(browser.running(chromium(), (), (VIEWPORT, 1600)) is None, "the dead browser dropped")
    dom, console = browse(page, "--dump-dom")
    eq((('<p id="z">z</p>' in dom), console), (True, []), "a new browser")


PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "flame_probe.js")
VIEWPORT = 1280  # a laptop's width, in CSS pixels


def probe(path, args):
    """Open a copy of the page (or standalone SVG) at PATH in chromium with flame_probe.js run
    after its own scripts, acting as a user on each flame graph of ARGS ({section id: {"click":
    regex, "search": regex}}, "svg" for an SVG file); returns what it saw (flame_probe.js)
    after checking the console."""
    with open(path) as f:
        page = f.read()
    with open(PROBE) as f:
        js = f.read().replace("PROBE_ARGS", json.dumps(args))
    svg = path.endswith(".svg")
    copy = os.path.join(tmpdir(), "probe.svg" if svg else "probe.html")
    with open(copy, "w") as f:
        if svg:
            f.write(page.replace("</svg>", f"<script><![CDATA[{js}]]></script></svg>"))
        else:
            f.write(page.replace("</body>", f"<script>{js}</script></body>"))
    dom, console = browse(copy, "--dump-dom")
    eq(console, [], "console messages")
    m = re.search(r'<(?:pre|text) id="probe">(.*?)</(?:pre|text)>', dom, re.S)
    check(m, "the probe ran")
    return json.loads(html.unescape(m.group(1)))


def matched(hits):
    """The share of the graph under the frames hit (nested ones counted once), as a viewer
    would add it up from their places and widths."""
    total, end = 0, -1
    for x, n in sorted((h[1], h[2]) for h in hits):
        if x + n > end:
            total += x + n - max(x, end)
            end = x + n
    return total


def check_flame(seen, total):
    """A user's flame graph checks on what the probe saw: the graph fills the width with
    labels, the details line names the frame under the pointer, a click zooms the frame to
    the whole width (its label whole, frames beside it hidden), "Reset zoom" puts it back,
    a search highlights the frames matching and says their share of TOTAL."""
    check(seen["frames"] > 0 and seen["labels"] > 0, f"frames drawn and labelled: {seen}")
    check(seen["width"] <= VIEWPORT, f"graph {seen['width']} px wide")
    name = seen["clicked"]
    check(seen["details"].startswith(name + " ("), f"details: {seen['details']!r}")
    x, w = seen["zoomed"]
    check(abs(x) < 1 and abs(w - seen["width"]) < 1, f"{name} zoomed to {x}+{w}")
    eq(seen["zoomed_label"], name, "the zoomed frame's label is its whole name")
    check(len(seen["zoomed_visible"]) < seen["frames"], "frames beside it hidden")
    check(seen["reset_shown"], "Reset zoom shown while zoomed")
    eq(seen["reset"], seen["before"], "Reset zoom: the frame back where it was")
    eq(seen["reset_visible"], seen["frames"], "every frame shown again")
    check(seen["hits"], "a search hits frames")
    check(all(h[3] == "rgb(224, 64, 224)" for h in seen["hits"]), "hits highlighted")
    eq(seen["matched"], f"Matched: {100 * matched(seen['hits']) / total:.2f}%", "share matched")
    eq(seen["search_button"], "Reset search", "the search can be reset")


def check_fits(seen):
    """No sideways scrolling at a laptop's width: neither the page nor a table, nor the
    Recording box (info's text: its long lines wrap)."""
    check(VIEWPORT - 20 <= seen["viewport"] <= VIEWPORT, f"viewport {seen['viewport']}")
    check(seen["page_width"] <= seen["viewport"], f"page {seen['page_width']} px wide")
    for t in seen["tables"]:
        check(t["right"] <= seen["viewport"] and t["scroll"] <= 0, f"table too wide: {t}")
    for p in seen["pres"]:
        check(p["scroll"] <= 0, f"text box scrolls sideways: {p}")


def report(trace):
    out = os.path.join(os.path.dirname(trace), "page.html")
    p = run([BPFSIGHT, "report", trace, "-o", out])
    eq((p.returncode, p.stderr), (0, f"bpfsight report: wrote {out}\n"), "report")
    with open(out) as f:
        return out, f.read()


def stats_json(trace):
    p = run([BPFSIGHT, "stats", trace, "--format", "json"], check=True)
    return json.loads(p.stdout)["reports"]


def figure(page, fid):
    m = re.search(r'<figure class="([^"]*)" id="%s">(.*?)</figure>' % fid, page, re.S)
    check(m, f"no figure {fid}")
    return m.group(1), m.group(2)


def check_page(trace, page):
    """What every page must be: self-contained, bounded, info's text, every stats report
    with rows (its first rows, the count stated), the timelines."""
    for bad in ("<script ", "src=", "url(", "@import", "<link", "<img"):
        check(bad not in page, f"{bad} in a page that must load nothing")
    eq(re.findall(r'href="([^#][^"]*)"', page), [], "links only within the page")
    eq(set(re.findall(r"https?://[^\"' ]*", page)), {"http://www.w3.org/2000/svg"},
       "the only URLs: SVG's namespace (the SVGs', the zoom script's)")
    check(len(page) < 300 * 1024, f"page of {len(page)} bytes")

    # info's text as tables: test_report_page.py
    check(re.search(r'<section id="info"><h2>Recording</h2>\n<details>', page), "info folded")

    reports = {k: v for k, v in stats_json(trace).items() if v}
    shown = re.findall(r'<div class="report" id="r-([a-z_0-9]+)">', page)
    eq(sorted(shown), sorted(reports), "one section per stats report with rows")
    for name, rows in reports.items():
        sec = re.search(r'id="r-%s">(.*?)<p class="rows">(\d+) of (\d+) rows' % name, page,
                        re.S)
        eq((int(sec.group(2)), int(sec.group(3))), (min(20, len(rows)), len(rows)),
           f"{name}: rows shown of rows")
        first = re.search(r"<tbody>\n<tr>(.*?)</tr>", sec.group(1), re.S).group(1)
        # A cell's text, and its exact value or whole text on hover (test_report_page.py).
        cells = [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", first)]
        cells += [html.unescape(c).removesuffix(" ns").removesuffix(" B")
                  for c in re.findall(r'<td[^>]* title="([^"]*)"', first)]
        for key, v in rows[0].items():
            if isinstance(v, str) or isinstance(v, int) and not isinstance(v, bool):
                check(str(v) in cells, f"{name}: first row's {key}={v!r} in {cells}")
    for fid in ("tl-gil", "tl-offcpu", "tl-syscall", "tl-loss"):
        figure(page, fid)
    total = json.loads(run([BPFSIGHT, "info", "--json", trace], check=True).stdout)["lost_total"]
    cls, body = figure(page, "tl-loss")
    if total:
        check(f"{total} in all" in body, f"loss chart states {total}: {body[:200]}")
    else:
        eq((cls, "no event was lost" in body), ("timeline empty", True), "no loss")


def check_browser(path, charts):
    """The page as the browser rendered it: no console message, CHARTS' lines drawn, the
    tables, a screenshot; returns the DOM."""
    dom, console = browse(path, "--dump-dom")
    eq(console, [], "console messages")
    for fid, lines in charts.items():
        m = re.search(r'<figure class="timeline" id="%s">(.*?)</figure>' % fid, dom, re.S)
        check(m, f"chart {fid} rendered")
        eq(len(re.findall(r"<polyline ", m.group(1))), lines, f"{fid}: lines drawn")
    check(re.search(r'<div class="report" id="r-[a-z_]+"><h3>', dom), "report tables")
    png = os.path.join(tmpdir(), "shot.png")
    browse(path, f"--screenshot={png}")
    with open(png, "rb") as f:
        eq(f.read(8), b"\x89PNG\r\n\x1a\n", "a PNG screenshot")
    return dom


def test_report_of_the_demo():
    need_root()
    chromium()
    p, trace = record([DEMO], "-t", "osrt,sched")
    eq(p.returncode, 0, f"record ({p.stderr[-400:]})")
    path, page = report(trace)
    check_page(trace, page)
    # A CPU program (no CUDA call): no GPU panel at all, not an empty one.
    check('id="tl-gpu"' not in page, "no GPU panel for the demo")
    eq(figure(page, "tl-gil")[0], "timeline empty", "no GIL in the demo")
    legend = re.findall(r'<li class="s\d">(.*?)</li>', figure(page, "tl-offcpu")[1])
    eq(sorted(legend), ["blocked (slept)", "preempted (runnable)"], "off-CPU series")
    check_browser(path, {"tl-offcpu": 2, "tl-syscall": 1})


def test_report_of_a_gil_trace():
    need_root()
    chromium()
    py = need_pyenv()
    p, trace = record([py, WORK, "cpu", "3", "0.5"], "-t", "gil")
    eq(p.returncode, 0, f"record ({p.stderr[-400:]})")
    truth = truth_of(p.stdout)
    path, page = report(trace)
    check_page(trace, page)
    cls, body = figure(page, "tl-gil")
    eq(cls, "timeline", "GIL contention drawn")
    proc = [r for r in stats_json(trace)["gil_procs"] if r["pid"] == truth["pid"]]
    eq(re.findall(r'<li class="s\d">(.*?)</li>', body),
       [f"pid {truth['pid']} ({proc[0]['process']})"], "one process, named as gil_procs names it")
    for empty in ("tl-offcpu", "tl-syscall"):
        eq(figure(page, empty)[0], "timeline empty", f"{empty}: family not recorded")
    check('id="tl-gpu"' not in page, "no GPU panel for a CPU job")
    check('id="r-gil_sum"' in page, "gil_sum shown")
    # The holders' code by the waiting it caused: as wide as gil_stacks' holder rows, in us
    # (each round rounded down to a whole us, at least 1).
    sec = re.search(r'<section id="gil-flame">.*?</section>', page, re.S)
    check(sec, "the GIL holders' flame graph")
    shown = int(re.search(r"(\d+) us of GIL waits; width", sec.group(0)).group(1))
    rows = [r for r in stats_json(trace)["gil_stacks"] if r["role"] == "holder"]
    ns, rounds = sum(r["total_ns"] for r in rows), sum(r["count"] for r in rows)
    check(ns // 1000 - rounds <= shown <= ns // 1000 + rounds,
          f"{shown} us drawn for {ns} ns in {rounds} rounds")
    check(any(f.startswith("spin_until (") for f in flame_counts(sec.group(0))),
          "spin_until holds the GIL")
    check_browser(path, {"tl-gil": 1})
    # gil_procs' long cells wrap: no table wider than a laptop's screen; the graph zooms.
    seen = probe(path, {"gil-flame": {"click": "^spin_until ", "search": "^spin_until "}})
    check_fits(seen)
    check(any(t["id"] == "r-gil_procs" for t in seen["tables"]), "gil_procs drawn")
    check_flame(seen["flames"]["gil-flame"], shown)


def flame_counts(svg):
    """{frame name: count} of a flame graph's frames (their tooltips), summed over paths."""
    counts = {}
    for name, n in re.findall(r"<title>(.*?) \((\d+) [a-zA-Z ]+, [\d.]+%\)</title>", svg):
        name = html.unescape(name)
        counts[name] = counts.get(name, 0) + int(n)
    return counts


def test_report_of_a_cpu_trace():
    """A cpu trace's page has its flame graph: each function drawn as wide as its samples
    (burn_a's tooltip says cpu_sum's total), rendered by the browser, where a click on
    burn_a zooms it to the width (burn_b hidden) and a search for burn_a|burn_b highlights
    both and says their share of the samples: cpu_sum's."""
    need_root()
    chromium()
    p, trace = record([workload("cpu_split"), "split", "1"], "-t", "cpu", "--sample-rate",
                      "999")
    eq(p.returncode, 0, f"record ({p.stderr[-400:]})")
    path, page = report(trace)
    check_page(trace, page)
    sec = re.search(r'<section id="flame"><h2>CPU samples</h2>(.*?)</section>', page, re.S)
    check(sec, "the flame graph section")
    counts = flame_counts(sec.group(1))
    rows = {r["func"]: r for r in stats_json(trace)["cpu_sum"]}
    for f in ("burn_a", "burn_b", "main"):
        eq(counts.get(f), rows[f]["total_samples"], f"{f}: its frame's samples")
    total = int(re.search(r"(\d+) samples; width", sec.group(1)).group(1))
    seen = probe(path, {"flame": {"click": "^burn_a$", "search": "^burn_[ab]$"}})
    check_fits(seen)
    fl = seen["flames"]["flame"]
    check_flame(fl, total)
    check("burn_b" not in fl["zoomed_visible"], "burn_b hidden while burn_a is zoomed")
    check({"burn", "run_split", "main"} <= set(fl["zoomed_visible"]),
          "burn_a's callee and callers stay")
    eq(sorted({h[0] for h in fl["hits"]}), ["burn_a", "burn_b"], "the frames hit")
    ab = rows["burn_a"]["total_samples"] + rows["burn_b"]["total_samples"]
    eq(fl["matched"], f"Matched: {100 * ab / total:.2f}%", "burn_a and burn_b's share")
    check_browser(path, {})


def test_report_folds_deep_stacks():
    """spin 60 calls deep: the graph is at most 32 frames high, the recursion's middle folded
    into one frame that says how many frames it holds, spin (where the time goes) and main
    still drawn with all their samples."""
    need_root()
    chromium()
    p, trace = record([workload("cpu_split"), "deep", "60", "0.5"], "-t", "cpu",
                      "--sample-rate", "999")
    eq(p.returncode, 0, f"record ({p.stderr[-400:]})")
    path, page = report(trace)
    sec = re.search(r'<section id="flame">(.*?)</section>', page, re.S).group(1)
    counts = flame_counts(sec)
    rows = {r["func"]: r for r in stats_json(trace)["cpu_sum"]}
    for f in ("spin", "main"):
        eq(counts.get(f), rows[f]["total_samples"], f"{f}: its frame's samples")
    folded = [f for f in counts if re.fullmatch(r"\[\d+(-\d+)? frames folded\]", f)]
    check(folded, f"a folded frame among {sorted(counts)[:20]}")
    ys = {int(y) for y in re.findall(r'<rect x="[\d.]+" y="(\d+)"', sec)}
    check(len(ys) <= 32, f"{len(ys)} rows drawn")
    check("the middle folded" in sec, "the footer says stacks are folded")
    fl = probe(path, {"flame": {"click": "^spin$", "search": "frames folded"}})["flames"]
    check_flame(fl["flame"], int(re.search(r"(\d+) samples; width", sec).group(1)))


TRACES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
                      "traces")


def test_report_of_a_real_trace():
    """lightning-all.bst (H100, every family): the page stays small, fits a laptop's width
    (gil_procs' long cells wrap) and both flame graphs zoom and search."""
    chromium()
    trace = os.path.join(TRACES, "lightning-all.bst")
    if not os.path.exists(trace):
        raise helpers.Skip(f"no {trace} (the real traces, ../shared/traces)")
    out = os.path.join(tmpdir(), "page.html")
    run([BPFSIGHT, "report", trace, "-o", out], check=True)
    size = os.path.getsize(out)
    check(size < 2 * 1024 * 1024, f"page of {size} bytes")
    with open(out) as f:
        page = f.read()
    check('id="r-gil_procs"' in page, "gil_procs shown")
    seen = probe(out, {"flame": {"click": "^Trainer.fit ", "search": "^PyEval"},
                       "gil-flame": {"click": "^_FitLoop.run ", "search": "^Thread"}})
    check_fits(seen)
    for sec, fl in seen["flames"].items():
        total = int(re.search(r'<section id="%s">.*?data-total="(\d+)"' % sec, page,
                              re.S).group(1))
        check_flame(fl, total)


def test_report_bad_input():
    d = tmpdir()
    p = run([BPFSIGHT, "report", os.path.join(d, "none.bst")])
    eq(p.returncode, 1, "missing FILE")
    check("No such file" in p.stderr, p.stderr)
    p = run([BPFSIGHT, "report", "/dev/null"])
    eq((p.returncode, "not a regular file" in p.stderr), (1, True), f"/dev/null: {p.stderr}")
    junk = os.path.join(d, "junk.bst")
    with open(junk, "w") as f:
        f.write("not a trace\n" * 10)
    p = run([BPFSIGHT, "report", junk])
    eq(p.returncode, 1, f"not a trace: {p.stderr}")
    eq(os.listdir(d), ["junk.bst"], "nothing written for a bad trace")
    out = os.path.join(d, "x.html")
    with open(out, "w") as f:
        f.write("keep")
    p = run([BPFSIGHT, "report", junk, "-o", out])
    eq((p.returncode, p.stderr), (1, f"bpfsight report: {out} exists: use --force to "
                                     "replace it\n"), "existing OUT")
    with open(out) as f:
        eq(f.read(), "keep", "OUT untouched")
    p = run([BPFSIGHT, "report"])
    eq(p.returncode, 1, "no FILE")
