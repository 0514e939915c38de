/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A family whose records the cupti-shim writes (gpu, nvtx, torch): what it tells the channel,
 * through its struct family's `shim` (family.h). The channel (shim_link.c, shim_unpack.c)
 * knows no family by name: it attaches the control sites the recording's families want,
 * checks every record of a batch against the sizes they declare, translates the string ids
 * and thread ids they mark, and hands each record to its family's hook. A shim family is
 * therefore its folder, its records header (bpf/NAME_records.h), its module in the shim
 * (cupti-shim/shim_NAME*.c, one line in cupti-shim/shim_modules.c) and one registry line.
 *
 * Its record side (struct family's attach, poll, detach, consume, stop, prelaunch) is the
 * channel's: shim_link__attach and the other shim_link__* hooks (shim_link.h).
 *
 * What it says:
 *   - sites: the USDT sites of provider "bpfsight" it wants attached, each maybe only with an
 *     option (torch_shapes with --torch-shapes): the kernel raises their semaphores in the
 *     processes the channel covers, which is how the shim's module learns it is wanted. A
 *     stack site (stack_type set: torch_op_stack) is attached when --stacks names the family:
 *     the shim fires it as SITE(ts, dur) for each event of that type it records, and BPF sends
 *     the thread's stack as the event's STACK_RAW at that ts when dur is at least the
 *     family's --stacks threshold (bpf/shim.bpf.c);
 *   - recs: the record types it sends, their minimum sizes (a batch with a shorter one is
 *     dropped whole, never trusted in part), the offsets of their u32 string ids (translated
 *     from the shim's per-process ids to the file's; demangled: C++ names, as kernels'), and
 *     of their u32 thread ids besides hdr.tid (rewritten to the host's for a process in a pid
 *     namespace of its own);
 *   - states, events: the names of its bits of a STATUS record's state and of its own STATUS
 *     events, for dump and shim_sum (bpf/shim_records.h allocates the bits);
 *   - counts: what shim_sum counts of its records per process;
 *   - hint: what a -p target started without the shim lacks, and how to give it one;
 *   - env: how launch mode gives CMD the shim for it (NULL: LD_PRELOAD);
 *   - channel: set by the one family the channel answers to (gpu), named for the channel's
 *     own doings: a probe of the channel that did not attach is that family's loss, and the
 *     advice to load the shim into a running process records that family (-t gpu --inject);
 *   - unpacking hooks, over a state of their own for one recording (new/free): `record` sees
 *     each of its records, ids translated, and either lets the channel write it (0) or takes
 *     it (1: writes it later through shim_unpack__emit, or drops it); `status` sees every
 *     STATUS record; `ring` the ring's records of the types `ring_types` lists (cuda calls,
 *     before they are written); `tick` runs about
 *     every second, `proc_exit` when a process is gone, `finish` when no batch can come any
 *     more (before the channel's own end lines).
 */
#ifndef BPFSIGHT_SHIM_FAMILY_H
#define BPFSIGHT_SHIM_FAMILY_H

#include <linux/types.h>
#include "records.h"
#include "shim_records.h"

#define SHIM_REC_STRINGS 4 /* string ids a record may carry */
#define SHIM_REC_TIDS	 2 /* thread ids besides hdr.tid */

struct family;
struct record_opts;
struct shim_unpack;

struct shim_site {
	const char *name; /* bpfsight:NAME */
	/* Whether this recording wants it (NULL: always, while the family is recorded). */
	int (*wanted)(const struct record_opts *o);
	/* A stack site: the BS_REC_* of the events it gives stacks to (wanted: --stacks). */
	__u16 stack_type;
	/*
	 * What it turns on needs the CUDA driver (CUPTI): a shim with nothing on sleeps, and is
	 * woken when its process maps libcuda while this site is wanted (shim_link.c).
	 */
	__u8 needs_libcuda;
};

struct shim_rec {
	__u16 type, min_size;
	__u16 strings[SHIM_REC_STRINGS]; /* byte offsets of u32 string ids; 0 = none */
	__u32 demangle;			 /* bit i: strings[i] is demangled */
	__u16 tids[SHIM_REC_TIDS];	 /* byte offsets of u32 thread ids; 0 = none */
};

struct shim_name {
	__u32 value; /* a state bit, or an event */
	const char *name;
};

struct shim_count {
	const char *key, *heading; /* shim_sum's JSON key and column heading */
};

struct shim_hint {
	const char *var;  /* the variable that loads the shim in a job ("CUDA_INJECTION64_PATH") */
	const char *what; /* what goes missing: "GPU activity (-t gpu)" */
	const char *also; /* more advice, or "" */
};

struct family_shim {
	const struct shim_site *sites;		 /* ending with a zeroed entry */
	const struct shim_rec *recs;		 /* ending with a zeroed entry */
	const struct shim_name *states, *events; /* ending with a zeroed entry; may be NULL */
	const struct shim_count *counts;	 /* ending with a zeroed entry; may be NULL */
	/* Which of COUNTS a record of its counts to (sized as recs say), -1 for none. */
	int (*count_of)(const struct bs_hdr *rec);
	struct shim_hint hint;
	const char *env; /* launch mode: the variable CMD gets the shim in; NULL: LD_PRELOAD */
	/* Said when CMD's ENV names another library, which is kept (" (to keep both, ...)"). */
	const char *env_kept;
	/* Said once when --inject loads the shim for it (what an injected shim cannot do). */
	const char *inject_note;
	__u8 channel;		 /* the family the channel answers to (above) */
	const __u16 *ring_types; /* the ring's record types its `ring` hook sees; 0-terminated */
	void *(*new)(struct shim_unpack *u); /* NULL on failure */
	void (*free)(void *st);
	/* REC is in the channel's buffer: changed at will, valid until the hook returns. */
	int (*record)(void *st, struct bs_hdr *rec, const char *const texts[SHIM_REC_STRINGS]);
	void (*status)(void *st, const struct bs_shim_status *s, const char *detail);
	void (*ring)(void *st, const struct bs_hdr *rec);
	void (*tick)(void *st, __u64 now);
	void (*proc_exit)(void *st, __u32 pid);
	void (*finish)(void *st);
};

/* The registry's index of the shim family that sends TYPE, with its record (*REC), or -1. */
int shim_family__of(__u16 type, const struct shim_rec **rec);
/* The stack site of slot K (below) and its family's index (*FAMILY), or NULL. */
const struct shim_site *shim_family__stack_slot(int k, int *family);
/*
 * The slot K of the stack site NAME (bpf/shim_cookie.h's SHIM_PROBE_STACK + K: the stack
 * sites of the registry, in its order) and its family's index (*FAMILY); -1 when NAME is no
 * stack site.
 */
int shim_family__stack_site(const char *name, int *family);
/*
 * The family the channel answers to: the one whose shim says channel, else the registry's
 * first shim family; NULL when no family has a shim.
 */
const struct family *shim_family__channel(void);
/* The least size of each record type a shim may send (the channel's too), 0 for the others. */
void shim_family__min_sizes(__u16 min_size[BS_REC_TYPE_MAX]);
/*
 * The names of a STATUS record's state bits (NAMES[b] for bit 1 << b, NULL where none) and of
 * its events ("attach", a family's "torch"): the channel's and every shim family's.
 */
void shim_family__state_names(const char *names[32]);
const char *shim_family__event_name(__u32 event);

#endif /* BPFSIGHT_SHIM_FAMILY_H */
