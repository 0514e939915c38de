"""Where the test server's CPU goes, for measuring make check's time (bench/RESULTS.md), off
unless asked: BPFSIGHT_CH_CPU_LOG=FILE appends a JSON line per server as it stops: the test
that ran it, the server's CPU seconds (user + system, /proc/PID/stat: its exited threads'
too) and its live threads' by name (HTTPHandler: the queries and inserts; BackgrProcPool: the
merges). BPFSIGHT_CH_QUERY_LOG=FILE also logs the queries (system.query_log, which costs the
server CPU of its own) and appends a line per server of each query's CPU, time, rows read,
written and returned, hash and text, costliest first."""
import inspect
import json
import os

QUERY_LOG = ("<query_log><database>system</database><table>query_log</table>"
             "<flush_interval_milliseconds>1000</flush_interval_milliseconds></query_log>")
CPU_US = "ProfileEvents.Values[indexOf(ProfileEvents.Names, '{}TimeMicroseconds')]"
QUERIES = (f"SELECT ({CPU_US.format('User')} + {CPU_US.format('System')}) / 1e6 AS cpu, "
           "query_duration_ms, read_rows, written_rows, result_rows, cityHash64(query), "
           "substring(replaceRegexpAll(query, '[\\n\\t]', ' '), 1, 300) "
           "FROM system.query_log WHERE type = 2 ORDER BY cpu DESC FORMAT JSONCompact")


def configure(config, users):
    """CONFIG and USERS (the server's XML) with the query log on when it is asked for."""
    if not os.environ.get("BPFSIGHT_CH_QUERY_LOG"):
        return config, users
    return (config.replace("</yandex>", QUERY_LOG + "\n</yandex>"),
            users.replace("</default></profiles>", "<log_queries>1</log_queries></default>"
                          "</profiles>"))


def _cpu(stat_path):
    """(comm, utime + stime in seconds) of a /proc stat file."""
    with open(stat_path) as f:
        st = f.read()
    fields = st[st.rindex(")") + 2:].split()
    return (st[st.index("(") + 1:st.rindex(")")],
            (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"))


def write(ch):
    """The lines of server CH (running) to the files asked for, before it stops."""
    path = os.environ.get("BPFSIGHT_CH_CPU_LOG")
    if not path or not ch.proc or ch.proc.poll() is not None:
        return
    test = next((f.function for f in inspect.stack() if f.function.startswith("test_")), "?")
    threads = {}
    tasks = f"/proc/{ch.proc.pid}/task"
    for tid in os.listdir(tasks):
        try:
            comm, secs = _cpu(f"{tasks}/{tid}/stat")
        except OSError:
            continue  # exited meanwhile
        threads[comm] = threads.get(comm, 0) + secs
    total = _cpu(f"/proc/{ch.proc.pid}/stat")[1]
    if os.environ.get("BPFSIGHT_CH_QUERY_LOG"):
        ch.query("SYSTEM FLUSH LOGS")
        with open(os.environ["BPFSIGHT_CH_QUERY_LOG"], "a") as f:
            f.write(json.dumps({"test": test,
                                "queries": json.loads(ch.query(QUERIES))["data"]}) + "\n")
    with open(path, "a") as f:
        f.write(json.dumps({"test": test, "cpu_s": round(total, 2),
                            "threads": {k: round(v, 2) for k, v in threads.items() if v}})
                + "\n")
