"""export --format perfetto: protoc decodes it, and its slices are dump's events one for one."""
import atexit
import collections
import gzip
import os
import re
import shutil
import subprocess
import tempfile

import helpers
import synth
from helpers import BPFSIGHT, check, dump, eq, need_root, record, run, tmpdir, workload

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 20

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCHEMAS = os.path.join(ROOT, "..", "shared", "schemas")
PROTO = "perfetto_trace.proto"
SYSCALLS = workload("syscalls")

# Recordings shared by the tests of this file (helpers.cleanup() removes per-test dirs).
_cache = {}
_cache_dir = None


def need_protoc():
    """protoc and Perfetto's schema, or a skip; in CI (CI=true), where `make deps` installs
    protoc and shared/ lies beside the clone, their absence is a failure, not a green run."""
    why = None
    if not shutil.which("protoc"):
        why = "protoc missing (apt-get install protobuf-compiler)"
    elif not os.path.exists(os.path.join(SCHEMAS, PROTO)):
        why = f"{PROTO} missing in {SCHEMAS} (shared/ beside the checkout)"
    if why and os.environ.get("CI") == "true":
        raise AssertionError(f"{why}: CI must have it")
    if why:
        raise helpers.Skip(why)


def recorded(name, cmd, *opts):
    """A trace of CMD, recorded once per run of this file."""
    global _cache_dir
    if name not in _cache:
        need_root()
        if _cache_dir is None:
            _cache_dir = tempfile.mkdtemp(prefix="bpfsight-export-")
            atexit.register(shutil.rmtree, _cache_dir, True)
        p, out = record(cmd, *opts, out=os.path.join(_cache_dir, name + ".bst"))
        eq(p.returncode, 0, f"record exit ({p.stderr})")
        _cache[name] = out
    return _cache[name]


def simple_trace():
    return recorded("simple", [SYSCALLS, "300", "5", "1000"], "--osrt-threshold", "0")


def threads_trace():
    return recorded("threads", [SYSCALLS, "--threads", "3", "50", "2", "500"],
                    "--osrt-threshold", "0")


def export(trace, out, *opts):
    return run([BPFSIGHT, "export", trace, "--format", "perfetto", "-o", out, *opts],
               timeout=300)


# protoc's text format, enough of it: `name {` ... `}` blocks and `name: value` lines.
_ESC = {"n": b"\n", "r": b"\r", "t": b"\t", '"': b'"', "'": b"'", "\\": b"\\",
        "a": b"\a", "b": b"\b", "f": b"\f", "v": b"\v", "?": b"?"}


_INT = re.compile(r"-?\d+")


def unquote(s):
    body, out, i = s[1:-1], bytearray(), 0
    if "\\" not in body:
        return body  # nothing escaped: the bytes are the text's own (a name, most strings)
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        n = body[i + 1]
        if n in "01234567":
            m = re.match(r"[0-7]{1,3}", body[i + 1:])
            out.append(int(m.group(0), 8))
            i += 1 + len(m.group(0))
        elif n == "x":
            m = re.match(r"[0-9a-fA-F]{1,2}", body[i + 2:])
            out.append(int(m.group(0), 16))
            i += 2 + len(m.group(0))
        else:
            out += _ESC[n]
            i += 2
    return out.decode("utf-8", "replace")


def parse_text(txt):
    """protoc --decode output -> nested dicts of lists."""
    root = collections.defaultdict(list)
    stack, top = [root], root
    # A million lines for a small real trace's export: the loop keeps the innermost message
    # in TOP and the integer pattern compiled (re's cache lookup per line was a third of it).
    isint = _INT.fullmatch
    for line in txt.splitlines():
        line = line.strip()
        if not line:
            continue
        if line == "}":
            stack.pop()
            top = stack[-1] if stack else None
        elif line[-1] == "{":
            child = collections.defaultdict(list)
            top[line[:-1].strip()].append(child)
            stack.append(child)
            top = child
        else:
            key, _, val = line.partition(": ")
            if val[:1] == '"':
                val = unquote(val)
            elif isint(val):
                val = int(val)
            top[key].append(val)
    eq(len(stack), 1, "balanced braces in protoc output")
    return root


def decode(path):
    with open(path, "rb") as f:
        p = subprocess.run(["protoc", f"--decode=perfetto.protos.Trace", f"--proto_path={SCHEMAS}",
                            PROTO], stdin=f, capture_output=True, timeout=300)
    eq(p.returncode, 0, f"protoc decodes the export ({p.stderr.decode()[-500:]})")
    return parse_text(p.stdout.decode())["packet"]


def one(msg, key, default=None):
    v = msg.get(key)
    return v[0] if v else default


class Model:
    """Tracks, interned names and track events of a decoded export."""

    def __init__(self, packets):
        self.packets = packets
        self.tracks = {}
        self.names, self.cats, self.keys = {}, {}, {}
        self.events = []  # (file index, type, ts, track uuid, track_event)
        for i, pk in enumerate(packets):
            eq(one(pk, "trusted_packet_sequence_id"), 1, f"packet {i} sequence id")
            for idata in pk.get("interned_data", []):
                for field, table in (("event_names", self.names),
                                     ("event_categories", self.cats),
                                     ("debug_annotation_names", self.keys)):
                    for e in idata.get(field, []):
                        check(one(e, "iid") not in table, f"iid {one(e, 'iid')} interned twice")
                        table[one(e, "iid")] = one(e, "name")
            for td in pk.get("track_descriptor", []):
                self.tracks.setdefault(one(td, "uuid"), []).append(td)
            for te in pk.get("track_event", []):
                uuid = one(te, "track_uuid")
                check(uuid in self.tracks, f"packet {i}: track {uuid} used before described")
                # Every iid refers to a name interned in this packet or an earlier one.
                check(one(te, "name_iid") in (None, *self.names), f"packet {i}: name iid")
                for c in te.get("category_iids", []):
                    check(c in self.cats, f"packet {i}: category iid {c}")
                for a in te.get("debug_annotations", []):
                    check(one(a, "name_iid") in self.keys, f"packet {i}: annotation name iid")
                ts = one(pk, "timestamp")
                check(ts is not None, f"packet {i}: timestamped")
                self.events.append((i, one(te, "type"), ts, uuid, te))

    def thread_of(self, uuid):
        """(pid, tid) of the thread a track belongs to; (0, 0) for root tracks."""
        td = self.tracks[uuid][-1]
        if "thread" in td:
            th = td["thread"][0]
            return one(th, "pid"), one(th, "tid")
        if "parent_uuid" in td:
            return self.thread_of(one(td, "parent_uuid"))
        return 0, 0

    def args(self, te):
        out = {}
        for a in te.get("debug_annotations", []):
            key = self.keys[one(a, "name_iid")]
            for field in ("uint_value", "int_value", "string_value"):
                if field in a:
                    out[key] = one(a, field)
            if "pointer_value" in a:
                out[key] = hex(one(a, "pointer_value"))
        return out

    def thread_names(self):
        names = {}
        for descs in self.tracks.values():
            for td in descs:
                for th in td.get("thread", []):
                    names.setdefault((one(th, "pid"), one(th, "tid")), set()).add(
                        one(th, "thread_name"))
        return names


def freeze(args):
    return tuple(sorted((k, v) for k, v in args.items()))


def check_matches_dump(trace, pftrace):
    """BEGIN/END and INSTANT events are dump's events one for one, with their args."""
    m = Model(decode(pftrace))
    evs = dump(trace)
    want_begin, want_end, want_inst = (collections.Counter() for _ in range(3))
    for e in evs:
        if e["kind"] == "cpu_sample":  # PerfSample packets (a launch's default samples):
            continue  # test_export_stacks checks them
        key = (e["kind"], e["name"], e["pid"], e["tid"], e["ts"], freeze(e["args"]))
        if e["dur"] > 0:
            want_begin[key] += 1
            want_end[(e["kind"], e["pid"], e["tid"], e["ts"] + e["dur"])] += 1
        else:
            want_inst[key] += 1

    got_begin, got_end, got_inst = (collections.Counter() for _ in range(3))
    track_kinds = collections.defaultdict(set)
    for _, typ, ts, uuid, te in m.events:
        if typ in ("TYPE_SLICE_BEGIN", "TYPE_INSTANT"):
            cats = [m.cats[c] for c in te["category_iids"]]
            eq(len(cats), 1, "one category (the kind) per event")
            pid, tid = m.thread_of(uuid)
            key = (cats[0], m.names[one(te, "name_iid")], pid, tid, ts, freeze(m.args(te)))
            (got_begin if typ == "TYPE_SLICE_BEGIN" else got_inst)[key] += 1
            if typ == "TYPE_SLICE_BEGIN":
                track_kinds[uuid].add(cats[0])
    for _, typ, ts, uuid, te in m.events:
        if typ == "TYPE_SLICE_END":
            eq(len(track_kinds[uuid]), 1, f"slices of one kind on track {uuid}")
            pid, tid = m.thread_of(uuid)
            got_end[(next(iter(track_kinds[uuid])), pid, tid, ts)] += 1

    def diff(want, got, what):
        missing, extra = want - got, got - want
        check(not missing and not extra,
              f"{what}: missing {list(missing.items())[:3]}, extra {list(extra.items())[:3]}")

    diff(want_begin, got_begin, "slice begins")
    diff(want_end, got_end, "slice ends")
    diff(want_inst, got_inst, "instants")
    check(sum(want_begin.values()) > 0 and sum(want_inst.values()) > 0,
          "the trace has slices and instants")

    # Slices on one track must nest once sorted by time, as trace processor sorts them.
    per_track = collections.defaultdict(list)
    for idx, typ, ts, uuid, te in m.events:
        if typ in ("TYPE_SLICE_BEGIN", "TYPE_SLICE_END"):
            per_track[uuid].append((ts, idx, typ))
    for uuid, seq in per_track.items():
        depth = 0
        for ts, idx, typ in sorted(seq):
            depth += 1 if typ == "TYPE_SLICE_BEGIN" else -1
            check(depth >= 0, f"track {uuid}: END before its BEGIN at {ts}")
        eq(depth, 0, f"track {uuid}: every slice ends")
    return m, evs


def check_clocks(m):
    first = m.packets[0]
    eq(one(first, "sequence_flags"), 1, "first packet clears incremental state")
    eq(one(one(first, "trace_packet_defaults"), "timestamp_clock_id"), 3,
       "default clock MONOTONIC")
    snap = one(first, "clock_snapshot")
    check(snap is not None, "clock snapshot in the first packet")
    clocks = {one(c, "clock_id"): one(c, "timestamp") for c in snap["clocks"]}
    eq(sorted(clocks), [1, 3, 6], "REALTIME, MONOTONIC and BOOTTIME snapshotted")
    check(all(v > 0 for v in clocks.values()), f"clock values {clocks}")
    first_ts = min(ts for _, _, ts, _, _ in m.events)
    check(clocks[3] <= first_ts, "the MONOTONIC snapshot is the recording's start")


def test_export_perfetto_matches_dump():
    need_protoc()
    trace = simple_trace()
    out = os.path.join(tmpdir(), "t.pftrace")
    p = export(trace, out)
    eq(p.returncode, 0, f"export exit ({p.stderr})")
    check(re.search(r"wrote .*t\.pftrace \(\d+ events\)", p.stderr), f"summary: {p.stderr}")
    eq(os.stat(out).st_mode & 0o777, 0o600, "OUT mode")
    m, evs = check_matches_dump(trace, out)
    check_clocks(m)
    pid = next(e["pid"] for e in evs if e["kind"] == "syscall" and e["name"] == "getppid")
    eq(sum(e["kind"] == "syscall" and e["name"] == "getppid" and e["pid"] == pid for e in evs),
       300, "the workload's getppid calls are all in the trace")
    names = m.thread_names()
    check("syscalls" in names.get((pid, pid), set()), f"main thread named: {names}")
    # Child tracks per kind, under the thread track.
    kinds = {one(td, "name") for descs in m.tracks.values() for td in descs
             if "parent_uuid" in td and "thread" not in td}
    check({"syscalls", "off-CPU"} <= kinds, f"per-kind tracks {kinds}")


def test_export_perfetto_threads():
    need_protoc()
    trace = threads_trace()
    out = os.path.join(tmpdir(), "t.pftrace")
    p = export(trace, out)
    eq(p.returncode, 0, f"export exit ({p.stderr})")
    m, evs = check_matches_dump(trace, out)
    names = m.thread_names()
    all_names = set().union(*names.values())
    for i in range(3):
        check(f"worker-{i}" in all_names, f"thread worker-{i} in ThreadDescriptors ({names})")
    workers = {(e["pid"], e["tid"]) for e in evs
               if e["kind"] == "syscall" and e["name"] == "nanosleep"}
    eq(len(workers), 3, "nanosleep on three threads")
    for pt in workers:
        check(any(n and n.startswith("worker-") for n in names.get(pt, ())),
              f"thread {pt} described with its name")


def test_export_perfetto_loss_counter():
    need_protoc()
    # A 4 KiB ring (85 records) under 50000 calls as fast as they go loses events (thousands,
    # every run seen): loss markers and the cumulative counter show it. Every event kept is
    # decoded below: more calls only make the check slower.
    p, trace = record([SYSCALLS, "50000", "0"], "-t", "osrt", "--osrt-threshold", "0",
                      "--buffer-size", "4096")
    eq(p.returncode, 0, f"record exit ({p.stderr})")
    lost = helpers.info(trace)["lost_total"]
    check(lost > 0, "the small ring lost events")
    out = os.path.join(tmpdir(), "t.pftrace")
    eq(export(trace, out).returncode, 0, "export exit")
    m, evs = check_matches_dump(trace, out)
    counters = [u for u, descs in m.tracks.items() if any("counter" in td for td in descs)]
    eq(len(counters), 1, "one counter track")
    eq(one(m.tracks[counters[0]][0], "name"), "events lost", "counter track name")
    values = [(ts, one(te, "counter_value")) for _, typ, ts, uuid, te in m.events
              if typ == "TYPE_COUNTER" and uuid == counters[0]]
    check(values, "counter values")
    vals = [v for _, v in sorted(values)]
    eq(vals, sorted(vals), "the counter is cumulative")
    eq(vals[-1], lost, "the counter ends at the total lost")
    eq(len(values), 1 + sum(e["kind"] == "loss" for e in evs), "a value per loss record + 0")

def test_export_perfetto_gzip_same_bytes():
    need_root()
    trace = simple_trace()
    d = tmpdir()
    plain, gz = os.path.join(d, "t.pftrace"), os.path.join(d, "t.pftrace.gz")
    eq(export(trace, plain).returncode, 0, "plain export")
    p = export(trace, gz)
    eq(p.returncode, 0, f"gzip export ({p.stderr})")
    with open(plain, "rb") as f, gzip.open(gz, "rb") as g:
        eq(g.read() == f.read(), True, ".gz decompresses to the plain export")


def test_export_perfetto_refuses_existing_out():
    need_root()
    trace = simple_trace()
    d = tmpdir()
    out = os.path.join(d, "t.pftrace")
    with open(out, "w") as f:
        f.write("keep me")
    p = export(trace, out)
    eq(p.returncode, 1, "existing OUT refused")
    check("--force" in p.stderr, f"says to use --force: {p.stderr}")
    eq(open(out).read(), "keep me", "OUT untouched")
    p = export(trace, out, "--force")
    eq(p.returncode, 0, f"--force replaces ({p.stderr})")
    check(open(out, "rb").read() != b"keep me", "OUT replaced")
    # A symlink is never followed or replaced, even with --force.
    target = os.path.join(d, "target")
    with open(target, "w") as f:
        f.write("target")
    link = os.path.join(d, "link.pftrace")
    os.symlink(target, link)
    p = export(trace, link, "--force")
    eq(p.returncode, 1, "symlink OUT refused")
    eq(open(target).read(), "target", "symlink target untouched")
    check(os.path.islink(link), "symlink left in place")


def test_export_perfetto_default_out_name():
    need_root()
    d = tmpdir()
    trace = os.path.join(d, "run.bst")
    shutil.copy(simple_trace(), trace)
    p = run([BPFSIGHT, "export", trace, "--format", "perfetto"])
    eq(p.returncode, 0, f"export exit ({p.stderr})")
    check(os.path.exists(os.path.join(d, "run.pftrace")), "OUT defaults to FILE.pftrace")


def test_export_perfetto_bad_input():
    d = tmpdir()
    out = os.path.join(d, "o.pftrace")
    garbage = os.path.join(d, "garbage.bst")
    with open(garbage, "wb") as f:
        f.write(os.urandom(4096))
    for path in (garbage, os.path.join(d, "missing.bst")):
        p = export(path, out)
        eq(p.returncode, 1, f"export of {os.path.basename(path)}")
        check(p.stderr.startswith("bpfsight export: "), f"error message: {p.stderr}")
        check(not os.path.exists(out), "no OUT left behind")
    p = run([BPFSIGHT, "export", garbage])
    eq(p.returncode, 1, "no --format")
    p = run([BPFSIGHT, "export", garbage, "--format", "nope", "-o", out])
    eq(p.returncode, 1, "unknown format")
    check("perfetto" in p.stderr, f"lists the formats: {p.stderr}")


def test_export_perfetto_unwritable_out():
    need_root()
    trace = simple_trace()
    out = os.path.join(tmpdir(), "no", "such", "dir", "t.pftrace")
    p = export(trace, out)
    eq(p.returncode, 1, "unwritable OUT")
    check("cannot create" in p.stderr and out in p.stderr, f"clear error: {p.stderr}")


def test_export_perfetto_corrupt_chunk():
    need_protoc()
    d = tmpdir()
    t = synth.Trace(families="proc,gil", start=1000, end=10 ** 7, flush_every=8)
    t.process(4242, "python3")
    t.thread(4242, 4243, "worker")
    for i in range(64):
        t.gil_wait(4242, 4243, 2000 + i * 10 ** 5, 5 * 10 ** 4, holder=4242)
    trace = synth.spoil_a_chunk(t.write(d), os.path.join(d, "c.bst"))
    out = os.path.join(d, "c.pftrace")
    p = export(trace, out)
    eq(p.returncode, 3, f"corrupt chunks skipped -> 3 ({p.stderr})")
    check("1 corrupt chunks skipped" in p.stderr, f"warns: {p.stderr}")
    waits = [s for s in decode(out) if "GIL" in str(s)]
    check(0 < len(waits) < 64, f"what was readable is still a valid trace: {len(waits)} waits")


def test_export_help():
    p = run([BPFSIGHT, "export", "--help"])
    eq(p.returncode, 0, "--help exit")
    check(p.stdout.startswith("Usage: bpfsight export"), f"usage: {p.stdout[:200]}")
    check("perfetto" in p.stdout and "--force" in p.stdout, "help lists formats and --force")
