/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A family's record side: what it does when recording (its options, attach, poll, detach, its
 * hooks on the records as they come from the ring, its stop), as the driver (user/session/)
 * and the services take it. Its struct family (core/family.h) points to it: .record. The
 * reading side is core's (struct family_decode) and the commands' (family_stats.h,
 * export_model.h, metrics_family.h, top_family.h).
 */
#ifndef BPFSIGHT_FAMILY_RECORD_H
#define BPFSIGHT_FAMILY_RECORD_H

#include <stddef.h>
#include <linux/types.h>
#include "records.h"

struct family_attach; /* family_attach.h */
struct family_shim;   /* shim_family.h */
struct record_ctx;    /* record_ctx.h */
struct record_opts;   /* record_ctx.h */

#define FAMILY_OPT_RECORD 0x1 /* `record` takes the option */
#define FAMILY_OPT_MONITOR                                                                         \
	0x2 /* `monitor` takes the option, and `top` (it records as monitor does) */
#define FAMILY_OPT_TOP	   0x4	 /* `top` takes the option (it takes monitor's anyway) */
#define FAMILY_OPT_IMPLIES 0x100 /* giving it records the family too, -t or not */

/*
 * An option of a family's own. record and monitor list it in their --help and parse it
 * (user/session/record_options.c) into the family's options, which the family reads with
 * record_opts__family().
 */
struct family_option {
	const char *name; /* --NAME */
	const char *arg;  /* its value's name in --help ("DUR"); NULL: it takes none */
	const char *help; /* --help's text (wrapped there) */
	__u32 cmds;	  /* FAMILY_OPT_* */
	/* Take ARG (NULL without one) into OPTS: 0, or 1 after saying what is wrong. */
	int (*parse)(void *opts, const char *arg, const char *cmd);
};

/*
 * --capture-range=KIND[:ARG]: the family records only inside the ranges it opens and closes
 * (record_ctx's gate), as nsys does (cuda's cudaProfilerApi, nvtx's nvtx:NAME): it calls
 * capture_gate__open/close when record_opts__captures(o, &family_NAME). The gate keeps the
 * recording's own records, state_records and ungated types whatever the ranges say.
 */
struct family_capture {
	const char *kind;
	const char *arg; /* ":NAME" when the kind takes a value (its name, for --help), else NULL */
	/* The value checked when parsed: 0, or 1 after saying what is wrong. May be NULL. */
	int (*check)(const char *arg, const char *cmd);
	/*
	 * The ranges ARG asks for, each to be written to a file of its own (-o's stem + -k.bst:
	 * capture_files.h); 0: every range in one file, -o. ARG was checked. May be NULL.
	 */
	__u32 (*files)(const char *arg);
};

/*
 * A thread of a traced process that a family's record side knows now, for the hang trigger
 * (--trigger hang): REC is the record a call it is in would write at its return, marked in
 * flight (a bs_ucall with BS_UCALL_OPEN: ts its entry, dur its time so far), one per call it is
 * nested in; NULL for a thread that made calls and is in none now.
 */
typedef void (*family_in_flight_fn)(void *arg, __u32 pid, __u32 tid, const struct bs_hdr *rec);
/* Writes one record into a flight-recorder dump, before its window: 0 or a negative errno. */
typedef int (*family_dump_write_fn)(void *arg, const struct bs_hdr *rec);

struct family_record {
	/*
	 * Kernel features it cannot record without, (1 << KF_*) of kernel_features.h: where
	 * one is missing, a default recording goes on without the family (said once) and a
	 * -t that names it is refused with the reason.
	 */
	__u32 needs;
	/*
	 * --stacks FAMILY[:THRESHOLD]: its events of at least THRESHOLD get the thread's stack,
	 * this default when none is given; 0 = the family takes no --stacks (but with
	 * FAMILY_STACKS_EVERY: every event by default).
	 */
	__u64 stack_default_ns;
	/*
	 * Its stack THRESHOLD is a size in bytes, not a duration: --stacks=mem:1M takes
	 * allocations of 1 MiB and more (stack_default_ns then holds bytes).
	 */
	__u8 stack_bytes;
	/* Options of its own (at most 16), ending with a zeroed entry. May be NULL. */
	const struct family_option *options;
	/* Bytes of its parsed options, made for every recording; OPTS_INIT sets CMD's defaults. */
	__u32 opts_size;
	void (*opts_init)(void *opts, const char *cmd);
	/* Its options for the trace header's options line, " key=value" each. Optional. */
	void (*opts_describe)(const void *opts, char *buf, size_t len);
	/*
	 * nsys's -t names that record it, comma-separated ("cuda,cuda-hw"): `bpfsight profile`
	 * reads -t as nsys does through them, and record's -t takes them (nsys_args.h). NULL:
	 * nsys has no name for it.
	 */
	const char *nsys_trace;
	/* --capture-range's kind it offers, or NULL. */
	const struct family_capture *capture;
	/*
	 * Record types (0-terminated) kept whatever --capture-range says besides the recording's
	 * own (< 0x10) and its state_records: not events (cumulative totals, what a range's
	 * reader needs). May be NULL.
	 */
	const __u16 *ungated;
	/*
	 * Record types (0-terminated) that only BPF and its consume hook exchange, never on disk
	 * (a raw sample, a batch of the shim's records): dropped if one comes after it detached.
	 */
	const __u16 *ring_only;
	/*
	 * attach() opens its skeleton, sets RECORD_CTX_SET_COMMON_RODATA and its own rodata,
	 * calls record_ctx__prepare (the shared maps; one of each _btf/_raw program pair), loads
	 * and attaches; its state goes into *state. A is the recording and the services the
	 * driver made for it (family_attach.h): what the family keeps of them goes into its state.
	 * NULL: a family that is only read (a test's).
	 */
	int (*attach)(const struct family_attach *a, void **state);
	int (*poll)(struct record_ctx *ctx, void *state);    /* periodic, may be NULL */
	void (*detach)(struct record_ctx *ctx, void *state); /* final drain, then free */
	/*
	 * A recording of running processes (-p, with its edges) begins, every probe live: carry
	 * what the targets' threads are in now into the recording, so that an interval open at
	 * the start (a sleep, a system call) is written when it ends, begun before the start.
	 * May be NULL.
	 */
	void (*at_start)(struct record_ctx *ctx, void *state);
	/*
	 * With --trigger hang only (attach prepares what it needs then): hand FN every thread of
	 * its targets it knows, with the calls each is in now (entered, not returned). Called
	 * every 100 ms, never per event. May be NULL: its calls say nothing of a hang.
	 */
	void (*in_flight)(struct record_ctx *ctx, void *state, family_in_flight_fn fn, void *arg);
	/*
	 * With --flight-recorder, as a dump is cut at CUT (the recording goes on): hand FN each
	 * wait or call of the family still open then, as the record its end would write, flagged
	 * open (ts its start, dur up to CUT), so that the dump holds the whole incident (a GIL
	 * wait, a system call). Reads, changes nothing. May be NULL (in_flight's calls are
	 * written too).
	 */
	void (*open_at)(struct record_ctx *ctx, void *state, __u64 cut, family_in_flight_fn fn,
			void *arg);
	/*
	 * With --flight-recorder: a dump's window begins at FROM_TS; write with FN what the
	 * window's records need of the family's state before it that no state record holds
	 * (nccl: each communicator and how many collectives it had made, so the window's are
	 * numbered as on every rank). 0 or a negative errno. May be NULL.
	 */
	int (*flight_prologue)(struct record_ctx *ctx, void *state, __u64 from_ts,
			       family_dump_write_fn fn, void *arg);
	/*
	 * Every ring-buffer record (of any family) of the types in observes, before it is
	 * written; may be NULL. May write records of its own first (e.g. a SYMBOL the record
	 * refers to).
	 */
	void (*observe)(struct record_ctx *ctx, void *state, const struct bs_hdr *rec);
	/*
	 * The record types observe acts on, 0-terminated: the driver calls it for those alone
	 * (a record of another type never enters the family). NULL: every record.
	 */
	const __u16 *observes;
	/*
	 * Like observe, before every observe hook: returns 1 when it consumed the record (a
	 * ring-only record it unpacked and wrote as records of its own), which then goes no
	 * further and is not written; else 0. May be NULL.
	 */
	int (*consume)(struct record_ctx *ctx, void *state, const struct bs_hdr *rec);
	/* The record types consume takes, as observes. NULL: every record. */
	const __u16 *consumes;
	/*
	 * The recording is ending: runs before any probe is detached, with the ring buffer still
	 * drained by record_ctx__poll (e.g. to ask a producer to flush and wait for it). May be
	 * NULL.
	 */
	void (*stop)(struct record_ctx *ctx, void *state);
	/*
	 * Launch mode, before CMD is forked: set what CMD's environment needs (setenv). A
	 * negative errno aborts the recording. May be NULL.
	 */
	int (*prelaunch)(const struct record_opts *o);
	/*
	 * A family whose records the cupti-shim writes (its struct family has FAMILY_SHIM): what
	 * it tells the channel (its sites, records, hooks: user/shim_channel/shim_family.h);
	 * --inject loads the shim for it. NULL for every other family.
	 */
	const struct family_shim *shim;
};

/* 1 when a family says TYPE is ring-only (struct family_record.ring_only). */
int family__ring_only(__u16 type);

#endif /* BPFSIGHT_FAMILY_RECORD_H */
