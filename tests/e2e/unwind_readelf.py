"""binutils' decoded call-frame tables (`readelf -wF`), the truth bpfsight's unwind tables
(user/stacks/unwind_build.h, dumped by build/tests/unwind_dump) are compared with.

readelf prints, per FDE, a row at each address where a rule may change: the CFA ("rsp+16",
"rbp+16", "exp" for an expression) and a column per register the CIE or FDE names ("c-16":
saved at CFA-16; "u": undefined, which is also how it shows a register not yet saved; "s":
same value; "exp"; a register's name). An FDE whose instructions are all padding has no rows:
its CIE's initial row holds.
"""
import bisect
import json
import re
import subprocess

from helpers import check, eq

ENTRY = re.compile(r"^([0-9a-f]{8,16}) ([0-9a-f]{8,16}) ([0-9a-f]{8,16}) (CIE|FDE)(.*)$")
FDE_RANGE = re.compile(r"cie=([0-9a-f]+) pc=([0-9a-f]+)\.\.([0-9a-f]+)")
CIE_INFO = re.compile(r'"([^"]*)" cf=(-?\d+) df=(-?\d+) ra=(\d+)')
ROW = re.compile(r"^([0-9a-f]{16}) (.*)$")
VALUE = re.compile(r"r\d+ \([^)]*\)|\S+")  # a register rule "r10 (r10)" is one value


class Entry:
    def __init__(self, off, kind):
        self.off, self.kind = off, kind
        self.columns, self.rows = [], []  # rows: (loc, {column: value})
        self.aug, self.ra, self.cie, self.pc, self.end = "", 16, None, 0, 0
        self.path, self.section = None, None


RBP_AT = re.compile(r"DW_CFA_expression: r6 \(rbp\) \(DW_OP_breg6 \(rbp\): (-?\d+)\)$")
CFA_AT = re.compile(r"DW_CFA_def_cfa_expression \(DW_OP_breg6 \(rbp\): (-?\d+); DW_OP_deref\)$")
_raw = {}


def expressions(f):
    """The expressions FDE F's instructions (readelf -wf) give the CFA and rbp: ([CFA's], [rbp's]),
    each "rbp+N" (stack realignment's forms: *(rbp + N), and rbp saved at rbp + N) or "other"."""
    key = (f.path, f.section)
    if key not in _raw:
        out = subprocess.run(["readelf", "-wNf", f.path], capture_output=True, text=True,
                             check=True).stdout
        by_off, cur, inside = {}, None, False
        for line in out.splitlines():
            if line.startswith("Contents of the "):
                inside = line.startswith(f"Contents of the {f.section} section")
                continue
            m = ENTRY.match(line)
            if inside and m:
                cur = by_off.setdefault(int(m.group(1), 16), ([], []))
            elif inside and cur is not None and "DW_CFA_def_cfa_expression" in line:
                m = CFA_AT.search(line.strip())
                cur[0].append(f"rbp+{m.group(1)}" if m else "other")
            elif inside and cur is not None and "DW_CFA_expression: r6 " in line:
                m = RBP_AT.search(line.strip())
                cur[1].append(f"rbp+{m.group(1)}" if m else "other")
        _raw[key] = by_off
    return _raw[key].get(f.off, ([], []))


def only(forms):
    """The one offset of FORMS, all "rbp+N" with a single N; else None."""
    if len(set(forms)) != 1 or not forms[0].startswith("rbp+"):
        return None
    return int(forms[0][4:])


def frames(path, section=".eh_frame"):
    """The CIEs and FDEs readelf decodes in PATH's SECTION: ({offset: CIE}, [FDE])."""
    out = subprocess.run(["readelf", "-wNF", path], capture_output=True, text=True, check=True)
    cies, fdes, cur, inside = {}, [], None, False
    for line in out.stdout.splitlines():
        if line.startswith("Contents of the "):
            inside = line.startswith(f"Contents of the {section} section")
            cur = None
            continue
        if not inside:
            continue
        m = ENTRY.match(line)
        if m:
            cur = Entry(int(m.group(1), 16), m.group(4))
            cur.path, cur.section = path, section
            if cur.kind == "CIE":
                c = CIE_INFO.search(m.group(5))
                check(c, f"readelf's CIE line: {line}")
                cur.aug, cur.ra = c.group(1), int(c.group(4))
                cies[cur.off] = cur
            else:
                f = FDE_RANGE.search(m.group(5))
                check(f, f"readelf's FDE line: {line}")
                cur.cie = cies.get(int(f.group(1), 16))
                cur.pc, cur.end = int(f.group(2), 16), int(f.group(3), 16)
                fdes.append(cur)
            continue
        if cur is None:
            continue
        if line.strip().startswith("LOC"):
            cur.columns = line.split()[1:]
            continue
        m = ROW.match(line)
        if m:
            vals = VALUE.findall(m.group(2))
            cur.rows.append((int(m.group(1), 16), dict(zip(cur.columns, vals))))
    for f in fdes:
        check(f.cie is not None, f"FDE at {f.off:#x}: its CIE")
        if not f.rows:  # all padding: the CIE's initial rules
            check(f.cie.rows, f"the CIE of FDE {f.off:#x} has an initial row")
            f.rows = [(f.pc, f.cie.rows[0][1])]
    return cies, fdes


def plt_ranges(path):
    """[start, end) of PATH's PLT sections (.plt, .plt.sec, .plt.got): where readelf's "exp"
    CFA is binutils' PLT expression."""
    out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True, check=True)
    ranges = []
    for line in out.stdout.splitlines():
        m = re.search(r"\] (\.plt\S*)\s+\S+\s+([0-9a-f]+) [0-9a-f]+ ([0-9a-f]+)", line)
        if m:
            start = int(m.group(2), 16)
            ranges.append((start, start + int(m.group(3), 16)))
    return ranges


def entry_point(path):
    """PATH's ELF entry point (readelf -h), 0 when it has none."""
    out = subprocess.run(["readelf", "-hW", path], capture_output=True, text=True, check=True)
    m = re.search(r"Entry point address:\s+0x([0-9a-f]+)", out.stdout)
    return int(m.group(1), 16) if m else 0


def expected(fde, loc, rules, plts):
    """What bpfsight's row at LOC must say, from readelf's RULES: (kind, cfa_off, rbp_off);
    None where readelf's text cannot tell the value (a stop's offsets)."""
    stop = ("stop-expr", None, None)
    if "S" in fde.cie.aug:
        return ("signal", None, None)
    if fde.cie.ra != 16:
        return stop
    ra = rules.get("ra", "u")
    if ra == "u":
        return ("end", None, None)
    if ra != "c-8":
        return stop
    cfa, rbp = rules["CFA"], rules.get("rbp", "u")
    rbp_at = only(expressions(fde)[1]) if rbp == "exp" else None
    if cfa == "exp":
        if any(s <= loc < e for s, e in plts):
            return ("plt", None, 0) if rbp in ("u", "s") else stop
        # stack realignment: CFA = *(rbp + N), rbp saved at rbp + M
        n = only(expressions(fde)[0])
        if n is None or rbp_at is None or not -32768 <= rbp_at <= 32767:
            return stop
        return ("rbp-deref", n, rbp_at)
    m = re.fullmatch(r"(rsp|rbp)\+(-?\d+)", cfa)
    if not m:
        return stop
    reg, off = m.group(1), int(m.group(2))
    if rbp in ("u", "s", "r6 (rbp)"):
        rbp_off = 0
    elif re.fullmatch(r"c[-+]\d+", rbp) and int(rbp[1:]) != 0:
        rbp_off = int(rbp[1:])
    elif rbp_at is not None and reg == "rbp" and rbp_at != off:
        rbp_off = rbp_at - off  # *(rbp + M) is *(CFA + M - N) when CFA = rbp + N
    else:
        return stop
    if not -32768 <= rbp_off <= 32767:
        return stop
    return (reg, off, rbp_off)


def table(dump_out):
    """unwind_dump's output: (counts, [(pc, kind, cfa_off, rbp_off)])."""
    lines = dump_out.splitlines()
    rows = []
    for line in lines[1:]:
        pc, kind, cfa, rbp = line.split()
        rows.append((int(pc, 16), kind, int(cfa), int(rbp)))
    return json.loads(lines[0]), rows


def row_at(rows, pcs, loc):
    """The row covering LOC (the last with pc <= LOC), or None."""
    i = bisect.bisect_right(pcs, loc) - 1
    return rows[i] if i >= 0 else None


def compare(path, rows, sections=None):
    """Every row readelf prints for PATH's SECTIONS ((file, section name) pairs; PATH's
    .eh_frame when None) equals bpfsight's row at its address, each FDE's end is a STOP_NONE
    row unless another FDE starts there, and bpfsight has no row at an address readelf has
    none for but one: the file's entry point, where no FDE covers it (ld.so's _start), is an
    END row (the outermost frame), up to the next FDE (or a STOP_NONE row at its segment's
    end). Returns how many readelf rows were compared."""
    fdes = []
    for file, section in sections or [(path, ".eh_frame")]:
        fdes += frames(file, section)[1]
    plts = plt_ranges(path)
    pcs = [r[0] for r in rows]
    starts = {f.pc for f in fdes}
    locs = set()
    n = 0
    for f in fdes:
        for loc, rules in f.rows:
            if not f.pc <= loc < f.end:
                continue  # readelf goes on past the FDE's range; the table does not
            locs.add(loc)
            want = expected(f, loc, rules, plts)
            got = row_at(rows, pcs, loc)
            check(got is not None, f"{path}: no row at {loc:#x} (FDE {f.off:#x})")
            what = f"{path}: row at {loc:#x} (FDE {f.off:#x}, readelf {rules}): got {got}"
            eq(got[1], want[0], what)
            if want[1] is not None:
                eq(got[2], want[1], what + " (CFA offset)")
            if want[2] is not None:
                eq(got[3], want[2], what + " (rbp offset)")
            n += 1
        if f.end not in starts:
            got = row_at(rows, pcs, f.end)
            eq(got and got[1], "stop-none", f"{path}: the row at FDE {f.off:#x}'s end {f.end:#x}")
            locs.add(f.end)
    entry = entry_point(path)
    if entry and not any(f.pc <= entry < f.end for f in fdes):
        got = row_at(rows, pcs, entry)
        if got and got[0] == entry:
            eq(got[1], "end", f"{path}: the row at its entry point {entry:#x}, no FDE there")
            locs.add(entry)
            after = pcs.index(entry) + 1
            if after < len(rows) and rows[after][1] == "stop-none":
                locs.add(rows[after][0])
    extra = [hex(r[0]) for r in rows if r[0] not in locs]
    eq(extra[:10], [], f"{path}: rows at addresses where readelf has none")
    return n
