"""One headless chromium per test job, kept for all the job's pages and driven over the
DevTools protocol on a pipe (--remote-debugging-pipe: it reads our commands on its fd 3 and
writes answers and events on its fd 4, each a JSON text ended by a NUL byte; no port).
A launch costs 0.8-1.1 CPU-s, a page in a running browser a fraction of it (bench/RESULTS.md,
"make check time"). Each page opens in a new tab (its own session storage and window), closed
after it; the pages tested store nothing (no cookie, local storage or IndexedDB), so nothing
one page does reaches the next. A fresh browser context per page would keep even those apart
but cost 0.3 CPU-s a page against 0.17. The browser dies with the job (the kernel
kills it when the job's process ends, however it ends) and is closed by it at exit.

What a page gives is what `chromium --headless --dump-dom --enable-logging=stderr` gave: the
DOM once the load event was handled, as the command line prints it (the doctype, a newline,
document.documentElement.outerHTML, a newline), and the page's console messages as its
":CONSOLE" lines showed them: every console.* call and every uncaught exception or promise
rejection, and the browser's notes on the page (a blocked load, a deprecated call), of the
page and its frames; not its notes on failed network loads, which Blink keeps from the log."""
import atexit
import base64
import ctypes
import fcntl
import json
import os
import select
import shutil
import signal
import tempfile
import time

# What --dump-dom printed, byte for byte on the pages compared (a doctype, scripts that change
# the DOM and log, frames): the doctype, a newline, the root element's outerHTML.
DOM = ("(document.doctype ? new XMLSerializer().serializeToString(document.doctype) + '\\n'"
       " : '') + document.documentElement.outerHTML")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run")


class Browser:
    """A running chromium with FLAGS (beside FLAGS, the window size and a profile of its
    own); see open()."""

    def __init__(self, exe, flags, size):
        self.size, self.next_id, self.buf, self.events = size, 0, bytearray(), []
        self.dir = tempfile.mkdtemp(prefix="bpfsight-test-chromium-")
        self.log = os.path.join(self.dir, "stderr")
        args = [exe, *FLAGS, f"--user-data-dir={os.path.join(self.dir, 'profile')}",
                f"--window-size={size[0]},{size[1]}", "--remote-debugging-pipe", *flags]
        cmd_r, self.w = os.pipe()   # our commands: its fd 3
        self.r, answer_w = os.pipe()  # its answers and events: its fd 4
        # Above 9 first, so that putting them on 3 and 4 cannot overwrite one with the other.
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (cmd_r, answer_w)]
        null = os.open(os.devnull, os.O_RDWR)
        log = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        prctl, parent = ctypes.CDLL(None).prctl, os.getpid()
        self.pid = os.fork()
        if self.pid == 0:
            try:
                prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: never outlives the job
                if os.getppid() != parent:
                    os._exit(1)
                os.dup2(null, 0)
                os.dup2(null, 1)
                os.dup2(log, 2)
                os.dup2(high[0], 3)
                os.dup2(high[1], 4)
                os.execv(exe, args)
            finally:
                os._exit(127)
        for fd in (cmd_r, answer_w, *high, null, log):
            os.close(fd)
        self.status = None

    def stderr(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()[-800:]
        except OSError:
            return ""

    def died(self, what):
        return AssertionError(f"chromium died ({what}; exit status {self.reap(5)}): "
                              f"{self.stderr()}")

    def reap(self, wait):
        """Its exit status once it ended (waiting up to WAIT seconds), else None."""
        end = time.monotonic() + wait
        while self.status is None:
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(st)
            elif time.monotonic() >= end:
                break
            else:
                time.sleep(0.02)
        return self.status

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        try:
            while data:
                data = data[os.write(self.w, data):]
        except BrokenPipeError:
            raise self.died(f"writing {method}") from None
        return self.next_id

    def read(self, deadline, what):
        """The next message; a clear failure when the browser died or past DEADLINE."""
        start = 0
        while (end := self.buf.find(b"\0", start)) < 0:
            start = len(self.buf)
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.r], [], [], left)[0]:
                raise AssertionError(f"chromium: no answer in time ({what}): {self.stderr()}")
            data = os.read(self.r, 1 << 20)
            if not data:
                raise self.died(what)
            self.buf += data
        msg = json.loads(self.buf[:end])
        del self.buf[:end + 1]
        return msg

    def call(self, method, params=None, session=None, deadline=None):
        """METHOD's result; the events read meanwhile are kept (self.events)."""
        deadline = deadline or time.monotonic() + 60
        i = self.send(method, params, session)
        while True:
            msg = self.read(deadline, method)
            if msg.get("id") == i:
                if "error" in msg:
                    raise AssertionError(f"chromium: {method} {params}: {msg['error']}")
                return msg["result"]
            if "method" in msg:
                self.events.append(msg)

    def wait_event(self, match, deadline, what):
        while True:
            for k, msg in enumerate(self.events):
                if match(msg):
                    return self.events[k]
            self.events.append(self.read(deadline, what))

    def open(self, url, dom=False, screenshot=None, timeout=180):
        """Load URL in a new tab at the window's size: (the DOM as --dump-dom
        prints it, or "" without DOM; the console messages). SCREENSHOT: where to write a
        PNG of the window, as --screenshot does."""
        deadline = time.monotonic() + timeout
        self.events = []
        target = self.call("Target.createTarget", {"url": "about:blank"},
                           deadline=deadline)["targetId"]
        # On a failure, browse() closes the whole browser, tabs and all.
        got = self.load(url, target, dom, screenshot, deadline)
        self.call("Target.closeTarget", {"targetId": target}, deadline=deadline)
        return got

    def load(self, url, target, dom, screenshot, deadline):
        sid = self.call("Target.attachToTarget", {"targetId": target, "flatten": True},
                        deadline=deadline)["sessionId"]
        if screenshot:  # the whole window, as --screenshot takes it
            self.call("Emulation.setDeviceMetricsOverride",
                      {"width": self.size[0], "height": self.size[1], "deviceScaleFactor": 1,
                       "mobile": False}, sid, deadline)
        for method, params in (("Page.enable", None), ("Runtime.enable", None), ("Log.enable", None),
                               ("Page.setLifecycleEventsEnabled", {"enabled": True})):
            self.call(method, params, sid, deadline)
        nav = self.call("Page.navigate", {"url": url}, sid, deadline)
        if nav.get("errorText"):
            raise AssertionError(f"chromium could not open {url}: {nav['errorText']}")
        self.wait_event(lambda m: m.get("sessionId") == sid and
                        m["method"] == "Page.lifecycleEvent" and
                        m["params"]["name"] == "load" and
                        m["params"]["frameId"] == nav["frameId"] and
                        m["params"]["loaderId"] == nav["loaderId"],
                        deadline, f"loading {url}")
        out = ""
        if dom:
            r = self.call("Runtime.evaluate", {"expression": DOM, "returnByValue": True},
                          sid, deadline)
            if "exceptionDetails" in r:
                raise AssertionError(f"chromium: the DOM of {url}: {r['exceptionDetails']}")
            out = r["result"]["value"] + "\n"
        if screenshot:
            r = self.call("Page.captureScreenshot", {"format": "png"}, sid, deadline)
            with open(screenshot, "wb") as f:
                f.write(base64.b64decode(r["data"]))
        console = [console_line(m["method"], m["params"]) for m in self.events
                   if m.get("sessionId") == sid and (
                       m["method"] in ("Runtime.consoleAPICalled", "Runtime.exceptionThrown")
                       or m["method"] == "Log.entryAdded" and
                       m["params"]["entry"]["source"] != "network")]
        return out, console

    def close(self):
        """Ask it to quit (its processes end and are waited for, so that the job's CPU time
        counts them), then kill it if it did not."""
        if self.status is None:
            try:
                self.send("Browser.close")
            except AssertionError:
                pass
            if self.reap(30) is None:
                os.kill(self.pid, signal.SIGKILL)
                self.reap(30)
        for fd in (self.r, self.w):
            os.close(fd)
        shutil.rmtree(self.dir, True)


def text_of(obj):
    """A console argument as the command line's log wrote it (near enough: objects by their
    description, not "[object Object]")."""
    if "value" in obj:
        v = obj["value"]
        if isinstance(v, bool):
            return "true" if v else "false"
        return "null" if v is None else str(v)
    if "unserializableValue" in obj:
        return obj["unserializableValue"]
    return obj.get("description", obj.get("type", ""))


def console_line(method, p):
    """As the command line's ":CONSOLE(LINE)] " lines went on: "TEXT", source: URL (LINE)."""
    if method == "Runtime.consoleAPICalled":
        text = " ".join(text_of(a) for a in p.get("args", []))
        frames = p.get("stackTrace", {}).get("callFrames") or [{}]
        url, line = frames[0].get("url", ""), frames[0].get("lineNumber", -1) + 1
    elif method == "Log.entryAdded":
        e = p["entry"]
        text, url, line = e["text"], e.get("url", ""), e.get("lineNumber", -1) + 1
    else:
        d = p["exceptionDetails"]
        text = d.get("text", "")
        if "exception" in d:
            text += " " + text_of(d["exception"]).split("\n")[0]
        url, line = d.get("url", ""), d.get("lineNumber", -1) + 1
    return f'"{text}", source: {url} ({line})'


_browsers = {}  # (executable, flags, size) -> Browser


def _close_all():
    while _browsers:
        _browsers.popitem()[1].close()


atexit.register(_close_all)


def running(exe, flags=(), size=(1280, 1600)):
    """This job's browser for those, if one runs (tests kill it to see a death reported)."""
    return _browsers.get((exe, tuple(flags), tuple(size)))


def browse(exe, url, flags=(), size=(1280, 1600), dom=False, screenshot=None, timeout=180):
    """Open URL in this job's chromium with FLAGS (started on first use; one per set of
    flags, as flags are the browser's): what Browser.open gives. A browser that failed is
    closed, and the next page starts another."""
    key = (exe, tuple(flags), tuple(size))
    if key not in _browsers:
        _browsers[key] = Browser(exe, flags, size)
    try:
        return _browsers[key].open(url, dom, screenshot, timeout)
    except BaseException:
        _browsers.pop(key).close()
        raise
