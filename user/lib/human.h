/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Numbers and names for people reading a terminal: durations and sizes in the unit that
 * keeps three significant digits, text cut to a width in the middle, paths cut to the file
 * name, the terminal's width. Table mode's view (table_view.c) and the verdict use them;
 * JSON and CSV never do (they stay exact).
 */
#ifndef BPFSIGHT_HUMAN_H
#define BPFSIGHT_HUMAN_H

#include <stddef.h>
#include <stdio.h>

/* "87 ns", "2.27 µs", "5.35 ms", "531 s": NS in the unit that keeps it under 1000. */
const char *human__ns(double ns, char *buf, size_t len);
/* "512 B", "1.50 KiB", "3.20 GiB". */
const char *human__bytes(double bytes, char *buf, size_t len);
/* Columns S takes on a terminal: UTF-8 continuation bytes take none. */
int human__width(const char *s);
/*
 * S in at most WIDTH columns: whole when it fits, else its head and tail around "…" (more
 * head than tail: a name's start says most). Into BUF (LEN bytes); returns BUF or S.
 */
const char *human__elide(const char *s, int width, char *buf, size_t len);
/*
 * Print TEXT (one paragraph, then a newline) in lines of at most WIDTH columns (0 = one line),
 * broken at spaces: the first goes on from column COL (what the caller printed before), the
 * others are indented by INDENT spaces; a word too long for a line is cut in the middle.
 * Returns the lines printed.
 */
int human__wrap(FILE *f, const char *text, int width, int col, int indent);
/*
 * Like human__elide, but a C++ name ("void ns::kernel<T, 4>(int, float*)") that does not fit
 * first loses its return type and the insides of its outer template and argument lists
 * ("ns::kernel<…>(…)", nsys's base name), which says more than any middle.
 */
const char *human__shorten(const char *s, int width, char *buf, size_t len);
/* The file name of a path ("/a/b/c.py" -> "c.py"); S itself when it names no directory. */
const char *human__base(const char *s);
/*
 * The width output to a terminal should fit: $COLUMNS when set to a number, else the width
 * of the terminal on FD, else 0 (not a terminal: no limit, as a pipe or a file wants).
 */
int human__term_width(int fd);

#endif /* BPFSIGHT_HUMAN_H */
