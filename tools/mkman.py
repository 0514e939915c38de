#!/usr/bin/env python3
"""Make the man pages from docs/USAGE.md, so the two never drift.

    tools/mkman.py BPFSIGHT USAGE.md OUTDIR

writes OUTDIR/bpfsight.1 and OUTDIR/bpfsight-CMD.1 for every command BPFSIGHT lists
(`bpfsight __complete commands`). A command's page is USAGE.md's `## CMD` section: its first
code block is the SYNOPSIS, its table whose first column is `option` the OPTIONS, the rest the
DESCRIPTION (`###` headings become sections). bpfsight.1 gets the text before the first
command and every section that is not a command. The one-line NAME of each page is the
binary's own `--help` line. Only the Markdown USAGE.md uses is understood: headings, fenced
code, tables, `- ` lists, paragraphs, `code`, **bold**, [links](...). Anything else is an error,
so a new construct in USAGE.md cannot silently render as garbage.
"""
import re
import subprocess
import sys

# Characters USAGE.md uses beyond ASCII, as groff's named glyphs (man pages stay ASCII).
GLYPHS = {"\u2014": r"\(em", "\u00b5": r"\(mc", "\u2192": r"\(->", "\u2265": r"\(>=",
          "\u2264": r"\(<=", "\u00d7": r"\(mu", "\u2013": r"\(en", "\u2026": "..."}


def die(msg):
    sys.exit("mkman: " + msg)


def esc(text):
    """Plain text -> roff: backslashes, minus signs, the glyphs above."""
    text = text.replace("\\", r"\e").replace("-", r"\-")
    for ch, glyph in GLYPHS.items():
        text = text.replace(ch, glyph)
    bad = re.search(r"[^\x00-\x7f]", text)
    if bad:
        die("no groff glyph for %r: add it to GLYPHS" % bad.group())
    return text


def inline(md):
    """A line of Markdown -> roff, with fonts for `code` and **bold**; links keep their text."""
    out, pos = [], 0
    for m in re.finditer(r"`([^`]+)`|\*\*([^*]+)\*\*|\[([^\]]+)\]\(([^)]+)\)", md):
        out.append(esc(md[pos:m.start()]))
        if m.group(1) is not None:
            out.append(r"\fB" + esc(m.group(1)) + r"\fR")
        elif m.group(2) is not None:
            out.append(r"\fB" + esc(m.group(2)) + r"\fR")
        else:
            out.append(inline(m.group(3)))
        pos = m.end()
    out.append(esc(md[pos:]))
    return "".join(out).replace("\\e|", "|")


def line(roff):
    """A text line that cannot be taken for a request."""
    return "\\&" + roff if roff[:1] in (".", "'") else roff


def cells(row):
    """| a | b\\|c | -> ['a', 'b|c']"""
    parts = re.split(r"(?<!\\)\|", row.strip())[1:-1]
    return [p.strip().replace("\\|", "|") for p in parts]


def blocks(lines):
    """Markdown lines -> [(kind, data)]: code, table, list, para, heading."""
    out, i = [], 0
    while i < len(lines):
        ln = lines[i]
        if not ln.strip():
            i += 1
        elif ln.startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            if j == len(lines):
                die("unclosed code block: " + ln)
            out.append(("code", lines[i + 1:j]))
            i = j + 1
        elif ln.startswith("#"):
            m = re.match(r"(#+) (.*)", ln)
            out.append(("heading", (len(m.group(1)), m.group(2))))
            i += 1
        elif ln.startswith("|"):
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            rows = [cells(r) for r in lines[i:j]]
            if len(rows) < 2 or not all(re.fullmatch(r":?-+:?", c) for c in rows[1]):
                die("table without a header line: " + ln)
            out.append(("table", (rows[0], rows[2:])))
            i = j
        elif ln.startswith("- "):
            items = []
            while i < len(lines) and lines[i].strip():
                if lines[i].startswith("- "):
                    items.append(lines[i][2:].strip())
                elif lines[i].startswith("  ") and items:
                    items[-1] += " " + lines[i].strip()
                else:
                    die("list item continued oddly: " + lines[i])
                i += 1
            out.append(("list", items))
        else:
            j = i
            while j < len(lines) and lines[j].strip() and not re.match(r"```|#|\||- ", lines[j]):
                j += 1
            out.append(("para", " ".join(x.strip() for x in lines[i:j])))
            i = j
    return out


def is_options(block):
    return block[0] == "table" and block[1][0][0].lower() == "option"


def render(block):
    kind, data = block
    if kind == "code":
        return [".PP", ".nf", ".RS 4"] + [line(esc(x)) for x in data] + [".RE", ".fi"]
    if kind == "para":
        return [".PP", line(inline(data))]
    if kind == "list":
        out = []
        for item in data:
            out += [".IP \\(bu 2", line(inline(item))]
        return out
    if kind == "table":
        # One tagged paragraph per row: the first cell is the tag, the others follow, each
        # after its column name when there are more than two columns.
        head, rows = data
        out = []
        for r in rows:
            out += [".TP", line(inline(r[0]))]
            if len(head) == 2:
                out.append(line(inline(r[1])))
            else:
                out.append(line(inline("; ".join("%s: %s" % (h, c) for h, c in
                                                 zip(head[1:], r[1:])))))
        return out
    if kind == "heading":
        return [".SH " + esc(data[1].upper())]
    die("unknown block " + kind)


def sections(text):
    """'## NAME' sections of USAGE.md: (preamble lines, [(name, lines)])."""
    pre, secs, cur = [], [], None
    for ln in text.splitlines():
        if ln.startswith("# ") and cur is None and not secs:
            continue  # the document title
        if ln.startswith("## "):
            cur = (ln[3:].strip(), [])
            secs.append(cur)
        elif cur is None:
            pre.append(ln)
        else:
            cur[1].append(ln)
    return pre, secs


def header(name, version, oneline):
    return ['.\\" Made by tools/mkman.py from docs/USAGE.md: edit that file, not this one.',
            '.TH %s 1 "" "bpfsight %s" "bpfsight manual"' % (esc(name.upper()), esc(version)),
            ".SH NAME", "%s \\- %s" % (esc(name), esc(oneline))]


def page_parts(bl):
    """Split a section's blocks into synopsis, options, and the rest."""
    codes = [i for i, b in enumerate(bl) if b[0] == "code"]
    syn = bl.pop(codes[0])[1] if codes else None
    opts = [b for b in bl if is_options(b)]
    if len(opts) > 1:
        die("more than one options table in a section")
    rest = [b for b in bl if not is_options(b)]
    out = []
    if syn:
        out += [".SH SYNOPSIS", ".nf"] + [line(esc(x)) for x in syn] + [".fi"]
    if opts:
        out += [".SH OPTIONS"] + render(opts[0])
    out.append(".SH DESCRIPTION")
    for b in rest:
        out += render(b)
    return out


def main():
    if len(sys.argv) != 4:
        die("usage: mkman.py BPFSIGHT USAGE.md OUTDIR")
    exe, usage, outdir = sys.argv[1:]
    version = subprocess.run([exe, "--version"], capture_output=True, text=True,
                             check=True).stdout.split()[-1]
    helptext = subprocess.run([exe, "--help"], capture_output=True, text=True,
                              check=True).stdout
    cmds = subprocess.run([exe, "__complete", "commands"], capture_output=True, text=True,
                          check=True).stdout.split()
    onelines = {}
    for cmd in cmds:
        m = re.search(r"^  %s +(.*)$" % re.escape(cmd), helptext, re.M)
        if not m:
            die("`%s --help` has no line for %s" % (exe, cmd))
        onelines[cmd] = m.group(1)
    pre, secs = sections(open(usage, encoding="utf-8").read())
    by_name = dict(secs)
    see_also = ["bpfsight(1)"] + ["bpfsight-%s(1)" % c for c in cmds]

    def write(name, body):
        others = ", ".join(r"\fB%s\fR(1)" % esc(s[:-3]) for s in see_also if s[:-3] != name)
        text = "\n".join(body + [".SH SEE ALSO", others]) + "\n"
        with open("%s/%s.1" % (outdir, name), "w") as f:
            f.write(text)

    for cmd in cmds:
        if cmd not in by_name:
            die("%s has no '## %s' section" % (usage, cmd))
        write("bpfsight-" + cmd, header("bpfsight-" + cmd, version, onelines[cmd]) +
              page_parts(blocks(by_name[cmd])))

    body = header("bpfsight", version, "eBPF tracer for ML workloads") + page_parts(blocks(pre))
    body += [".SH COMMANDS"]
    for cmd in cmds:
        body += [".TP", r"\fBbpfsight\-%s\fR(1)" % esc(cmd), esc(onelines[cmd])]
    for name, lines in secs:
        if name not in cmds:
            body += render(("heading", (2, name)))
            body += sum((render(b) for b in blocks(lines)), [])
    write("bpfsight", body)


if __name__ == "__main__":
    main()
