"""A real ClickHouse for the tests, of either release tested (ENGINES): Debian's
clickhouse-server 18.16 (`make deps`), its own config and users in a temporary directory,
loopback ports nobody holds, started and stopped by the test (users: `default`, no password,
and `shipper`, password `s3cret`); or ClickHouse 26.7 embedded (chDB, `make deps`:
tests/tools/install_chdb.sh) behind chdb_server.py's HTTP interface, one process per server
the same way (no users, no TLS: its header says what it does not do)."""
import atexit
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import clickhouse_cpu_log
import helpers
from free_ports import free_port
from helpers import Skip

CONFIG = """<yandex>
  <logger><level>warning</level><log>{d}/log.txt</log><errorlog>{d}/err.txt</errorlog>
    <console>0</console></logger>
  <listen_host>{listen}</listen_host>
  <http_port>{http}</http_port>{https}
  <tcp_port>{tcp}</tcp_port>
  <path>{d}/data/</path>
  <tmp_path>{d}/tmp/</tmp_path>
  <user_files_path>{d}/user_files/</user_files_path>
  <format_schema_path>{d}/format_schemas/</format_schema_path>
  <users_config>{d}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>268435456</mark_cache_size>
  <max_concurrent_queries>20</max_concurrent_queries>
</yandex>
"""

TLS = """
  <listen_host>127.0.0.2</listen_host>
  <https_port>{port}</https_port>
  <openSSL><server><certificateFile>{cert}</certificateFile><privateKeyFile>{key}</privateKeyFile>
    <verificationMode>none</verificationMode><loadDefaultCAFile>false</loadDefaultCAFile>
    <disableProtocols>sslv2,sslv3</disableProtocols></server></openSSL>"""

USERS = """<yandex>
  <profiles><default><max_memory_usage>4000000000</max_memory_usage></default></profiles>
  <quotas><default></default></quotas>
  <users>
    <default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>default</profile><quota>default</quota></default>
    <shipper><password>s3cret</password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>default</profile><quota>default</quota></shipper>
  </users>
</yandex>
"""


# The releases the ClickHouse tests run on: Debian 12's server, the oldest bpfsight talks to
# (ch_version.h), and a current one (chDB). A test of SQL takes the engine as its argument
# (run_tests.py: a module's ENGINES = True runs each test once per engine, in one job).
OLD, NEW = "18.16", "26.7"
ENGINES = (OLD, NEW)
CHDB_VERSION = "26.7.3-stable.1"  # tests/tools/install_chdb.sh's
CHDB = os.environ.get("BPFSIGHT_CHDB", f"/opt/chdb/{CHDB_VERSION}/libchdb.so")
ADAPTER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "chdb_server.py")

PORT_TRIES = 3
IN_USE = "Address already in use"  # what clickhouse-server says of a port taken

NOT_JUDGED = "Not judged from "
LEGEND = "* = the rule holds"


def stats_verdict(args):
    """stats' verdict block of ARGS (--wide: a line per claim), blank lines left out, up to
    its legend; and the line saying what the server could not judge ("" for none). A file's
    own (no --from) is asked once per job."""
    if "--from" in args:
        p = helpers.run([helpers.BPFSIGHT, "stats", *args, "--wide"], timeout=300)
        helpers.eq(p.returncode, 0, f"stats {' '.join(args)} ({p.stderr[-800:]})")
        out = p.stdout
    else:
        out = stats_text(*args, "--wide")
    lines = out.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("Verdict:"))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith(LEGEND))
    block = [l for l in lines[start:end] if l.strip()]
    rest = [l for l in block if l.startswith(NOT_JUDGED)]
    return [l for l in block if not l.startswith(NOT_JUDGED)], rest[0] if rest else ""


_shared = {}
_once = {}


def shared(engine):
    """The job's server of ENGINE (ClickHouse(engine)): started by the first test that asks,
    its process and directory kept past each test's cleanup (helpers.cleanup), stopped and
    removed as the job's process ends. The tests of a module (one job) ship jobs of their own
    names into it, each engine's once, rather than start a server per test."""
    if engine not in _shared:
        ch = ClickHouse(engine)
        helpers._procs.remove(ch.proc)
        helpers._tmpdirs.remove(ch.dir)
        atexit.register(lambda: (ch.stop(), shutil.rmtree(ch.dir, True)))
        _shared[engine] = ch
    return _shared[engine]


def once(key, make):
    """MAKE()'s answer, made once per job for KEY: what a test asks of a file or a recording
    whatever the engine (stats FILE, a recorded job), asked again for the other engine."""
    if key not in _once:
        _once[key] = make()
    return _once[key]


def stats(path, reports=None):
    """helpers.stats(PATH, REPORTS), asked once per job (the file's own answer, each engine's
    comparison reads it), parsed anew for each caller: a test may change what it is given."""
    args = ["--format", "json"] + (["-r", reports] if reports else [])
    return json.loads(stats_text(path, *args))["reports"]


def stats_text(*args):
    """`bpfsight stats ARGS`' output (table format) once per job: a file's verdict."""
    def make():
        p = helpers.run([helpers.BPFSIGHT, "stats", *args], timeout=300)
        helpers.eq(p.returncode, 0, f"stats {' '.join(args)} ({p.stderr[-800:]})")
        return p.stdout
    return once(("stats_text",) + args, make)


def need_server():
    path = shutil.which("clickhouse-server") or (
        "/usr/bin/clickhouse-server" if os.path.exists("/usr/bin/clickhouse-server") else None)
    if not path:
        raise Skip("clickhouse-server not installed: apt-get install clickhouse-server "
                   "clickhouse-client (make deps does)")
    return path


def need_chdb():
    """libchdb.so (make deps installs it), else a skip: a failure under CI=true, where the
    tests on a current release must run."""
    if os.path.exists(CHDB):
        return CHDB
    why = f"no chDB at {CHDB}: make deps installs it (tests/tools/install_chdb.sh)"
    if os.environ.get("CI") == "true":
        raise AssertionError(why)
    raise Skip(why)


def need_ipv6_loopback():
    """A kernel without IPv6 (ipv6.disable=1, no ::1 on lo) cannot run the ::1 tests."""
    try:
        free_port(socket.AF_INET6, "::1")
    except OSError as e:
        raise Skip(f"no IPv6 loopback on this machine (::1: {e})")


class ClickHouse:
    def __init__(self, engine=OLD, tls=False, ipv6=False):
        """ENGINE: OLD (Debian's server) or NEW (chDB, neither TLS nor users). IPV6: the server
        listens on ::1 only (no IPv4): every query goes to [::1]."""
        self.engine = engine
        if engine == NEW:
            if tls:
                raise AssertionError("chdb_server.py serves no TLS: an 18.16 test")
            self.lib = need_chdb()
        else:
            self.exe = need_server()
        self.dir = helpers.tmpdir()
        if ipv6:
            need_ipv6_loopback()
        self.family, self.host = ((socket.AF_INET6, "::1") if ipv6 else
                                  (socket.AF_INET, "127.0.0.1"))
        self.tls_key = None
        if tls:
            # a certificate of its own, for localhost and 127.0.0.1 (BPFSIGHT_CLICKHOUSE_CA);
            # 127.0.0.2 is listened on too, a name the certificate does not have
            self.cert = os.path.join(self.dir, "cert.pem")
            self.tls_key = os.path.join(self.dir, "key.pem")
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                            "-keyout", self.tls_key, "-out", self.cert, "-days", "2", "-subj",
                            "/CN=localhost", "-addext",
                            "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                           check=True, capture_output=True)
        for sub in ("data", "tmp", "user_files", "format_schemas"):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        self.proc = None
        # Ports found free can be taken before the server binds them (free_ports.py): its
        # first start tries others then. A restart (start()) keeps them: clients hold its URL.
        for attempt in range(PORT_TRIES):
            self.configure()
            try:
                self.start()
                return
            except AssertionError as e:
                if IN_USE not in str(e) or attempt == PORT_TRIES - 1:
                    raise

    def configure(self):
        """New ports, and the config naming them."""
        self.http, self.tcp = free_port(self.family, self.host), free_port(self.family, self.host)
        https = ""
        if self.tls_key:
            self.https = free_port()
            https = TLS.format(port=self.https, cert=self.cert, key=self.tls_key)
        config, users = clickhouse_cpu_log.configure(
            CONFIG.format(d=self.dir, http=self.http, tcp=self.tcp, https=https,
                          listen=self.host), USERS)
        with open(os.path.join(self.dir, "config.xml"), "w") as f:
            f.write(config)
        with open(os.path.join(self.dir, "users.xml"), "w") as f:
            f.write(users)

    def netloc(self):
        return f"[{self.host}]:{self.http}" if ":" in self.host else f"{self.host}:{self.http}"

    def url(self, job):
        return f"clickhouse://{self.netloc()}/{job}"

    def start(self):
        if self.engine == NEW:
            # the adapter's stderr to a file: a pipe nobody reads could fill and block it
            cmd = [sys.executable, ADAPTER, self.lib, f"{self.dir}/data/", self.host,
                   str(self.http)]
            self.proc = subprocess.Popen(cmd, cwd=self.dir, stdout=subprocess.DEVNULL,
                                         stderr=open(os.path.join(self.dir, "err.txt"), "w"),
                                         text=True)
        else:
            self.proc = subprocess.Popen([self.exe, f"--config-file={self.dir}/config.xml"],
                                         cwd=self.dir, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.PIPE, text=True)
        helpers._procs.append(self.proc)
        end = time.time() + 60
        while time.time() < end:
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.what()} exited {self.proc.returncode}: "
                                     f"{self.proc.stderr.read()[-800:] if self.proc.stderr else ''} "
                                     f"{self.log()[-800:]}")
            try:
                if self.query("SELECT 1").strip() == "1":
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"{self.what()} not answering in 60 s: {self.log()[-800:]}")

    def what(self):
        return "clickhouse-server" if self.engine == OLD else f"chDB {CHDB_VERSION}"

    def log(self):
        try:
            with open(os.path.join(self.dir, "err.txt")) as f:
                return f.read()
        except OSError:
            return ""

    def kill(self):
        """SIGKILL: a server dying mid-request, nothing flushed."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self):
        clickhouse_cpu_log.write(self)  # BPFSIGHT_CH_CPU_LOG: off unless asked
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    def query(self, sql, user=None, password=None):
        req = urllib.request.Request(f"http://{self.netloc()}/", data=sql.encode())
        if user:
            req.add_header("X-ClickHouse-User", user)
            req.add_header("X-ClickHouse-Key", password or "")
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.read().decode()

    def rows(self, sql):
        """SQL's answer (FORMAT TabSeparated added) as lists of fields, unescaped."""
        out = self.query(sql + " FORMAT TabSeparated")
        return [[unescape(f) for f in l.split("\t")] for l in out.split("\n") if l]


ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "0": "\0", "b": "\b", "f": "\f", "\\": "\\",
           "'": "'"}


ESCAPED = re.compile(r"\\(.)", re.S)


def unescape(field):
    """A TabSeparated field as ClickHouse escapes it, back to its text (a backslash and the
    character after it; a lone one at the end stays)."""
    if "\\" not in field:
        return field
    return ESCAPED.sub(lambda m: ESCAPES.get(m.group(1), m.group(1)), field)
