/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A probe family is one unit: who it is (its name, its records, its losses) and its sides,
 * each a small struct of the layer that uses it: how it records (family_record.h), how its
 * records decode (struct family_decode, below), what stats and the verdict take of it
 * (family_stats.h), what the exports, monitor and top show of it (export_model.h,
 * metrics_family.h, top_family.h). Core names the sides of the layers above it by pointer
 * only. Adding a family = its own files plus one line in families.c (docs/ARCHITECTURE.md,
 * "Adding a family", is the checklist; each member's comment is its contract, and
 * tests/unit/test_family_toy.c is a whole family using every hook).
 */
#ifndef BPFSIGHT_FAMILY_H
#define BPFSIGHT_FAMILY_H

#include <stdio.h>
#include <linux/types.h>
#include "records.h"
#include "event.h"
#include "trace_model.h"
#include "loss.h"

#include "trace_meta.h"
#include "ucall_api.h"

/*
 * A family's sides, each defined by the layer that reads it (the header beside each) and
 * named here by pointer only: what it does when recording, what stats, report and the
 * verdict take of it, what the exports, monitor and top show of it, what a ClickHouse server
 * computes of it (stats --from). tools/check_layers.py
 * holds core to these: a core file names no other type it does not define, and no core .c
 * file names these (docs/ARCHITECTURE.md, "Layers").
 */
struct family_record;  /* family_record.h */
struct family_stats;   /* family_stats.h */
struct family_export;  /* export_model.h */
struct metrics_family; /* metrics_family.h */
struct top_family;     /* top_family.h */
struct family_sql;     /* ch_reports.h */
struct rec_rebase;     /* below */
struct json;	       /* json.h */

/*
 * How the exports draw the events of one kind (docs/EXPORT.md). Without one, or where a field
 * is zero: Chrome's category is the kind, "X" when the event has a duration, else an instant;
 * Perfetto's intervals go on a track named after the kind under their thread.
 */
struct export_style {
	const char *cat;   /* Chrome: Kineto's category, where Kineto has one */
	char ph;	   /* Chrome: 'X' complete or 'i' instant, whatever the duration */
	const char *track; /* Perfetto: the name of the kind's track under a thread */
	const char *desc;  /* Perfetto: that track's description */
	/* Perfetto: slices nest with the thread's other calls, on the thread's own track. */
	__u8 on_thread;
	/*
	 * Its events are timer samples of their thread's stack (ev->stack): Perfetto writes them
	 * as PerfSample packets (the UI's CPU profile and flame graphs), Chrome as samples of
	 * "stackFrames", SQLite nothing more than a family's own table.
	 */
	__u8 sample;
};

struct rec_decoder {
	__u16 type;	/* BS_REC_* */
	__u16 min_size; /* records shorter than this are reported corrupt, never decoded */
	const char *kind;
	/* Fill EV (already event__init'ed). Return 1 to emit the event, 0 for metadata. */
	int (*decode)(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev);
	const struct export_style *style; /* NULL: the defaults above */
	/*
	 * Byte offset of a stack id (struct bs_stack) in the record, 0 = it names none: the
	 * flight recorder keeps the stacks its window's records name (a cpu sample's).
	 */
	__u16 stack_off;
	/*
	 * What `bpfsight merge` rewrites when it puts many files in one (struct rec_rebase):
	 * byte offsets (0 = none) of the record's u64 CLOCK_MONOTONIC times besides hdr.ts, its
	 * u32 pids and tids besides hdr.pid and hdr.tid, and its u32 string ids (stack_off's
	 * stack id too). A record these cannot describe (a stack's frames, a key that is a tid
	 * only sometimes) has a rebase hook, called after them.
	 */
	__u16 clock_offs[2];
	__u16 task_offs[3];
	__u16 string_offs[3];
	void (*rebase)(struct bs_hdr *rec, const struct rec_rebase *rb);
	/*
	 * 1: the record is an interval, [hdr.ts, hdr.ts + its u64 dur right after the header).
	 * Readers count only its part inside the recording (trace_walk.h): one that began before
	 * the start is clipped to it (its begin kept: trace_model__began), one that ended before
	 * it is not read.
	 */
	__u8 span;
	/*
	 * A metadata record the reports read (an in-kernel aggregate's snapshot) as a row, for
	 * the exports whose reports are computed from their rows (ClickHouse's, where osrt_sum
	 * is SQL): fills EV as decode does, returns 1; NULL: the record makes no row.
	 */
	int (*row)(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev);
};

/*
 * How `bpfsight merge` maps one file's values into the merged file (user/merge/): times onto
 * the merged clock, pids and tids into the file's pid namespace (0 stays 0), string and
 * stack ids past the previous files'.
 */
struct rec_rebase {
	__u64 (*clock)(const struct rec_rebase *rb, __u64 ts);
	__u32 (*task)(const struct rec_rebase *rb, __u32 id);
	__u32 (*string)(const struct rec_rebase *rb, __u32 id);
	__u32 (*stack)(const struct rec_rebase *rb, __u32 id);
	void *arg;
};

/*
 * A sync point: an event that ends at the same instant in every process that takes part in
 * it, on every machine (a collective, on each rank of its communicator). `bpfsight merge` puts
 * files on one clock by them (docs/NCCL.md, "Many ranks").
 */
struct sync_point {
	__u64 group; /* the same in every process taking part: a communicator's unique-id hash */
	__u64 seq;   /* 0, 1, ... in the group: the same point has the same seq everywhere */
	__u64 enter_ts, end_ts;
	__u32 pid;
	__s32 rank, nranks; /* the process's place in the group, -1 = unknown */
	__u32 flags;	    /* SYNC_* */
};

#define SYNC_INFERRED 0x1 /* the group's creation was not seen: group and seq are guesses */
/*
 * No instant the group's processes share: the process's place in the group (rank, size) and
 * its sequence number only, not a point to align by (a gloo collective seen at its entry).
 */
#define SYNC_NO_END 0x2
/*
 * A point of a collective the family gave already (a gloo collective's end, after its entry's
 * SYNC_NO_END point): an instant to align by, not one more collective.
 */
#define SYNC_AGAIN 0x4

typedef void (*sync_emit_fn)(void *arg, const struct sync_point *p);

/*
 * Reading side, ahead of the model: a family that gives records back in another order than
 * the file's. trace_walk (trace_walk.h) passes every record of the file through the
 * families' hooks in registry order; a hook may hold a record and release it later, changed
 * (the gpu family runs the launch join again: it holds GPU records and CUPTI API records
 * until their launching call is decided, then gives them back linked, shim_relink.h).
 */
struct family_reorder {
	/*
	 * Its state for one walk of a file whose header is META; NULL when out of memory (the
	 * records then pass as they are, and the walk says so with WITHOUT).
	 */
	void *(*new)(const struct trace_meta *meta);
	/* 1: REC goes on as it is; 0: the hook took it (a copy) and gives it back from next. */
	int (*feed)(void *st, const struct bs_hdr *rec);
	/* The file ended: whatever the hook still holds becomes ready for next. */
	void (*end)(void *st);
	/* A record the hook releases, or NULL; valid until the next call of feed or next. */
	const struct bs_hdr *(*next)(void *st);
	void (*free)(void *st);
	/* What a reader sees without the hook, for the warning ("GPU links are shown as ..."). */
	const char *without;
	/*
	 * `bpfsight info`: what the hook made of the file (the gpu family: how its GPU records
	 * link to their launching calls), as lines after the losses and as members of the JSON
	 * object. ST is its state once the walk has read the whole file, NULL when there is
	 * none (new failed): each still says what it has, as for a file without such records.
	 * Either may be NULL.
	 */
	void (*info_text)(const void *st, FILE *f);
	void (*info_json)(const void *st, struct json *j);
};

struct family_sync {
	/* Its state for one file, whose header is META (what it recorded). */
	void *(*new)(const struct trace_meta *meta);
	/*
	 * Every record in file order, after the model: EMIT gets each sync point REC completes
	 * (a record may complete several: a group's end). 0 or -ENOMEM.
	 */
	int (*observe)(void *st, const struct bs_hdr *rec, const struct trace_model *m,
		       sync_emit_fn emit, void *arg);
	/* After the last record: the points still held (waiting for what never came). */
	void (*finish)(void *st, sync_emit_fn emit, void *arg);
	void (*free)(void *st);
};

/*
 * The decode function of records that are not events (strings, cumulative snapshots, ...):
 * they feed the model and the reports, never dump's lines; `dump --kind` does not offer them.
 */
int family__decode_meta(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev);
/* 1 when records of KIND become events (dump prints them), 0 for metadata or unknown kinds. */
int family__kind_is_event(const char *kind);

#define FAMILY_ALWAYS	      0x1 /* always recorded, not selectable with -t (process lifecycle) */
#define FAMILY_OPT_IN	      0x2 /* only when -t names it: not in the default set (cpu sampling) */
#define FAMILY_STACKS	      0x4 /* reads stacks: the stack service starts before families attach */
#define FAMILY_STACKS_DEFAULT 0x8 /* its events carry stacks unless --stacks says otherwise */
/* with FAMILY_STACKS_DEFAULT: by default only when attaching to running processes (-p): not
 * under -a (every process of the machine would pay for them), nor in the always-on flight
 * recorder (their sys_exit program taxes every system call: bench/RESULTS.md), nor in launch
 * mode (stacks hold CMD at each library it loads until its unwind table is in) */
#define FAMILY_STACKS_DEFAULT_ATTACH 0x80
#define FAMILY_STACKS_EVERY	     0x10 /* takes --stacks with stack_default_ns 0: every event */
/* writes into its targets' memory (pyfunc's spec into the shim): the seccomp filter allows it */
#define FAMILY_WRITES_TARGETS 0x20
/* finds code in its targets (uprobes, USDT): the driver makes the uprobe manager for it */
#define FAMILY_UPROBES 0x40
/* its records come from the cupti-shim, on the job's CUPTI clock (record->shim says how) */
#define FAMILY_SHIM 0x100
/*
 * its records are the threads' timeline, on a CPU or off it, that the verdict's ledger
 * accounts (sched's): `top -p` records it, for its ledger view
 */
#define FAMILY_TIMELINE 0x200

/*
 * A record type that is a cumulative snapshot (totals since the recording began; a reader
 * keeps the last one per key). A flight-recorder dump makes them count from its window's
 * start: each snapshot in the window less the same key's last one before it.
 */
struct family_cumulative {
	__u16 type;
	__u16 min_size;
	/* What tells keys apart beyond pid and tid (a syscall number, a holder's tid). */
	__u64 (*key)(const struct bs_hdr *rec);
	/* 1 when REC closes its key: a later snapshot of it counts from zero. NULL: never. */
	int (*closes)(const struct bs_hdr *rec);
	/* Make REC count only what came after BASE (same type and key, earlier). */
	void (*since)(struct bs_hdr *rec, const struct bs_hdr *base);
};

/*
 * An event a family offers as a flight-recorder trigger with no duration, `--trigger
 * FAMILY:NAME`: every record of TYPE fires it (an allocation refused for want of memory is
 * the incident itself, however long it took).
 */
struct family_trigger {
	const char *name; /* NAME in --trigger FAMILY:NAME */
	__u16 type;	  /* BS_REC_*: the family's own records */
	const char *desc; /* what fires it, for messages and docs */
};

/*
 * What its records are read with, by every reading command and by the recording's own
 * readers (the flight recorder, the capture gate): core's side of a family, as the trace
 * model and the walk take it.
 */
struct family_decode {
	/* Its decoders, ending with a zeroed entry. */
	const struct rec_decoder *decoders;
	/*
	 * Reading side state kept across one walk of a trace, for decoders that need what came
	 * before (e.g. which rank a communicator is): created by the trace model, fed every
	 * record in file order before it is decoded, found with trace_model__walk(). Optional.
	 */
	void *(*walk_new)(void);
	void (*walk_observe)(void *w, const struct bs_hdr *rec);
	void (*walk_free)(void *w);
	/* Records it holds and gives back later, ahead of the model. May be NULL. */
	const struct family_reorder *reorder;
	/*
	 * Names its records give the reading model (trace_model__name_thread), fed every record
	 * after the model's own names. Optional.
	 */
	void (*name_observe)(struct trace_model *m, const struct bs_hdr *rec);
	/*
	 * Record types (0-terminated) that describe state its later events need to be read
	 * (a process's GIL method, an NVTX thread name): a flight-recorder dump repeats the
	 * latest of each before its window, as it does strings, names and stacks. May be NULL.
	 */
	const __u16 *state_records;
	/* Its cumulative snapshot types, ending with a zeroed entry. May be NULL. */
	const struct family_cumulative *cumulative;
	/* Triggers it offers with no duration, ending with a zeroed entry. May be NULL. */
	const struct family_trigger *triggers;
	/*
	 * Record types (0-terminated) that say their process moved on: a step or a range that
	 * ended (torch's steps, NVTX ranges). --trigger hang fires when a process that had some
	 * has none for its DUR. May be NULL.
	 */
	const __u16 *progress;
	/* Its sync points, which `bpfsight merge` aligns files on. May be NULL. */
	const struct family_sync *sync;
};

/*
 * A family: who it is (its name, its records, its losses) and its sides, each a small struct
 * of the layer that uses it. Every family has a record side and a decode side; the others
 * may be NULL (the family adds nothing there).
 */
struct family {
	const char *name;
	const char *desc;
	__u32 flags; /* FAMILY_* */
	/*
	 * A uprobe family's API table (user/ucall/): the build compiles and checks every spec of
	 * it before linking (tools/check_specs.c). May be NULL.
	 */
	const struct ucall_table *api;
	/*
	 * Loss causes of its own (numbered in its record-type block, records.h), ending with a
	 * zeroed entry; info, dump, the exports and the metrics name them from here. May be NULL.
	 */
	const struct loss_cause *losses;
	/*
	 * `bpfsight stacks --json`: each thread names, under this key, the function of the api
	 * table its stack is in, or null (nccl's "nccl_call": the collective a rank waits in).
	 * NULL: not shown.
	 */
	const char *stack_call_key;
	/* Reading: its decoders and what the model and the walk keep of it (above). */
	const struct family_decode *decode;
	/* Recording: options, attach, poll, detach, its hooks on records (family_record.h). */
	const struct family_record *record;
	/* `stats`, `report` and the verdict: its reports, rules, page, steps (family_stats.h). */
	const struct family_stats *stats;
	/*
	 * Export side: what the family's events show beyond their decoders' styles (tracks of
	 * their own, counters, flows, tables), described once for every format in its one file
	 * NAME_export.c, and formats of its own (export_model.h). May be NULL: its events are
	 * drawn by their styles.
	 */
	const struct family_export *export;
	/* `bpfsight monitor`: its metrics (metrics_family.h). May be NULL. */
	const struct metrics_family *metrics;
	/* `bpfsight top`: its columns (top_family.h); top records these families by default. */
	const struct top_family *top;
	/*
	 * `stats --from`, `stacks --from`, `report --from`: its reports and its rules' inputs as
	 * SQL in a ClickHouse server, in its NAME_sql.c beside the C reports they equal
	 * (ch_reports.h). May be NULL: none computed there.
	 */
	const struct family_sql *sql;
};

/* At most this many families: their sets are u64 bit masks (record_opts.families). */
#define FAMILY_MAX 64

/*
 * The registry, NULL-terminated: families.c, the one list of the product. A test that links
 * every object but families.o brings its own (tests/unit/test_family_toy.c).
 */
extern const struct family *const families[];

/*
 * The one loop over the registry: IT.f is each family in registry order, IT.i its index (the
 * index of its slot in every per-family array). for_each_family_slot adds IT.slot, a pointer
 * to the family's element of SLOTS, an array of per-family state indexed as families[]
 * (at least FAMILY_MAX long), so that what a command keeps per family is one struct, not
 * parallel arrays.
 */
struct family_it {
	int i;
	const struct family *f;
};
#define for_each_family(it)                                                                        \
	for (struct family_it it = { 0, families[0] }; it.f; it.f = families[++it.i])
/* for_each_family while COND holds too (COND is tested once IT.f is the next family). */
#define for_each_family_while(it, cond)                                                            \
	for (struct family_it it = { 0, families[0] }; it.f && (cond); it.f = families[++it.i])
#define for_each_family_slot(it, slots)                                                            \
	for (                                                                                      \
		struct {                                                                           \
			int i;                                                                     \
			const struct family *f;                                                    \
			__typeof__((slots)[0]) *slot;                                              \
		} it = { 0, families[0], &(slots)[0] };                                            \
		it.f; it.f = families[++it.i], it.slot = &(slots)[it.i])

const struct family *family__find(const char *name);
/*
 * The family always recorded (FAMILY_ALWAYS: processes' lives, which names what the others
 * record): the recording's own losses count against it, and its losses touch every report.
 */
const struct family *family__always(void);
/*
 * 1 when the file whose header is META recorded the family that writes records of TYPE (its
 * decoder's), whatever its name: a family asks so of another's records without naming it.
 */
int family__recorded_type(const struct trace_meta *meta, __u16 type);
/* How many families the registry has. */
int family__count(void);
/* The decoder of a record type, or NULL. */
const struct rec_decoder *family__decoder(__u16 type);
/* The same, and the index in families[] of the family that decodes it (-1 with NULL). */
const struct rec_decoder *family__decoder_at(__u16 type, int *family);
/* The style of the events of KIND (a decoder's kind), or NULL. */
const struct export_style *family__kind_style(const char *kind);
/*
 * Decode REC into EV with the decoder of its type. Returns 1 for an event, 0 for a
 * metadata record or an unknown type, -EINVAL for a record shorter than its type needs.
 */
int family__decode(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev);
/* A metadata record as a row (rec_decoder's row): 1 for a row, 0 none, -EINVAL too short. */
int family__decode_row(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev);
/* 1 when F writes samples of stacks (a decoder's style says .sample): top's function view's. */
int family__samples(const struct family *f);
/* "osrt, sched" : the families -t accepts, for error messages and --help. */
void family__list_selectable(char *buf, __u32 len);

#endif /* BPFSIGHT_FAMILY_H */
