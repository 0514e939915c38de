/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The recording session: runs a whole `bpfsight record` (record_ctx.h is what families see),
 * and `monitor` and `top`, which record as it does with no file.
 *
 * How a recording ends decides the exit status, one policy for every mode:
 *   - a recording that failed (it could not start, a write or the file's close failed, a
 *     flight dump could not be written, --capture-range captured nothing) exits 1, whatever
 *     a launched CMD returned: CMD still runs to its end, untouched, and the message says
 *     what failed and what CMD returned;
 *   - a whole recording exits 0, or in launch mode with CMD's status (128 + N when a signal
 *     N ended it), as nsys does.
 */
#ifndef BPFSIGHT_RECORDER_H
#define BPFSIGHT_RECORDER_H

#include "record_ctx.h"

enum record_outcome {
	RECORD_WHOLE,		/* everything recorded went where it was to go */
	RECORD_START_FAILED,	/* nothing was recorded: start-up failed (said) */
	RECORD_WRITE_FAILED,	/* a write or the close failed: records dropped (said, counted) */
	RECORD_DUMP_FAILED,	/* --flight-recorder: a dump could not be written (said) */
	RECORD_NOTHING_CAPTURED /* --capture-range: no range ever opened (said) */
};

/* The exit status of OUTCOME; CMD_STATUS is a launched CMD's (-1: none was launched). */
int recorder__exit_status(enum record_outcome outcome, int cmd_status);

/* Run a whole recording; returns its exit status (recorder__exit_status). */
int recorder__run(const struct record_opts *opts);

/*
 * Stop the recording as Ctrl-C does, from any thread, saying WHY in the end line in place of
 * the signal ("5 frames shown"; kept by pointer: a string that outlives the recording).
 */
void recorder__stop(const char *why);

#endif /* BPFSIGHT_RECORDER_H */
