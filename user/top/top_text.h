/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What top's two views (top_screen.c: processes and threads; top_fview.c: functions) write
 * lines with: a line kept within the width, written without its trailing padding, and numbers
 * in a few characters.
 */
#ifndef BPFSIGHT_TOP_TEXT_H
#define BPFSIGHT_TOP_TEXT_H

#include <stddef.h>
#include <stdio.h>

#define TOP_LINE_W_MAX 512 /* the widest line written, whatever the width */

/* Append to LINE (at most WIDTH characters, kept NUL-terminated). */
void top_text__put(char *line, int width, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Write LINE without the spaces its padding left at the end, and count it in *N. */
void top_text__emit(FILE *out, const char *line, int *n);
/* Each of LINES (N of them) while fewer than HEIGHT (0: no limit) are written; *WRITTEN counts. */
void top_text__lines(FILE *out, int width, int height, const char *const *lines, size_t n,
		     int *written);
/* A column on a help screen, "HEAD  KEY  DESC", when fewer than HEIGHT lines are written. */
void top_text__col_help(FILE *out, int width, int height, const char *head, const char *key,
			const char *desc, int *written);

/* TEXT on the screen's last line (HEIGHT's; batch, HEIGHT 0: the next), the lines between blank. */
void top_text__last_line(FILE *out, int width, int height, const char *text, int *written);

struct top_frame;
/* The frame's losses: "lost 0", or in capitals with the interval's and their causes. */
void top_text__lost(char *line, int width, const struct top_frame *fr);
/* The title's end: " - every 1.0s - 0:00:05", the refresh and how long it has recorded. */
void top_text__clock(char *line, int width, unsigned long long interval_ns,
		     unsigned long long live_ns);
/* 12.3ms, 850us, 1.20s: a duration in 6 characters at most (8 past 100 s). */
void top_text__ns(char *buf, size_t len, double ns);
/* 3.5, 812, 12.3k, 123k, 1.2M: a rate in 6 characters at most. */
void top_text__rate(char *buf, size_t len, double x);

#endif /* BPFSIGHT_TOP_TEXT_H */
