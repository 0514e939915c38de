"""Installing like a system tool: make install/uninstall into a DESTDIR and the installed
binary run from there, the man pages agreeing with --help, getopt and docs/USAGE.md, and the
bash completion run for real."""
import os
import re
import shutil

from helpers import BPFSIGHT, BUILD, ROOT, check, eq, run, tmpdir

import helpers

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 2

USAGE = os.path.join(ROOT, "docs", "USAGE.md")
MAN = os.path.join(BUILD, "man")
LONGOPT = re.compile(r"--[a-z][a-z0-9-]*")


def commands():
    p = run([BPFSIGHT, "__complete", "commands"], check=True)
    return p.stdout.split()


def getopt_options(cmd):
    """The long options of CMD's getopt_long table, as the binary itself lists them."""
    p = run([BPFSIGHT, "__complete", "options", cmd], check=True)
    return {o.rstrip("=") for o in p.stdout.split()}


def help_options(cmd):
    """The long options `bpfsight CMD --help` describes (its option lines, not the prose)."""
    p = run([BPFSIGHT, cmd, "--help"], check=True)
    opts = set()
    for line in p.stdout.splitlines():
        m = re.match(r"\s+(?:-\w, )?(--[a-z][a-z0-9-]*)", line)
        if m:
            opts.add(m.group(1))
    return opts


def usage_options(cmd, usage_text):
    """The long options in the first column of the options table of USAGE.md's `## CMD`
    (cmd None: the text before the first section, bpfsight's own options)."""
    if cmd is None:
        body = re.split(r"^## ", usage_text, flags=re.M)[0]
    else:
        m = re.search(r"^## %s\n(.*?)(?=^## |\Z)" % re.escape(cmd), usage_text, re.M | re.S)
        check(m, f"docs/USAGE.md has no '## {cmd}' section")
        body = m.group(1)
    m = re.search(r"^\| option \|.*\n\|[-| ]+\|\n((?:\|.*\n)*)", body, re.M)
    check(m, f"docs/USAGE.md's {cmd or 'preamble'} has no options table")
    opts = set()
    for row in m.group(1).splitlines():
        opts |= set(LONGOPT.findall(row.split("|")[1]))
    return opts


def man_options(page):
    """The long options tagged in the OPTIONS section of a generated man page."""
    with open(page) as f:
        roff = f.read()
    m = re.search(r"^\.SH OPTIONS\n(.*?)(?=^\.SH )", roff, re.M | re.S)
    check(m, f"{page} has no OPTIONS section")
    opts = set()
    lines = m.group(1).splitlines()
    for i, line in enumerate(lines):
        if line == ".TP" and i + 1 < len(lines):
            opts |= set(LONGOPT.findall(lines[i + 1].replace("\\-", "-")))
    return opts


def disagreements(usage_text, mandir):
    """Every (command, source, missing or extra options) where --help, USAGE.md or the man
    page lists other long options than the command's getopt table."""
    out = []
    for cmd in commands():
        want = getopt_options(cmd)
        for what, got in (("--help", help_options(cmd)),
                          ("docs/USAGE.md", usage_options(cmd, usage_text)),
                          ("man page", man_options(os.path.join(mandir,
                                                                f"bpfsight-{cmd}.1")))):
            if got != want:
                out.append((cmd, what, sorted(want - got), sorted(got - want)))
    return out


def test_man_help_usage_and_getopt_agree():
    with open(USAGE) as f:
        text = f.read()
    eq(disagreements(text, MAN), [], "(command, where, missing, extra)")
    eq(man_options(os.path.join(MAN, "bpfsight.1")), {"--version", "--help"},
       "bpfsight(1)'s options")
    eq(usage_options(None, text), {"--version", "--help"}, "USAGE.md's preamble options")
    eq(sorted(os.listdir(MAN)), sorted([".stamp", "bpfsight.1"] +
                                       [f"bpfsight-{c}.1" for c in commands()]),
       "one man page per command")


def test_agreement_check_catches_a_missing_option():
    """The check above fails when USAGE.md (and so the man page made from it) lacks an
    option that getopt has: drop --dry-run's row from a copy and make the pages again."""
    with open(USAGE) as f:
        text = f.read()
    cut = re.sub(r"^\| `--dry-run` \|.*\n", "", text, flags=re.M)
    check(cut != text, "USAGE.md has a --dry-run row")
    d = tmpdir()
    with open(os.path.join(d, "USAGE.md"), "w") as f:
        f.write(cut)
    run(["python3", os.path.join(ROOT, "tools", "mkman.py"), BPFSIGHT,
         os.path.join(d, "USAGE.md"), d], check=True)
    eq(disagreements(cut, d), [("record", "docs/USAGE.md", ["--dry-run"], []),
                               ("record", "man page", ["--dry-run"], [])], "found")


def test_man_pages_render_without_warnings():
    for page in sorted(os.listdir(MAN)):
        if not page.endswith(".1"):
            continue
        p = run(["groff", "-man", "-ww", "-z", os.path.join(MAN, page)])
        eq((p.returncode, p.stderr), (0, ""), f"groff -ww {page}")
    # The NAME line is the one `bpfsight --help` prints for the command.
    helptext = run([BPFSIGHT, "--help"], check=True).stdout
    with open(os.path.join(MAN, "bpfsight-stats.1")) as f:
        roff = f.read()
    line = re.search(r"^  stats +(.*)$", helptext, re.M).group(1)
    check(f"bpfsight\\-stats \\- {line.replace('-', chr(92) + '-')}\n" in roff,
          f"NAME of bpfsight-stats(1) is --help's line '{line}'")


def make(*args):
    # OUT spelled as make check's build spelled it (relative to the tree, "build"): make
    # names a target by its spelling, and the header dependencies an object's .d file lists
    # are for the spelling that compiled it. Another spelling finds objects stale that the
    # suite's build does not, and relinks build/bpfsight while other tests run it.
    out = os.path.relpath(os.path.abspath(BUILD), os.path.abspath(ROOT))
    # The version the build was made with: a tree edited since (git describe's "-dirty")
    # would rewrite the version header, and so relink build/bpfsight under the other tests.
    with open(os.path.join(BUILD, "bpfsight_version.h")) as f:
        version = re.search(r'"(.*)"', f.read()).group(1)
    return run(["make", "-C", ROOT, f"OUT={out}", f"VERSION={version}", *args], timeout=900,
               check=True)


def installed_files(root):
    found = set()
    for d, _, files in os.walk(root):
        for f in files:
            found.add(os.path.relpath(os.path.join(d, f), root))
    return found


def test_make_install_and_uninstall_destdir():
    dest = tmpdir()
    make("install", f"DESTDIR={dest}", "PREFIX=/opt/bs")
    shim = os.path.join(BUILD, "libbpfsight-shim.so")
    docs = ["README.md"] + sorted(f for f in os.listdir(os.path.join(ROOT, "docs"))
                                  if f.endswith(".md"))
    want = {"opt/bs/bin/bpfsight",
            "opt/bs/share/bash-completion/completions/bpfsight",
            "opt/bs/share/zsh/site-functions/_bpfsight"}
    want |= {f"opt/bs/share/man/man1/{p}" for p in os.listdir(MAN) if p.endswith(".1")}
    want |= {f"opt/bs/share/doc/bpfsight/{d}" for d in docs}
    if os.path.exists(shim):
        want.add("opt/bs/lib/bpfsight/libbpfsight-shim.so")
    eq(installed_files(dest), want, "installed files")

    exe = os.path.join(dest, "opt/bs/bin/bpfsight")
    eq(run([exe, "--version"], check=True).stdout, run([BPFSIGHT, "--version"]).stdout,
       "installed --version")
    eq(os.stat(exe).st_mode & 0o777, 0o755, "binary mode")
    p = run(["man", "-w", "bpfsight-record"], env=dict(os.environ, MANPATH=os.path.join(
        dest, "opt/bs/share/man")))
    eq(p.stdout.strip(), os.path.join(dest, "opt/bs/share/man/man1/bpfsight-record.1"),
       "man finds the installed page")

    if os.path.exists(shim):
        # The installed bpfsight's shim command finds the installed shim beside it and
        # leaves it as it is (same bytes: not rewritten).
        lib = os.path.join(dest, "opt/bs/lib/bpfsight/libbpfsight-shim.so")
        before = os.stat(lib)
        p = run([exe, "shim", "--print-env"], check=True)
        eq(p.stdout, f"export CUDA_INJECTION64_PATH={lib}\nexport NVTX_INJECTION64_PATH={lib}\n",
           "shim's environment")
        after = os.stat(lib)
        eq((after.st_ino, after.st_mtime_ns), (before.st_ino, before.st_mtime_ns),
           "installed shim left as it was")
        check(f"default\nDIR {os.path.dirname(lib)};" in run([exe, "shim", "--help"]).stdout,
              "shim --help names the installed directory")

    make("uninstall", f"DESTDIR={dest}", "PREFIX=/opt/bs")
    eq(installed_files(dest), set(), "files left after uninstall")
    check(not os.path.exists(os.path.join(dest, "opt/bs/lib/bpfsight")) and
          not os.path.exists(os.path.join(dest, "opt/bs/share/doc/bpfsight")),
          "bpfsight's own directories removed")


def complete(*words, wordbreak_eq=True):
    """COMPREPLY of the bash completion for the command line WORDS (the last one is being
    completed), run for real: the completion file sourced in a bash, as bash-completion
    would call it."""
    script = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); '
              '_bpfsight; printf "%s\\n" "${COMPREPLY[@]}"')
    p = run(["bash", "-c", script, "bash",
             os.path.join(ROOT, "completion", "bpfsight.bash"), BPFSIGHT, *words],
            cwd=ROOT, check=True)
    return [w for w in p.stdout.split("\n") if w]


def lines(*args):
    return run([BPFSIGHT, "__complete", *args], check=True).stdout.split()


def test_complete_lists_come_from_the_registries():
    """What `__complete` lists is what the commands accept: --help's lists of families,
    reports, kinds, formats."""
    rec = run([BPFSIGHT, "record", "--help"]).stdout
    eq(", ".join(lines("families")), re.search(r"available: (.*)", rec).group(1),
       "families = record --help's")
    check(lines("families")[:2] == ["osrt", "sched"], lines("families"))
    st = run([BPFSIGHT, "stats", "--help"]).stdout
    eq(", ".join(lines("reports")), re.search(r"reports: (.*)", st).group(1),
       "reports = stats --help's")
    ex = run([BPFSIGHT, "export", "--help"]).stdout
    eq(lines("export-formats"), re.findall(r"^  ([\w-]+) {2,}\S", ex.split("\n\n")[1], re.M),
       "export formats = export --help's")
    eq(lines("stats-formats"), ["table", "json", "csv"], "stats formats")
    dm = run([BPFSIGHT, "dump", "--help"]).stdout
    eq(", ".join(lines("kinds")), re.search(r"only these kinds \((.*)\)", dm).group(1),
       "kinds = dump --help's")
    check("__complete" not in run([BPFSIGHT, "--help"]).stdout, "hidden from --help")
    p = run([BPFSIGHT, "__complete", "options", "nope"])
    eq((p.returncode, p.stderr), (1, "bpfsight __complete: no command 'nope'\n"), "bad command")
    eq(run([BPFSIGHT, "__complete", "bogus"]).returncode, 1, "bad list")


def test_bash_completion():
    eq(complete(""), commands(), "commands")
    eq(complete("stat"), ["stats"], "a command's prefix")
    eq(complete("stac"), ["stacks"], "a command's prefix")
    eq(complete("-"), ["--help", "--version"], "bpfsight's options")
    eq(complete("record", "--"), sorted(lines("options", "record"),
                                        key=lines("options", "record").index),
       "record's options: its getopt table")
    eq(complete("record", "--sy"), ["--system-wide"], "an option's prefix")
    eq(complete("record", "-t", ""), lines("families"), "-t: every family")
    eq(complete("record", "-t", "os"), ["osrt"], "-t prefix")
    eq(complete("record", "-t", "osrt,s"), ["osrt,sched"], "after a comma")
    eq(complete("record", "--trace", "=", "g"), ["gil", "gpu", "gpumetrics"],
       "--trace=g (bash's split)")
    eq(complete("record", "--trace=osrt,n"), ["--trace=osrt,nccl", "--trace=osrt,nvtx"],
       "--trace=osrt,n in one word")
    eq(complete("record", "--pid", "=", ""), [], "--pid=: nothing to offer")
    eq(complete("stats", "-r", "gil_"), [r for r in lines("reports") if r.startswith("gil_")],
       "-r gil_")
    check(len(complete("stats", "-r", "gil_")) == 4,
          "gil_sum, gil_blocked_by, gil_procs, gil_stacks")
    eq(complete("stats", "--format", "=", ""), ["table", "json", "csv"], "stats --format")
    eq(complete("export", "-f", ""),
       ["perfetto", "chrome", "sqlite", "clickhouse", "folded", "pprof", "svg", "folded-offcpu",
        "memory-snapshot", "pprof-heap", "memory-flamegraph", "memory-flamegraph-leaks"],
       "export formats")
    eq(complete("dump", "-k", "gpu_mem"), ["gpu_memcpy", "gpu_memset"], "dump kinds")
    eq(complete("info", "docs/USA"), ["docs/USAGE.md"], "a file argument")
    eq(complete("shim", "-i", "complet"), ["completion"], "shim --install: a directory")
    check("bash" in complete("record", "--", "bas"), "after --: the command to run")


# zsh's completion system reduced to what _bpfsight calls, each printing what it would offer
# (the matching against the typed prefix is zsh's own, not tested here).
ZSH_STUBS = r"""
compadd() {
  local -a out
  while (( $# )); do
    case $1 in
      -a) out+=("${(@P)2}"); shift 2 ;;
      -S) shift 2 ;;
      -|--) shift; out+=("$@"); break ;;
      *) out+=("$1"); shift ;;
    esac
  done
  print -rl -- $out
}
_sequence() { "$@"; }
_files() { print -r -- "<files>"; }
_directories() { print -r -- "<dirs>"; }
_normal() { print -r -- "<normal:${words[1]}:$CURRENT>"; }
_call_program() { shift; eval "$*"; }
compset() { [[ $1 == -P ]] && PREFIX=${PREFIX#*=}; }
source $1
shift
words=("$@"); CURRENT=$#; PREFIX=${words[-1]}
_bpfsight
"""


def zsh_complete(*words):
    p = run(["zsh", "-f", "-c", ZSH_STUBS, "zsh", os.path.join(ROOT, "completion", "_bpfsight"),
             BPFSIGHT, *words], check=True)
    eq(p.stderr, "", "zsh's stderr")
    return p.stdout.split()


def test_zsh_completion():
    if not shutil.which("zsh"):
        raise helpers.Skip("no zsh")
    p = run(["zsh", "-n", os.path.join(ROOT, "completion", "_bpfsight")])
    eq((p.returncode, p.stderr), (0, ""), "zsh -n _bpfsight")
    eq(zsh_complete(""), commands(), "commands")
    eq(zsh_complete("-"), ["--help", "--version"], "bpfsight's options")
    opts = lines("options", "record")
    eq(zsh_complete("record", "--"), [o for o in opts if o.endswith("=")] +
       [o for o in opts if not o.endswith("=")], "record's options (with a value first)")
    eq(zsh_complete("record", "-t", ""), lines("families"), "-t")
    eq(zsh_complete("record", "--trace=os"), lines("families"), "--trace=")
    eq(zsh_complete("stats", "-r", "g"), lines("reports"), "-r")
    eq(zsh_complete("stats", "-f", ""), lines("stats-formats"), "stats -f")
    eq(zsh_complete("export", "--format=p"), lines("export-formats"), "export --format=")
    eq(zsh_complete("dump", "--kind", ""), lines("kinds"), "dump --kind")
    eq(zsh_complete("record", "--pid=1"), [], "--pid=: nothing")
    eq(zsh_complete("info", ""), ["<files>"], "a file")
    eq(zsh_complete("shim", "-i", ""), ["<dirs>"], "a directory")
    eq(zsh_complete("record", "-t", "osrt", "--", "ls", "-"), ["<normal:ls:2>"],
       "after --: the command's own completion, its words shifted")


def test_another_architecture_is_refused_by_the_build():
    """The native stack walker, the uprobe-API families' sixth argument and the system call
    numbers are x86-64's: on another machine the build stops and says so, before building
    anything."""
    p = run(["make", "-C", ROOT, "ARCH=arm64", "-n", "all"], timeout=60)
    check(p.returncode != 0 and "bpfsight builds for x86-64 only (this machine is arm64)"
          in p.stderr, f"{p.returncode}: {p.stderr[-400:]}")
