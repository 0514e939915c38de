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
	/* The function view (f, --functions: top_fview.c) and how it is looked at. */
	int functions;
	int by_func;		/* a row per function, not per line (l) */
	int cumulative;		/* %Own and %Total since the start, not the interval (c) */
	__u32 fsort;		/* TOP_FSORT_*: the column its rows are sorted by */
	const char *funcs_hint; /* what to do when no samples come: "add cpu to -t" */
	int ledger; /* the ledger view (w, --ledger): the interval's time of the critical unit */
};

/* The function view's columns, its sort keys in this order (--sort, 1 2 3 4). */
enum { TOP_FSORT_OWN, TOP_FSORT_TOTAL, TOP_FSORT_OWN_TIME, TOP_FSORT_TOTAL_TIME, TOP_FSORTS };

/*
 * Write FR (NULL: none yet) to OUT as lines of at most WIDTH characters, each ending with
 * '\n'; at most HEIGHT lines (0: every row). Returns the number of lines.
 */
int top_screen__render(FILE *out, const struct top_frame *fr, const struct top_view *v, int width,
		       int height);
/* The function view of FR (top_fview.c), as top_screen__render writes a frame. */
int top_fview__render(FILE *out, const struct top_frame *fr, const struct top_view *v, int width,
		      int height);
/* The function view's column whose --sort key is KEY ("own"...), or -1. */
int top_fview__sort_key(const char *key);
/* Its keys, "own, total, ..." for messages. */
const char *top_fview__keys(void);
/* The column shown next to COL on the screen, left (DIR < 0) or right, round the end. */
__u32 top_screen__next_col(const struct top_frame *fr, __u32 col, int dir);
/* The column whose --sort key is KEY, or -1. */
int top_screen__sort_col(const struct top_col *cols, __u32 n, const char *key);
/* KEYS of the columns, "cpu, gil, ..." for messages. */
void top_screen__keys(const struct top_col *cols, __u32 n, char *buf, size_t len);

#endif /* BPFSIGHT_TOP_SCREEN_H */
