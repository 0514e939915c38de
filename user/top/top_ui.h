/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `bpfsight top`'s screen thread (top_ui.c): a frame every interval, drawn on the terminal
 * (keys, resizes) or written as batch text, beside the recording (recorder__run on the
 * caller's thread). Quitting (q, -n) stops the recording as Ctrl-C does.
 */
#ifndef BPFSIGHT_TOP_UI_H
#define BPFSIGHT_TOP_UI_H

#include <linux/types.h>

struct top;

struct top_ui_opts {
	struct top *t;
	int batch; /* plain text frames on stdout */
	__u64 interval_ns;
	__u32 iterations;	/* frames, then stop; 0 = no limit */
	__u32 sort;		/* the column rows are sorted by */
	int threads;		/* threads shown under their process (t toggles it) */
	const char *target;	/* "pid 1234", "every process" */
	int functions;		/* start in the function view (f switches) */
	int ledger;		/* start in the ledger view (w switches) */
	__u32 fsort;		/* its sort column, TOP_FSORT_* */
	const char *funcs_hint; /* what to do when no samples come */
};

struct top_ui;

/* Take the terminal (unless batch) and start the thread. NULL after saying why on stderr. */
struct top_ui *top_ui__start(const struct top_ui_opts *o);
/*
 * The recording has ended: stop the thread, give the terminal back, then write on stderr what
 * the recording wrote there meanwhile (its warnings, its end line), as it would have.
 */
void top_ui__stop(struct top_ui *ui);

/* Batch lines' width: $COLUMNS, else 80. */
int top_ui__batch_width(void);
/*
 * bpfsight top FILE (top_replay.c): the frames of a recording, cut at its records' times,
 * as batch text on stdout. An exit status of the reading commands (EXIT_READ_*, trace_walk.h).
 */
int top_replay__run(struct top *t, const char *path, const struct top_ui_opts *o, int width);

#endif /* BPFSIGHT_TOP_UI_H */
