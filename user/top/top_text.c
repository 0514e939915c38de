// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Lines and numbers as top writes them (top_text.h). */
#include <stdarg.h>
#include <string.h>
#include "top.h"
#include "top_text.h"

void top_text__put(char *line, int width, const char *fmt, ...)
{
	size_t used = strlen(line);
	va_list ap;

	if ((int)used >= width)
		return;
	va_start(ap, fmt);
	vsnprintf(line + used, width - used + 1, fmt, ap);
	va_end(ap);
}

void top_text__emit(FILE *out, const char *line, int *n)
{
	int len = strlen(line);

	while (len && line[len - 1] == ' ')
		len--;
	fprintf(out, "%.*s\n", len, line);
	(*n)++;
}

void top_text__ns(char *buf, size_t len, double ns)
{
	if (ns < 1e3)
		snprintf(buf, len, "%.0fns", ns);
	else if (ns < 1e6)
		snprintf(buf, len, "%.0fus", ns / 1e3);
	else if (ns < 1e7)
		snprintf(buf, len, "%.1fms", ns / 1e6);
	else if (ns < 1e9)
		snprintf(buf, len, "%.0fms", ns / 1e6);
	else
		snprintf(buf, len, "%.2fs", ns / 1e9);
}

void top_text__rate(char *buf, size_t len, double x)
{
	if (x < 10)
		snprintf(buf, len, "%.1f", x);
	else if (x < 1e4)
		snprintf(buf, len, "%.0f", x);
	else if (x < 1e6)
		snprintf(buf, len, "%.*fk", x < 1e5 ? 1 : 0, x / 1e3);
	else
		snprintf(buf, len, "%.1fM", x / 1e6);
}

void top_text__lost(char *line, int width, const struct top_frame *fr)
{
	/* Losses in capitals: no colour says it here. */
	if (fr->lost_interval)
		top_text__put(line, width, "LOST %llu (+%llu: %s)", (unsigned long long)fr->lost,
			      (unsigned long long)fr->lost_interval, fr->lost_why);
	else
		top_text__put(line, width, "lost %llu", (unsigned long long)fr->lost);
}

void top_text__clock(char *line, int width, unsigned long long interval_ns,
		     unsigned long long live_ns)
{
	unsigned long long s = live_ns / 1000000000ull;

	top_text__put(line, width, " - every %.1fs - %llu:%02llu:%02llu", interval_ns / 1e9,
		      s / 3600, s / 60 % 60, s % 60);
}

void top_text__lines(FILE *out, int width, int height, const char *const *lines, size_t n,
		     int *written)
{
	char line[TOP_LINE_W_MAX + 1];

	for (size_t k = 0; k < n && (!height || *written < height); k++) {
		line[0] = 0;
		top_text__put(line, width, "%s", lines[k]);
		top_text__emit(out, line, written);
	}
}

void top_text__col_help(FILE *out, int width, int height, const char *head, const char *key,
			const char *desc, int *written)
{
	char line[TOP_LINE_W_MAX + 1] = "";

	if (height && *written >= height)
		return;
	top_text__put(line, width, "%-15s %-9s %s", head, key, desc);
	top_text__emit(out, line, written);
}

void top_text__last_line(FILE *out, int width, int height, const char *text, int *written)
{
	char line[TOP_LINE_W_MAX + 1] = "";

	while (height && *written < height - 1)
		top_text__emit(out, "", written);
	top_text__put(line, width, "%s", text);
	top_text__emit(out, line, written);
}
