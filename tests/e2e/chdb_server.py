"""ClickHouse 26.7's HTTP interface served from chDB (libchdb.so, ClickHouse embedded as a
library: `make deps` installs it, tests/tools/install_chdb.sh), for the tests to run bpfsight's
SQL on a current release where no current server can be installed (clickhouse_server.py runs
it as it runs Debian's 18.16, one process per test, killed at the test's end).

What it serves, as port 8123 does: POST (or GET) /?query=SQL with the statement's data as the
body (an INSERT's rows), or the statement as the body; the answer in the statement's FORMAT
(TabSeparated without one); a refused statement as HTTP 500 with ClickHouse's own exception
text ("Code: 206. DB::Exception: ..."); GET /ping. The engine runs every statement as a server
of 26.7 would, with its default settings (none is set here): the SQL is what is tested. An
INSERT's data goes to the engine as a file it reads (FROM INFILE before the statement's
FORMAT, as clickhouse-local takes data), not appended to the statement's text.

What it does not do: authentication (users, passwords, X-ClickHouse-User, Basic: every
request is the default user's), TLS (https), KILL QUERY and system.processes (one statement
at a time: a lock around the engine), sessions and query ids, compression of the request or
the answer, chunked request bodies, settings passed as URL parameters, the server's own
config (ports, paths, profiles). Those are 18.16's tests only (test_clickhouse.py says which).

Run as a program: chdb_server.py LIBCHDB DATA_DIR HOST PORT; it prints "ready" once it
listens, and dies with the process that started it (PR_SET_PDEATHSIG)."""
import ctypes
import http.server
import json
import os
import re
import resource
import socket
import sys
import tempfile
import threading
import urllib.parse

DEFAULT_FORMAT = b"TabSeparated"


class Engine:
    """libchdb.so's C API (chdb.h): one connection, its data in DATA_DIR."""

    def __init__(self, lib, data_dir):
        c = ctypes.CDLL(lib)
        vp, sz = ctypes.c_void_p, ctypes.c_size_t
        c.chdb_connect.restype = vp
        c.chdb_connect.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        c.chdb_query_n.restype = vp
        c.chdb_query_n.argtypes = [vp, ctypes.c_char_p, sz, ctypes.c_char_p, sz]
        c.chdb_result_buffer.restype = vp
        c.chdb_result_buffer.argtypes = [vp]
        c.chdb_result_length.restype = sz
        c.chdb_result_length.argtypes = [vp]
        c.chdb_result_error.restype = ctypes.c_char_p
        c.chdb_result_error.argtypes = [vp]
        c.chdb_destroy_query_result.argtypes = [vp]
        self.c = c
        self.data_dir = data_dir
        argv = (ctypes.c_char_p * 2)(b"clickhouse", f"--path={data_dir}".encode())
        conn = c.chdb_connect(2, argv)
        if not conn:
            raise OSError(f"chdb_connect failed ({data_dir})")
        self.conn = ctypes.c_void_p.from_address(conn).value  # chdb_connection *
        self.lock = threading.Lock()

    def run(self, sql):
        """(error text or None, answer bytes) of SQL (bytes)."""
        with self.lock:
            c0 = cpu() if LOG else 0
            r = self.c.chdb_query_n(self.conn, sql, len(sql), DEFAULT_FORMAT,
                                    len(DEFAULT_FORMAT))
            try:
                err = self.c.chdb_result_error(r)
                buf = self.c.chdb_result_buffer(r)
                out = ctypes.string_at(buf, self.c.chdb_result_length(r)) if buf else b""
            finally:
                self.c.chdb_destroy_query_result(r)
            if LOG:
                with open(LOG, "a") as f:
                    f.write(json.dumps({"cpu": round(cpu() - c0, 3), "sql": re.sub(
                        r"\s+", " ", sql[:300].decode(errors="replace"))}) + "\n")
        return (err.decode(errors="replace") if err else None), out

    def run_with_data(self, sql, data):
        """SQL (an INSERT ... FORMAT F) with DATA, its rows: read from a file the engine is
        told of (FROM INFILE, what clickhouse-local reads data from), as a server reads them
        from the request, not parsed as the statement's text (which cost the engine 8 times
        the CPU: 5.4 s for a real trace's 300,000 rows, 0.7 s from a file)."""
        m = FORMAT.search(sql)
        if not m:  # no FORMAT to put FROM INFILE before: the data after the statement
            return self.run(sql + b"\n" + data)
        fd, path = tempfile.mkstemp(dir=self.data_dir, suffix=".data")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            return self.run(sql[:m.start()] + b" FROM INFILE '" + path.encode() + b"'" +
                            sql[m.start():])
        finally:
            os.unlink(path)


# BPFSIGHT_CHDB_QUERY_LOG=FILE: a JSON line per statement, the engine's CPU seconds and the
# statement's start (as BPFSIGHT_CH_QUERY_LOG does for 18.16: clickhouse_cpu_log.py).
LOG = os.environ.get("BPFSIGHT_CHDB_QUERY_LOG")


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# An INSERT's trailing FORMAT clause, where its data's source goes before.
FORMAT = re.compile(rb"\s+FORMAT\s+\w+\s*$", re.I)


def handler(engine):
    class Handler(http.server.BaseHTTPRequestHandler):
        def answer(self, status, body, ctype="text/tab-separated-values; charset=UTF-8"):
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

        def serve(self, body):
            url = urllib.parse.urlsplit(self.path)
            if url.path == "/ping":
                return self.answer(200, b"Ok.\n", "text/plain")
            query = urllib.parse.parse_qs(url.query).get("query", [None])[0]
            if query is None and not body:
                return self.answer(200, b"Ok.\n", "text/plain")
            if query is None:
                err, out = engine.run(body)
            elif body:
                err, out = engine.run_with_data(query.encode(), body)
            else:
                err, out = engine.run(query.encode())
            if err:
                return self.answer(500, err.encode() + b"\n", "text/plain; charset=UTF-8")
            self.answer(200, out)

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            self.serve(self.rfile.read(n) if n else b"")

        def do_GET(self):
            self.serve(b"")

        def log_message(self, *args):
            pass

    return Handler


def die_with_parent():
    """SIGKILL when the process that started this one dies (PR_SET_PDEATHSIG): a test's
    server never outlives it, even when its job is killed before its cleanup runs."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    if os.getppid() == 1:  # it died already, before the call
        os._exit(1)


def main():
    die_with_parent()
    lib, data_dir, host, port = sys.argv[1:5]
    engine = Engine(lib, data_dir)
    cls = http.server.ThreadingHTTPServer
    if ":" in host:
        cls = type("Server6", (cls,), {"address_family": socket.AF_INET6})
    server = cls((host, int(port)), handler(engine))
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
