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
 *
 * Its parts: the shared maps, the ring pump (ring_pump.h), the families' attach, poll, stop
 * and detach, the drain, the losses, the end-of-run lines.
 *
 * Stopping at any event rate. A read of the ring takes at most RECORD_CTX_BATCH records
 * (record_ctx__read; libbpf's own reads run until the ring is empty, which it never is while
 * traced threads outrun the reader), so the recorder sees its signals and clock between
 * batches. A stop (-d, SIGINT, SIGTERM, SIGHUP, the targets' exit) then goes:
 *   1. the families' stop hooks (the cupti-shim's flush);
 *   2. the shared control map's BS_CTL_STOPPED bit, the recording's end (the file's end
 *      clocks; -d counts from the moment every probe went live, the file's start), after
 *      which bs_reserve (and a stack's output) writes nothing new, so the ring only
 *      empties; past the gate an event is after
 *      the recording's end: BPF counts no loss for it (bs_count_losses), but a final record's
 *      own ringbuf_full;
 *   3. the ring read for at most STOP_READ_NS, what is left counted as stop_unread (a process
 *      its exec record says BPF stopped is still let go);
 *   4. the probes detached (sched's final task iterator writes past the gate,
 *      bs_reserve_final): the kernel's unregistering of uprobes (uprobe_multi too) waits for
 *      grace periods and the probed processes' mmap locks, seconds with dozens of traced
 *      threads per core, so the recorder first hands every link it holds to a detached
 *      process (link_reaper__hold_all, `bpfsight-detach` in ps) that drops them once the
 *      recorder has closed its own copies: closing them is instant, and the gated probes
 *      write nothing meanwhile;
 *   5. the file closed, then the verdict line (record_opts.verdict_line).
 * Traced threads that fill every core would leave the recorder a sliver of CPU time: the stop
 * signals are taken by a thread of their own that sleeps at nice -20 and gives the recording
 * thread (and the pump) that priority for the stop, which the recorder takes too when -d ends
 * it. tests/e2e/test_stop.py holds a stop to 2 s with 64 threads calling CUDA on 2 cores
 * (bench/RESULTS.md, "Stopping under a storm of events"); what a stopped -p recording leaves
 * in its job, nothing (no breakpoint in its code, the cupti-shim's semaphores at 0, none of
 * the recorder's programs and links), is tests/e2e/test_detach.py's, with every family.
 */
#ifndef BPFSIGHT_RECORDER_H
#define BPFSIGHT_RECORDER_H

#include "record_ctx.h"

enum record_outcome {
	RECORD_WHOLE,		 /* everything recorded went where it was to go */
	RECORD_START_FAILED,	 /* nothing was recorded: start-up failed (said) */
	RECORD_WRITE_FAILED,	 /* a write or the close failed: records dropped (said, counted) */
	RECORD_DUMP_FAILED,	 /* --flight-recorder: a dump could not be written (said) */
	RECORD_NOTHING_CAPTURED, /* --capture-range: no range ever opened (said) */
	RECORD_NOTHING_MEASURED	 /* the only family asked measured nothing (said) */
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
/* 1 once a stop signal came (SIGINT, SIGTERM, SIGHUP, recorder__stop), also between runs. */
int recorder__stop_signalled(void);

#endif /* BPFSIGHT_RECORDER_H */
