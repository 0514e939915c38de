"""The unwind tables bpfsight builds from .eh_frame and .debug_frame (issue 42; user/stacks/
unwind_build.h, printed by build/tests/unwind_dump), against binutils' decoded tables
(`readelf -wF`, tests/e2e/unwind_readelf.py) on real files: every row readelf prints, exact.
Then the same files spoiled (an FDE's instruction, a CIE's version, the section cut inside an
FDE, the file cut): stops with their reason, clean errors, never a row past the damage.
"""
import json
import os
import shutil
import stat
import struct
import subprocess

from helpers import BUILD, Skip, check, eq, run, tmpdir, workload
from unwind_readelf import compare, frames, row_at, table

SECONDS = 6
DUMP = os.path.join(BUILD, "tests", "unwind_dump")
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
LIBGOMP = "/usr/lib/x86_64-linux-gnu/libgomp.so.1"
LD_SO = "/lib64/ld-linux-x86-64.so.2"
PYENV_LIBPYTHON = os.path.expanduser("~/.pyenv/versions/3.10.13/lib/libpython3.10.so.1.0")
PLT_PROGRAM = workload("syscalls")  # a PIE with .plt and .plt.got


def dump(path, *opts, ok=True):
    p = run([DUMP, *opts, path], timeout=60)
    if ok:
        eq(p.returncode, 0, f"unwind_dump {path}: {p.stderr}")
        return table(p.stdout)
    return p


def kinds(rows):
    return {r[1] for r in rows}


def need(path):
    if not os.path.exists(path):
        raise Skip(f"no {path}")
    return os.path.realpath(path)


def test_real_files_equal_readelf():
    """libc (a signal frame, clone's undefined return address), libgomp (a PLT), pyenv's
    libpython3.10 (built without frame pointers), a PLT-bearing program and ld.so (its entry
    code has no CFI: the outermost frame, an END row): every row."""
    files = [(need(LIBC), {"signal", "end", "rbp"}), (need(LIBGOMP), {"plt"}),
             (PLT_PROGRAM, {"plt", "end"}), (need(LD_SO), {"end"})]
    if os.path.exists(PYENV_LIBPYTHON):
        files.append((PYENV_LIBPYTHON, {"rsp"}))
    for path, must in files:
        counts, rows = dump(path)
        n = compare(path, rows)
        check(n > 5, f"{path}: {n} rows compared")
        eq(counts["rows"], len(rows), f"{path}: the count of rows")
        eq(counts["bytes"], 12 * len(rows), f"{path}: 12 bytes a row")
        eq(counts["fdes_refused"] + counts["fdes_bad"] + counts["sections_cut"], 0,
           f"{path}: nothing refused or bad")
        eq(must - kinds(rows), set(), f"{path}: kinds of rows it must have")
    if not os.path.exists(PYENV_LIBPYTHON):
        raise Skip(f"no {PYENV_LIBPYTHON} (the other files passed)")


def debug_frame_program(d):
    """A program whose own functions have only .debug_frame (-fno-asynchronous-unwind-tables),
    its crt files' .eh_frame beside."""
    src = os.path.join(d, "df.c")
    with open(src, "w") as f:
        f.write("#include <stdio.h>\n#include <stdlib.h>\n"
                "__attribute__((noinline)) static long leaf(long *a, int n)\n"
                "{ long s = 0; for (int i = 0; i < n; i++) s += a[i] * i; return s; }\n"
                "__attribute__((noinline)) long mid(int n)\n"
                "{ long *a = malloc(n * sizeof(long)); for (int i = 0; i < n; i++) a[i] = i;\n"
                "  long s = leaf(a, n); free(a); return s; }\n"
                "int main(int argc, char **argv) { printf(\"%ld\\n\", mid(argc * 100)); }\n")
    prog = os.path.join(d, "df")
    subprocess.run(["gcc", "-g", "-O2", "-fno-asynchronous-unwind-tables",
                    "-fomit-frame-pointer", src, "-o", prog], check=True)
    return prog


def test_debug_frame_and_debug_file():
    """.debug_frame read from the file itself, then from its debug file found by build id
    under a root (compressed with zlib, as Debian's are), with the same rows; without it, the
    functions only .debug_frame describes are gaps (STOP_NONE)."""
    d = tmpdir()
    prog = debug_frame_program(d)
    counts, rows = dump(prog)
    eq(counts["sources"], 1 | 2, "sources: .eh_frame and its own .debug_frame")
    n = compare(prog, rows, [(prog, ".eh_frame"), (prog, ".debug_frame")])
    debug_only = frames(prog, ".debug_frame")[1]
    check(n > 5 and debug_only, f"{n} rows compared, {len(debug_only)} FDEs of .debug_frame")

    stripped, debug = prog + ".stripped", os.path.join(d, "df.debug")
    subprocess.run(["objcopy", "--only-keep-debug", "--compress-debug-sections=zlib", prog,
                    debug], check=True)
    subprocess.run(["objcopy", "--strip-debug", prog, stripped], check=True)
    build_id = counts["build_id"]
    root = os.path.join(d, "root")
    where = os.path.join(root, "usr/lib/debug/.build-id", build_id[:2])
    os.makedirs(where)
    shutil.copy(debug, os.path.join(where, build_id[2:] + ".debug"))
    alone_counts, alone_rows = dump(stripped)
    eq(alone_counts["sources"], 1, "sources without the debug file")
    for f in debug_only:
        eq(row_at(alone_rows, [r[0] for r in alone_rows], f.pc)[1], "stop-none",
           f"{f.pc:#x} without its debug file")
    with_counts, with_rows = dump(stripped, "--root", root)
    eq(with_counts["sources"], 1 | 4, "sources: .eh_frame and the debug file's .debug_frame")
    eq(with_rows, rows, "the rows with the debug file: those of the unstripped program")


def elf_section(data, name):
    """(file offset, size, offset of its sh_size field) of section NAME of ELF DATA."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
    strtab_off, = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)
    for i in range(shnum):
        h = shoff + i * shentsize
        nm, = struct.unpack_from("<I", data, h)
        end = data.index(b"\0", strtab_off + nm)
        if data[strtab_off + nm:end].decode() == name:
            off, size = struct.unpack_from("<QQ", data, h + 0x18)
            return off, size, h + 0x20
    raise AssertionError(f"no {name}")


def spoiled(name, patch):
    """A copy of libgomp with PATCH(bytearray, .eh_frame's offset, size, sh_size field) done."""
    data = bytearray(open(need(LIBGOMP), "rb").read())
    off, size, size_field = elf_section(data, ".eh_frame")
    patch(data, off, size, size_field)
    path = os.path.join(tmpdir(), name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def instructions_at(fde_off):
    """Where an FDE's instructions start in libgomp's .eh_frame: its CIE is "zR" with sdata4
    pointers (length, CIE pointer, pc, range, an empty augmentation: 17 bytes)."""
    return fde_off + 17


def pick_fde(fdes, i):
    """An FDE with at least three rows, from the I-th on."""
    return next(f for f in fdes[i:] if len(f.rows) >= 3 and f.cie.aug == "zR")


def test_corrupt_fde_and_cie():
    """An opcode no DWARF has in one FDE: that FDE is one STOP_BAD row, every other row is
    as it was. A CIE of an unknown version: its FDEs are left out, counted."""
    gomp = need(LIBGOMP)
    _, good = dump(gomp)
    _, fdes = frames(gomp)
    f = pick_fde(fdes, len(fdes) // 3)

    def bad_opcode(data, off, size, size_field):
        at = off + instructions_at(f.off)
        eq(data[at - 1], 0, "the FDE's augmentation length (empty)")
        data[at] = 0x3c  # between DW_CFA_val_expression and the vendor opcodes: none
    counts, rows = dump(spoiled("gomp-opcode.so", bad_opcode))
    eq(counts["fdes_bad"], 1, "FDEs cut at an error")
    inside = [r for r in rows if f.pc <= r[0] < f.end]
    eq(inside, [(f.pc, "stop-bad", 0, 0)], "the spoiled FDE's rows")
    eq([r for r in rows if not f.pc <= r[0] < f.end],
       [r for r in good if not f.pc <= r[0] < f.end], "every other row")

    def bad_version(data, off, size, size_field):
        data[off + f.cie.off + 8] = 9  # length, CIE id, then the version
    counts, rows = dump(spoiled("gomp-cie.so", bad_version))
    eq((counts["rows"], counts["fdes"], counts["fdes_refused"]), (0, 0, len(fdes) + 1),
       "no rows; every FDE and the CIE refused")


def test_cut_eh_frame():
    """.eh_frame's size cut inside an FDE's instructions: the FDEs before the cut keep their
    rows, the cut FDE is STOP_BAD all through, nothing after it has a row."""
    gomp = need(LIBGOMP)
    _, good = dump(gomp)
    good_pcs = [r[0] for r in good]
    _, fdes = frames(gomp)
    cut = pick_fde(fdes, len(fdes) // 2)
    cut_at = instructions_at(cut.off) + 1

    def shorten(data, off, size, size_field):
        struct.pack_into("<Q", data, size_field, cut_at)
    counts, rows = dump(spoiled("gomp-cut.so", shorten))
    eq((counts["sections_cut"], counts["fdes_bad"]), (1, 1), "a section cut, an FDE cut")
    before = [f for f in fdes if f.off < cut.off]
    after = [f for f in fdes if f.off > cut.off]
    check(before and after, "FDEs on both sides of the cut")
    pcs = [r[0] for r in rows]
    for f in before:
        for loc, _ in f.rows:
            if f.pc <= loc < f.end:
                eq(row_at(rows, pcs, loc), row_at(good, good_pcs, loc), f"row at {loc:#x}")
    eq([r[1] for r in rows if cut.pc <= r[0] < cut.end], ["stop-bad"], "the cut FDE's rows")
    ranges = [(f.pc, f.end) for f in before] + [(cut.pc, cut.end)]
    past = [r for r in rows if not any(s <= r[0] < e for s, e in ranges)
            and r[1] != "stop-none"]
    eq(past, [], "rows outside the FDEs before the cut (but the stops at their ends)")
    for f in after:
        got = row_at(rows, pcs, f.pc)
        check(got is None or got[1] in ("stop-none", "stop-bad"), f"FDE past the cut: {got}")


def test_no_section_headers():
    """A library whose section headers are gone (sstrip's, or cut off): .eh_frame found
    through PT_GNU_EH_FRAME and .eh_frame_hdr's table, the same rows."""
    gomp = need(LIBGOMP)
    counts, rows = dump(gomp)

    def no_headers(data, off, size, size_field):
        struct.pack_into("<Q", data, 0x28, 0)  # e_shoff
        struct.pack_into("<HHH", data, 0x3a, 0, 0, 0)  # e_shentsize, e_shnum, e_shstrndx
    bare_counts, bare_rows = dump(spoiled("gomp-bare.so", no_headers))
    eq(bare_counts["sources"], 1 | 8, "sources: .eh_frame, found by .eh_frame_hdr")
    eq((bare_counts["fdes"], bare_counts["build_id"]), (counts["fdes"], counts["build_id"]),
       "FDEs, build id (from PT_NOTE)")
    eq(bare_rows, rows, "the rows")


def test_bad_files_clean_errors():
    """Not an ELF file, a cut ELF file, a FIFO (never opened: the open would block), a
    missing file, a program without unwind sections: an error each, exit status 1, no
    table."""
    d = tmpdir()
    text = os.path.join(d, "text")
    shutil.copy("/etc/hostname", text)
    half = os.path.join(d, "half.so")
    data = open(need(LIBGOMP), "rb").read()
    open(half, "wb").write(data[:len(data) // 2])
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    bare = os.path.join(d, "no-unwind")
    subprocess.run(["objcopy", "-R", ".eh_frame", "-R", ".eh_frame_hdr", "-R", ".debug_frame",
                    PLT_PROGRAM, bare], check=True)
    for path, why in ((text, "Exec format error"), (half, "Exec format error"),
                      (fifo, "Exec format error"), (os.path.join(d, "none"), "No such file"),
                      (bare, "No data available")):
        p = dump(path, ok=False)
        eq(p.returncode, 1, f"{path}: exit status ({p.stderr})")
        check(why in p.stderr and not p.stdout, f"{path}: {p.stderr!r}")
    check(stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO is still one")


def test_cache_shares_by_build_id():
    """The cache: a file built once; its copy (the same build id) answered from it."""
    gomp = need(LIBGOMP)
    copy = os.path.join(tmpdir(), "libgomp-copy.so")
    shutil.copy(gomp, copy)
    p = run([DUMP, "--stats", gomp, copy], timeout=60)
    eq(p.returncode, 0, p.stderr)
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    eq(lines[0]["rows"], lines[2]["rows"], "the same table")
    eq((lines[4]["cache_files"], lines[4]["cache_hits"]), (1, 3),
       "one table built; the copy and the second calls answered from the cache")
