// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Numbers and names for people reading a terminal; see human.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include "human.h"

/*
 * V in the first of UNITS (each FACTOR times the last) that keeps it under 1000 once rounded,
 * with three significant digits; the first unit is printed as a whole number.
 */
static const char *scaled(double v, const char *const *units, int nunits, double factor, char *buf,
			  size_t len)
{
	double x = v < 0 ? -v : v;
	int u = 0;

	/* Up a unit while the number would print as 1000 or more. */
	while (u + 1 < nunits && x >= 999.5) {
		x /= factor;
		u++;
	}
	if (v < 0)
		x = -x;
	if (!u || x >= 99.95 || x <= -99.95)
		snprintf(buf, len, "%.0f %s", x, units[u]);
	else if (x >= 9.995 || x <= -9.995)
		snprintf(buf, len, "%.1f %s", x, units[u]);
	else
		snprintf(buf, len, "%.2f %s", x, units[u]);
	return buf;
}

const char *human__ns(double ns, char *buf, size_t len)
{
	static const char *const units[] = { "ns", "µs", "ms", "s" };

	return scaled(ns, units, 4, 1000, buf, len);
}

const char *human__bytes(double bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };

	return scaled(bytes, units, 5, 1024, buf, len);
}

int human__width(const char *s)
{
	int w = 0;

	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

/* Bytes of S's first N characters (whole UTF-8 sequences). */
static size_t prefix_bytes(const char *s, int n)
{
	const char *p = s;

	for (; *p && n > 0; n--) {
		p++;
		while (((unsigned char)*p & 0xc0) == 0x80)
			p++;
	}
	return p - s;
}

const char *human__elide(const char *s, int width, char *buf, size_t len)
{
	int w = human__width(s), head, tail;
	size_t hb, tb, total = strlen(s);

	if (w <= width)
		return s;
	if (width < 1) {
		buf[0] = 0;
		return buf;
	}
	/* "…" takes one column: two thirds of the rest to the head. */
	tail = (width - 1) / 3;
	head = width - 1 - tail;
	hb = prefix_bytes(s, head);
	tb = total - prefix_bytes(s, w - tail);
	if (hb + tb + sizeof("…") > len) {
		snprintf(buf, len, "%s", "");
		return buf;
	}
	memcpy(buf, s, hb);
	memcpy(buf + hb, "…", sizeof("…") - 1);
	memcpy(buf + hb + sizeof("…") - 1, s + total - tb, tb);
	buf[hb + sizeof("…") - 1 + tb] = 0;
	return buf;
}

int human__wrap(FILE *f, const char *text, int width, int col, int indent)
{
	char word[1024], cut[1024];
	const char *p = text, *end;
	int lines = 1, fresh = 1, w, room;

	if (width <= 0 || width <= indent + 8)
		width = 0;
	while (*p) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		end = p + strcspn(p, " ");
		snprintf(word, sizeof(word), "%.*s", (int)(end - p), p);
		p = end;
		w = human__width(word);
		if (width && !fresh && col + 1 + w > width) {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
			lines++;
			fresh = 1;
		}
		if (!fresh) {
			fputc(' ', f);
			col++;
		}
		room = width ? width - col : w;
		if (room < 1)
			room = 1;
		fputs(human__elide(word, room, cut, sizeof(cut)), f);
		col += w < room ? w : room;
		fresh = 0;
	}
	fputc('\n', f);
	return lines;
}

/* S with the insides of its outermost <...> and (...) as "…", into BUF. */
static void cxx_base(const char *s, char *buf, size_t len)
{
	size_t n = 0;
	int depth = 0;

	if (!strncmp(s, "void ", 5))
		s += 5;
	for (; *s && n + 4 < len; s++) {
		if (depth == 0 && !strncmp(s, "(anonymous namespace)::", 23)) {
			s += 22; /* says nothing a reader can use */
			continue;
		}
		int open = *s == '<' || *s == '(', close = *s == '>' || *s == ')';

		if (close && depth == 1) {
			memcpy(buf + n, "…", 3);
			n += 3;
		}
		if (open)
			depth++;
		else if (close && depth > 0)
			depth--;
		if (depth == 0 || (open && depth == 1) || (close && depth == 0))
			buf[n++] = *s;
	}
	buf[n] = 0;
}

const char *human__shorten(const char *s, int width, char *buf, size_t len)
{
	char base[1024];

	if (human__width(s) <= width)
		return s;
	if (!strstr(s, "::") || !strpbrk(s, "<("))
		return human__elide(s, width, buf, len);
	cxx_base(s, base, sizeof(base));
	if (human__width(base) <= width) {
		snprintf(buf, len, "%s", base);
		return buf;
	}
	return human__elide(base, width, buf, len);
}

const char *human__base(const char *s)
{
	const char *b = strrchr(s, '/');

	return b && b[1] ? b + 1 : s;
}

int human__term_width(int fd)
{
	const char *env = getenv("COLUMNS");
	struct winsize ws;
	char *end;
	long v;

	if (env && *env) {
		v = strtol(env, &end, 10);
		if (!*end && v > 0 && v < 100000)
			return (int)v;
	}
	if (isatty(fd) && !ioctl(fd, TIOCGWINSZ, &ws) && ws.ws_col > 0)
		return ws.ws_col;
	return 0;
}
