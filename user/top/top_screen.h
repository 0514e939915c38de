/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A frame as text (top_screen.c): the heading lines, one row per process with its threads under
 * it, sorted, in at most WIDTH columns; the same text on a screen and in batch mode.
 */
#ifndef BPFSIGHT_TOP_SCREEN_H
#define BPFSIGHT_TOP_SCREEN_H

#include <stdio.h>
#include <linux/types.h>
#include "top.h"

/* How the user looks at the frames: what the keys change. */
struct top_view {
	__u32 sort;	    /* the column rows are sorted by (highest first) */
	int threads;	    /* threads under their process */
	int idle;	    /* rows with nothing this interval too (a -p process always shows) */
	int help;	    /* the help screen instead of the rows */
	const char *target; /* "pid 1234", "every process" */
	__u64 interval_ns;
	__u64 live_ns;	   /* how long it has been recording */
	int keys;	   /* an interactive screen: its last line says the keys (or MESSAGE) */
	char message[256]; /* the latest line the recording wrote on stderr, shown a while */
};

/*
 * Write FR (NULL: none yet) to OUT as lines of at most WIDTH characters, each ending with
 * '\n'; at most HEIGHT lines (0: every row). Returns the number of lines.
 */
int top_screen__render(FILE *out, const struct top_frame *fr, const struct top_view *v, int width,
		       int height);
/* The column shown next to COL on the screen, left (DIR < 0) or right, round the end. */
__u32 top_screen__next_col(const struct top_frame *fr, __u32 col, int dir);
/* The column whose --sort key is KEY, or -1. */
int top_screen__sort_col(const struct top_col *cols, __u32 n, const char *key);
/* KEYS of the columns, "cpu, gil, ..." for messages. */
void top_screen__keys(const struct top_col *cols, __u32 n, char *buf, size_t len);

#endif /* BPFSIGHT_TOP_SCREEN_H */
