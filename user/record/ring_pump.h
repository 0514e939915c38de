/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef BPFSIGHT_RING_PUMP_H
#define BPFSIGHT_RING_PUMP_H

#include <stddef.h>
#include <linux/types.h>
#include <sys/types.h>

#define RING_PUMP_BLOCKS 16 /* record-type blocks of 16 types (records.h) */

/*
 * The BPF ring buffer, emptied by a thread of its own into a queue in memory, so that the
 * recording thread's slow steps (a new process's code examined, probes attached, a flight
 * dump) never leave it full: BPF then loses events only once the queue holds its bound too.
 * The recording thread takes the records from the queue, in ring order.
 */
struct ring_pump;

/*
 * Called for each record, on the thread that reads; non-zero ends that read after this
 * record (the record is taken either way).
 */
typedef int (*ring_pump_fn)(void *arg, void *data, size_t size);

/*
 * A pump of the ring buffer map RING_FD that queues up to MAX_QUEUED bytes in memory and
 * hands records to FN(ARG). Its thread starts at once. NULL with errno set on failure.
 */
struct ring_pump *ring_pump__new(int ring_fd, size_t max_queued, ring_pump_fn fn, void *arg);
/*
 * Hand up to MAX records to FN in ring order, waiting up to TIMEOUT_MS for the first. The
 * ring itself is read when the queue is empty, so a read that returns 0 saw both empty.
 * Returns the records handed; 0 when called from inside FN (the outer read goes on).
 */
long ring_pump__read(struct ring_pump *p, int timeout_ms, long max);
/* The pump thread's id (0 until it runs): the recorder gives it the stop's priority. */
pid_t ring_pump__tid(struct ring_pump *p);
/* Bytes queued now, and the most queued at once (for the status and bench/RESULTS.md). */
size_t ring_pump__queued(struct ring_pump *p, size_t *peak);
/* The most memory its blocks took at once (the queue's, and the few kept for reuse); 0 for NULL. */
size_t ring_pump__held_peak(struct ring_pump *p);
/*
 * Add to BY_BLOCK[type >> 4] the records taken from the ring that the queue could not keep
 * (no memory for a block), and forget them.
 */
void ring_pump__take_dropped(struct ring_pump *p, __u64 by_block[RING_PUMP_BLOCKS]);
/* Stop the thread and free the queue (records still in it are dropped); NULL is fine. */
void ring_pump__free(struct ring_pump *p);

#endif
