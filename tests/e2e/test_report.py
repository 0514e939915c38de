"""bpfsight report: one self-contained HTML page of a trace, opened in a real browser
(Debian's chromium, headless): the elements it must show, no console error, and its
content checked against info and stats of the same trace."""
import html
import json
import os
import re
import shutil

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
    """Open PAGE in headless chromium: (stdout, console messages). WHAT: --dump-dom, or
    --screenshot=PNG."""
    p = run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             f"--user-data-dir={tmpdir()}", "--enable-logging=stderr", "--v=0",
             "--window-size=1200,1600", *what, "file://" + os.path.abspath(page)],
            timeout=180)
    eq(p.returncode, 0, f"chromium ({p.stderr[-800:]})")
    console = re.findall(r":CONSOLE[^\]]*\] (.*)", p.stderr)
    return p.stdout, console


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
    for bad in ("<script", "src=", "href=", "url(", "@import", "<link", "<img"):
        check(bad not in page, f"{bad} in a page that must load nothing")
    eq(re.findall(r"https?://[^\"' ]*", page), ["http://www.w3.org/2000/svg"] *
       page.count("<svg "), "the only URLs: SVG's namespace")
    check(len(page) < 300 * 1024, f"page of {len(page)} bytes")

    info = run([BPFSIGHT, "info", trace], check=True).stdout
    pre = re.search(r'<section id="info"><h2>Recording</h2>\n<pre>(.*?)</pre>', page, re.S)
    eq(html.unescape(pre.group(1)), info, "the Recording section is info's output")

    reports = {k: v for k, v in stats_json(trace).items() if v}
    shown = re.findall(r'<div class="report" id="r-([a-z_0-9]+)">', page)
    eq(sorted(shown), sorted(reports), "one section per stats report with rows")
    for name, rows in reports.items():
        sec = re.search(r'id="r-%s">(.*?)<p class="rows">(\d+) of (\d+) rows' % name, page,
                        re.S)
        eq((int(sec.group(2)), int(sec.group(3))), (min(20, len(rows)), len(rows)),
           f"{name}: rows shown of rows")
        first = re.search(r"<tbody>\n<tr>(.*?)</tr>", sec.group(1), re.S).group(1)
        cells = [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", first)]
        for key, v in rows[0].items():
            if isinstance(v, str) or isinstance(v, int) and not isinstance(v, bool):
                check(str(v) in cells, f"{name}: first row's {key}={v!r} in {cells}")
    for fid in ("tl-gpu", "tl-gil", "tl-offcpu", "tl-syscall", "tl-loss"):
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
    eq(figure(page, "tl-gpu")[0], "timeline empty", "no GPU in the demo")
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
    for empty in ("tl-gpu", "tl-offcpu", "tl-syscall"):
        eq(figure(page, empty)[0], "timeline empty", f"{empty}: family not recorded")
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


def flame_counts(svg):
    """{frame name: count} of a flame graph's frames (their tooltips), summed over paths."""
    counts = {}
    for name, n in re.findall(r"<title>(.*?) \((\d+) [a-zA-Z ]+, [\d.]+%\)</title>", svg):
        name = html.unescape(name)
        counts[name] = counts.get(name, 0) + int(n)
    return counts


def test_report_of_a_cpu_trace():
    """A cpu trace's page has its flame graph: each function drawn as wide as its samples
    (burn_a's tooltip says cpu_sum's total), rendered by the browser."""
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
    dom = check_browser(path, {})
    check(re.search(r'<section id="flame">.*<rect ', dom, re.S), "flame graph rendered")


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
