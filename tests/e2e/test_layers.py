"""Which folder may include which: every #include "..." of user/ and bpf/ follows the tables of
docs/ARCHITECTURE.md's "Layers" section (tools/check_layers.py reads them there, so the rules
and the check cannot drift), and the check names what breaks them (planted in a copy)."""
import os
import shutil
import sys

from helpers import ROOT, check, eq, run, tmpdir

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 12

# For tests/run_tests.py: these tests read files only (no recording, no workload, nothing
# traced): they run beside the tests that run alone, on the core those leave idle.
BESIDE = "reads files only"

CHECK = os.path.join(ROOT, "tools", "check_layers.py")


def check_layers(root):
    return run([sys.executable, CHECK, "--root", root])


def test_includes_follow_the_layers():
    p = check_layers(ROOT)
    eq(p.returncode, 0, f"layers broken:\n{p.stdout}{p.stderr}")
    check("follow docs/ARCHITECTURE.md" in p.stdout, f"summary line: {p.stdout!r}")


def plant(path, after, line):
    """Add LINE after the first line of PATH that is AFTER; returns its line number."""
    with open(path) as f:
        lines = f.readlines()
    i = lines.index(after + "\n")
    lines.insert(i + 1, line + "\n")
    with open(path, "w") as f:
        f.writelines(lines)
    return i + 2


def copy_tree():
    d = tmpdir()
    for sub in ("user", "bpf"):
        shutil.copytree(os.path.join(ROOT, sub), os.path.join(d, sub))
    os.makedirs(os.path.join(d, "docs"))
    shutil.copy(os.path.join(ROOT, "docs", "ARCHITECTURE.md"), os.path.join(d, "docs"))
    return d


def test_a_planted_violation_is_named():
    d = copy_tree()
    eq(check_layers(d).returncode, 0, "the copy passes before anything is planted")

    core = plant(os.path.join(d, "user", "core", "trace_walk.c"), '#include "trace_walk.h"',
                 '#include "commands.h"')
    pair = plant(os.path.join(d, "user", "families", "osrt", "osrt.h"), '#include "family.h"',
                 '#include "gil.h"')
    p = check_layers(d)
    eq(p.returncode, 1, f"planted violations fail the check: {p.stdout}")
    lines = p.stdout.splitlines()
    eq(len(lines), 3, f"one line per violation, and the circle core -> cli closes: {lines}")
    eq(lines[0], f'user/core/trace_walk.c:{core}: #include "commands.h": core may not include '
       f'cli; core may include: lib (docs/ARCHITECTURE.md, "Layers")', "core -> cli named")
    check(lines[1].startswith(f'user/families/osrt/osrt.h:{pair}: #include "gil.h": family osrt '
                              f'includes family gil, which is not a listed pair'),
          f"an unlisted family pair named: {lines[1]}")
    check(lines[2].startswith("include circle across folders: cli -> core (") and
          f"core -> cli (user/core/trace_walk.c:{core})" in lines[2],
          f"the circle core -> cli named with its includes: {lines[2]}")


def test_a_service_that_includes_one_above_it_is_named():
    """The services are floors in their row's order: record is below the stack service, so
    record_ctx.c reaching up into stack_svc.h breaks the order (and closes a circle)."""
    d = copy_tree()
    eq(check_layers(d).returncode, 0, "the copy passes before anything is planted")
    up = plant(os.path.join(d, "user", "record", "record_ctx.c"), '#include "record_ctx.h"',
               '#include "stack_svc.h"')
    p = check_layers(d)
    eq(p.returncode, 1, f"an include up the services fails the check: {p.stdout}")
    lines = p.stdout.splitlines()
    eq(lines[0], f'user/record/record_ctx.c:{up}: #include "stack_svc.h": stacks comes after '
       f'record in the services row, which is ordered: a services folder includes only those '
       f'before it (docs/ARCHITECTURE.md, "Layers")', "the include up named")
    check(any(x.startswith("include circle across folders:") and
              f"record -> stacks (user/record/record_ctx.c:{up})" in x for x in lines[1:]),
          f"and the circle it closes: {lines}")


def test_an_include_circle_the_rules_allow_is_still_named():
    """torch builds on mem (it includes mem_live.h) and mem on torch's records (both listed
    pairs): mem including a torch header too is allowed row by row, and closes a circle."""
    d = copy_tree()
    b = plant(os.path.join(d, "user", "families", "mem", "mem_leaks_report.c"),
              '#include "hmap.h"', '#include "torch.h"')
    p = check_layers(d)
    eq(p.returncode, 1, f"the circle fails the check: {p.stdout}")
    lines = p.stdout.splitlines()
    eq(len(lines), 1, f"the circle alone, both includes being allowed: {lines}")
    check(f"families/mem -> families/torch (user/families/mem/mem_leaks_report.c:{b})" in lines[0]
          and "families/torch -> families/mem (user/families/torch/" in lines[0],
          f"each step with its include: {lines[0]}")


def test_core_names_only_the_plug_in_tables_listed():
    """core is below the services: a core header naming one of their types (even by pointer,
    with no include) is named, and the family interface's listed plug-in tables are not."""
    d = copy_tree()
    line = plant(os.path.join(d, "user", "core", "event.h"), "struct json; /* json.h */",
                 "struct stack_svc;")
    p = check_layers(d)
    eq(p.returncode, 1, f"a service's type in core fails the check: {p.stdout}")
    lines = p.stdout.splitlines()
    eq(len(lines), 1, f"that one: {lines}")
    check(lines[0].startswith("user/core/event.h: struct stack_svc (user/stacks/) is named by "
                              "core, which is below it"), f"named: {lines[0]}")


def append(path, text):
    """Add TEXT's lines at the end of PATH; the number of its first line."""
    with open(path) as f:
        n = len(f.readlines())
    with open(path, "a") as f:
        f.write(text)
    return n + 1


def test_a_family_named_outside_it_is_named():
    """Nothing outside a family names it: a command including a family's header, naming its
    `family_NAME` or finding it by a literal name is named at its line. The same names in a
    comment or a string, a lookup by a variable, and a family naming one it builds on (a
    listed pair: gpu_unpack.c names family_cuda) are not; nor is the registry."""
    d = copy_tree()
    dump = os.path.join(d, "user", "cli", "cmd_dump.c")
    inc = plant(dump, '#include "commands.h"', '#include "nccl.h"')
    first = append(dump, "\n".join([
        "static const void *planted_a = &family_gpu;",
        'static const void *planted_b(void) { return family__find ( "nccl" ); }',
        "/* family_gpu, family__find(\"nccl\"): words of a comment */",
        'static const char *planted_c = "family_gpu family__find(\\"nccl\\")";',
        "static const void *planted_d(const char *n) { return family__find(n); }",
        'static const void *planted_e(void) { return family__find("nope"); }',
        "static int family_gpus_planted;",
        ""]))
    append(os.path.join(d, "user", "families", "families.c"),
           'const void *planted_f(void) { return family__find("gpu"); }\n')
    p = check_layers(d)
    eq(p.returncode, 1, f"a family named outside it fails the check: {p.stdout}")
    rule = ("names it; what is needed of it is a hook of the family interface (core/family.h) "
            "it fills, reached through the registry (docs/ARCHITECTURE.md, \"Layers\")")
    eq(p.stdout.splitlines(), [
        f'user/cli/cmd_dump.c:{inc}: #include "nccl.h": a header of the nccl family, outside '
        f"it: nothing outside a family {rule}",
        f"user/cli/cmd_dump.c:{first}: family_gpu: names the gpu family outside it: nothing "
        f"outside a family {rule}",
        f'user/cli/cmd_dump.c:{first + 1}: family__find ( "nccl" ): names the nccl family '
        f"outside it: nothing outside a family {rule}"], "one line per name, at its line")


def test_a_family_named_by_a_literal_outside_it_is_named():
    """A family's name as a string literal outside its folder is named at its line (the way
    "proc" counted the recording's own losses and nccl asked for "gpu" by name); the words the
    literal table lists (pprof's "cpu" in export_pprof.c) and a literal that is no family's are
    not; a listed word that is gone is named, so the table only shrinks."""
    d = copy_tree()
    attach = os.path.join(d, "user", "uprobe", "uprobe_attach.c")
    first = append(attach, "\n".join([
        'static const char *planted_a = "proc";',
        'static const char *planted_b = "cpu";',
        'static const char *planted_c = "procs";',
        "/* \"gpu\": words of a comment */",
        ""]))
    pprof = os.path.join(d, "user", "export", "export_pprof.c")
    with open(pprof) as f:
        text = f.read()
    with open(pprof, "w") as f:
        f.write(text.replace('"cpu"', '"CPU"'))
    p = check_layers(d)
    eq(p.returncode, 1, f"a family's name as a literal fails the check: {p.stdout}")
    lines = p.stdout.splitlines()
    eq(len(lines), 3, f"one line per literal, one for the stale table entry: {lines}")
    check(lines[0].startswith(f'user/uprobe/uprobe_attach.c:{first}: "proc": names the proc '
                              f"family outside it"), f"proc named: {lines[0]}")
    check(lines[1].startswith(f'user/uprobe/uprobe_attach.c:{first + 1}: "cpu": names the cpu '
                              f"family outside it"), f"cpu named where it is not listed: {lines[1]}")
    eq(lines[2], 'docs/ARCHITECTURE.md, "Layers": user/export/export_pprof.c no longer has the '
       'literal "cpu": remove it from the literal table', "the stale entry named")
