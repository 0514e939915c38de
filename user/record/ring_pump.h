/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef BPFSIGHT_RING_PUMP_H
#define BPFSIGHT_RING_PUMP_H

#include <stddef.h>
#include <linux/types.h>
#include <sys/types.h>

#define RING_PUMP_BLOCKS (BS_REC_TYPE_MAX >> 4) /* record-type blocks of 16 types (records.h) */

/*
 * The BPF ring buffer, emptied by a thread of its own (the pump) into a queue of 1 MiB blocks
 * in memory, from the moment the shared maps exist (before any family attaches) to the end.
 * The recording thread takes the records from the queue, in ring order, through the same
 * record_ctx__read. It has slow steps the ring must not wait for: the start-up (each family
 * attaching, the uprobe manager examining every file of every process: seconds on a node of
 * PyTorch jobs, where cuBLASLt, cuDNN and NCCL are hundreds of MB each), a new process's or a
 * dlopen's files examined and probed mid-recording, a flight dump. Before the pump, probes
 * attached first filled the ring while later ones were still being attached, and a new CUDA
 * process under -a stalled the reader for as long as its libraries took
 * (tests/e2e/test_ring_rate.py).
 *
 * Memory is bounded and loss counted where it happens: the queue holds at most MAX_QUEUED
 * (four rings, 64 MiB by default); at that bound the pump stops reading, the ring fills and
 * BPF counts ringbuf_full as before. A record the pump took but could not keep (no memory for
 * a block) is counted ringbuf_full too. When the queue took more memory than the ring itself,
 * the end-of-run line says so ("the recording fell behind: up to N MiB of records waited in
 * memory"); the flight recorder's end line always says it (docs/PRODUCTION.md bounds a flight
 * recording's memory with it).
 *
 * The pump asks for nice -10 (root): it only copies, but at nice 0 on a machine busy with
 * other work it would wait its turn behind every runnable thread while the ring fills.
 *
 * The two threads never wait on each other for long: whoever reads the ring (the pump, or the
 * recording thread finding the queue empty, so that a read that returns 0 means both are
 * empty) holds the ring's lock for a pass of at most 4,096 records, and publishes what it
 * wrote every 256 records under the queue's lock, which the recording thread holds only to
 * take a block. At a stop both threads get the stop's priority: with dozens of traced threads
 * per core, a starved thread holding a lock the recording thread needs would stall the stop
 * (it did, in test_stop, before the locks were split: bench/RESULTS.md).
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
