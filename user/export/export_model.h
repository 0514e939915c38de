/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The export model: what a trace shows, described once by each family (struct family_export,
 * in its one file families/NAME/NAME_export.c) and rendered by every format (export_chrome.c,
 * export_perfetto.c, export_sqlite.c), which alone know their formats. docs/ARCHITECTURE.md,
 * "The export model", has the decisions; docs/EXPORT.md what each format makes of them.
 *
 * A family emits into a sink (struct ex_sink): events on tracks (a thread's, a process's, a
 * named track of either, a GPU's streams, a device), counters, and rows of tables it declares.
 * A sink renders one or more views (EX_OWN, EX_PROFILER, EX_TABLES); an item says which it
 * belongs to, and a family may skip the work of a view its sink does not render (ex_wants).
 *
 * What a family does not emit is drawn by its kind's style (struct export_style): an event of
 * its own records that its record hook leaves (returns 0) goes where the style puts it, in
 * every timeline, so a family with no export hooks at all is in every format.
 */
#ifndef BPFSIGHT_EXPORT_MODEL_H
#define BPFSIGHT_EXPORT_MODEL_H

#include <stddef.h>
#include "event.h"
#include "family.h"
#include "records.h"
#include "trace_meta.h"
#include "trace_model.h"

struct ex_sink;	 /* below */
struct exporter; /* export.h */

/*
 * The views a sink renders and an item belongs to (0: every timeline, EX_TIMELINE):
 *   EX_OWN       bpfsight's own timeline: every kind on tracks of its own, counters one per
 *                series (Perfetto);
 *   EX_PROFILER  the timeline as PyTorch's profiler (Kineto) writes one, for the tools that read
 *                torch.profiler traces (HTA, TensorBoard): its names, categories and keys, GPUs
 *                as processes and streams as threads (Chrome JSON);
 *   EX_TABLES    the tables families declare (SQLite);
 *   EX_ROWS      the events as rows, each as dump has it, with what the families add for the
 *                reports and rules a server computes from them (ClickHouse's bpfsight.events:
 *                struct ex_rows).
 */
#define EX_OWN	    0x1
#define EX_PROFILER 0x2
#define EX_TABLES   0x4
#define EX_ROWS	    0x8
#define EX_TIMELINE (EX_OWN | EX_PROFILER)

/* ---- values: event arguments, counter series, table columns ----------------------------- */

enum ex_value_kind {
	EX_NULL,   /* nothing (a table's NULL) */
	EX_INT,	   /* i */
	EX_UINT,   /* u */
	EX_REAL,   /* d, to DIGITS significant digits where text shows it (0: 17) */
	EX_FIXED,  /* d, with DIGITS decimals where text shows it */
	EX_TEXT,   /* s (NULL: EX_NULL) */
	EX_TEXTN,  /* s, at most N bytes (a NUL-padded comm) */
	EX_JSON,   /* s, a JSON value as it is written ("[[64], [16, 32]]") */
	EX_STRING, /* s, a name tables keep once and refer to by id (nsys's StringIds) */
	EX_NAME,   /* the same, of a text that stays at S for the whole export (a static table's) */
	EX_STACK,  /* stack (NULL: EX_NULL): tables refer to it by its id (BPFSIGHT_STACKS) */
	EX_ARG,	   /* arg: an event's argument as dump shows it (NULL: EX_NULL) */
};

struct ex_value {
	const char *key; /* a series' or an argument's name; NULL in a table's row */
	__u8 kind;	 /* enum ex_value_kind */
	__u8 digits;
	__u32 n;
	union {
		__s64 i;
		__u64 u;
		double d;
		const char *s;
		const struct trace_stack *stack;
		const struct event_arg *arg;
	};
};

#define EX_V_NULL      ((struct ex_value){ .kind = EX_NULL })
#define EX_V_INT(v)    ((struct ex_value){ .kind = EX_INT, .i = (__s64)(v) })
#define EX_V_UINT(v)   ((struct ex_value){ .kind = EX_UINT, .u = (__u64)(v) })
#define EX_V_REAL(v)   ((struct ex_value){ .kind = EX_REAL, .d = (v) })
#define EX_V_TEXT(v)   ((struct ex_value){ .kind = EX_TEXT, .s = (v) })
#define EX_V_STRING(v) ((struct ex_value){ .kind = EX_STRING, .s = (v) })
#define EX_V_STACK(v)  ((struct ex_value){ .kind = EX_STACK, .stack = (v) })
/* V when HAVE, else NULL. */
#define EX_V_INT_IF(have, v) ((have) ? EX_V_INT(v) : EX_V_NULL)
/* EV's argument KEY as dump shows it, NULL when it has none. */
struct ex_value ex_v_arg(const struct event *ev, const char *key);
/* EV's argument KEY as an integer, DFLT when it has none or it is text. */
__s64 ex_arg_int(const struct event *ev, const char *key, __s64 dflt);

/* nsys's thread id, the tables' globalTid: pid << 24 | tid. */
__s64 ex_gtid(__u32 pid, __u32 tid);

/* ---- tracks ------------------------------------------------------------------------------ */

enum ex_track_kind {
	EX_STYLE,	/* an event's own: where its kind's style puts it on its thread */
	EX_THREAD,	/* pid, tid */
	EX_PROCESS,	/* pid */
	EX_GLOBAL,	/* the whole trace (the recorder's own: loss) */
	EX_THREAD_SUB,	/* pid, tid, key: a named track of the thread's (NVTX push/pop) */
	EX_PROCESS_SUB, /* pid, key: a named track of the process's, its slices may overlap */
	EX_GPU,		/* pid, device: the process's work on a GPU */
	EX_GPU_STREAM,	/* pid, device, stream: a stream of it, its slices may overlap */
	EX_DEVICE,	/* device: a GPU of the machine, whoever uses it */
};

struct ex_track {
	__u8 kind; /* enum ex_track_kind */
	__u32 pid, tid;
	__u32 device, stream;
	__u64 key;	  /* tells apart the named tracks of one thread or process */
	const char *name; /* of a named track, a DEVICE */
	const char *desc; /* of a named track, a GPU, a DEVICE */
};

/* ---- events ------------------------------------------------------------------------------ */

enum ex_shape {
	EX_BY_STYLE, /* as its kind's style says: a slice with a duration, else an instant */
	EX_SLICE,    /* a slice, whatever its duration */
	EX_INSTANT,
	EX_ASYNC, /* a slice that ends on another thread (END_TID) and may overlap others */
};

/*
 * The PyTorch profiler's view of an event (EX_PROFILER), where it names it otherwise: its name
 * and category, the arguments it shows (the event's, then EXTRA), the id tying GPU work to
 * its launching call (correlation) and the framework op it belongs to (External id).
 */
struct ex_profiler {
	const char *name; /* NULL: the event's */
	const char *cat;  /* NULL: its style's */
	/* Whose arguments come first (the event's, maybe a copy renamed): NULL for none. */
	const struct event *args;
	const struct ex_value *extra; /* keyed */
	__u32 nextra;
	__u64 correlation; /* with CORRELATED (CUPTI's ids start at 0) */
	__u8 correlated;
	__u64 op_id; /* 0: none (ex_op_at finds the one of a launch) */
};

struct ex_event {
	const struct bs_hdr *rec; /* the record: the flows families tie to it (NULL: none) */
	const struct event *ev;	  /* name, kind, time, thread, arguments, stacks; NULL: below */
	__u64 ts, dur;		  /* without EV */
	struct ex_track on;
	__u8 shape; /* enum ex_shape */
	__u8 views; /* 0: every timeline */
	__u32 end_tid;
	__u64 async_id; /* EX_ASYNC: tells the process's ranges apart */
	const struct ex_profiler *prof;
};

/* ---- counters ---------------------------------------------------------------------------- */

#define EX_UNIT_COUNT 1
#define EX_UNIT_BYTES 2

#define EX_FROM_ZERO 0x1 /* a running count: 0 at the recording's start */

/*
 * A counter: its values are samples of one or more series (keyed values) on a PROCESS,
 * GLOBAL, GPU or DEVICE track. EX_OWN draws one series per counter; EX_PROFILER each sample
 * with every series it has.
 */
struct ex_counter {
	struct ex_track on;
	const char *name;
	const char *cat; /* its category (the profiler's) */
	const char *desc;
	__u8 unit; /* EX_UNIT_*, 0: none */
	__u8 views;
	__u8 flags;
	__u64 key; /* tells apart counters of one name on one track */
};

/* ---- tables ------------------------------------------------------------------------------ */

enum ex_col_type { EX_COL_ANY, EX_COL_INTEGER, EX_COL_TEXT, EX_COL_REAL };

#define EX_COL_NOT_NULL 0x1
#define EX_COL_KEY	0x2 /* the table's key, alone */

struct ex_column {
	const char *name;
	__u8 type; /* enum ex_col_type */
	__u8 flags;
	const char *refs; /* "StringIds(id)": the table and column its values are ids of */
};

/* Columns as tables declare them most often: integers, texts, ids of another table's rows. */
// clang-format off
#define EXC_INT(n)		{ n, EX_COL_INTEGER, 0, NULL }
#define EXC_INT_NN(n)		{ n, EX_COL_INTEGER, EX_COL_NOT_NULL, NULL }
#define EXC_TEXT(n)		{ n, EX_COL_TEXT, 0, NULL }
#define EXC_TEXT_NN(n)		{ n, EX_COL_TEXT, EX_COL_NOT_NULL, NULL }
#define EXC_REAL(n)		{ n, EX_COL_REAL, 0, NULL }
#define EXC_REF(n, refs)	{ n, EX_COL_INTEGER, 0, refs }
#define EXC_REF_NN(n, refs)	{ n, EX_COL_INTEGER, EX_COL_NOT_NULL, refs }
// clang-format on
#define EX_STRING_IDS "StringIds(id)" /* the names' table (EX_STRING values) */

struct ex_index {
	const char *name; /* TABLE_NAME */
	const char *cols; /* "globalPid, deviceId, streamId" */
};

#define EX_TABLE_BY_KEY	 0x1 /* kept in its key's order (SQLite: WITHOUT ROWID) */
#define EX_TABLE_SCRATCH 0x2 /* the export's own, never in its output (ex_fill's) */

struct ex_table {
	const char *name;
	const struct ex_column *cols; /* ending with a zeroed entry */
	const char *key;	      /* a key of several columns ("pid, tid"), or NULL */
	__u8 flags;
	const struct ex_index *indexes; /* built after the last row; ending with a zeroed entry */
};

enum ex_row_policy {
	EX_ROW_ADD,	/* a new row */
	EX_ROW_REPLACE, /* the last one per key stays */
	EX_ROW_KEEP,	/* the first one per key stays */
	EX_ROW_MERGE,	/* a key's row takes the values given (not NULL), keeps the others */
};

/* Set column SET of the last row of TABLE whose MATCH columns have the values given. */
struct ex_amend {
	const struct ex_table *table;
	const char *set;
	const char *match; /* "address, globalTid, isFree" */
};

/*
 * Set column SET of TABLE's rows from the row of FROM (a scratch table) with the same ON
 * columns, but for rows whose SKIP column is not 0; then index SET and drop FROM.
 */
struct ex_fill {
	const struct ex_table *table, *from;
	const char *on;	 /* "globalTid, start" */
	const char *set; /* also the name of FROM's column of the value */
	const char *skip;
	const char *index; /* the index's name built on SET */
};

/* The classes of API events (nsys's ENUM_NSYS_EVENT_CLASS): families add the rows they use. */
extern const struct ex_table ex_event_classes;

#define EX_MAX_COLS 40 /* columns of a table, at most */

/* A row of ex_event_classes: class ID, its NAME and LABEL (nsys's). */
int ex_event_class(struct ex_sink *s, int id, const char *name, const char *label);
/* The columns ex_ucall_row fills before the call's arguments: with an event class, without. */
#define EX_UCALL_COLS                                                                              \
	EXC_INT_NN("start"), EXC_INT_NN("end"), EXC_INT_NN("eventClass"), EXC_INT("globalTid"),    \
		EXC_REF_NN("nameId", EX_STRING_IDS), EXC_INT_NN("returnValue"),                    \
		EXC_INT_NN("nestingLevel")
#define EX_UCALL_COLS_NO_CLASS                                                                     \
	EXC_INT_NN("start"), EXC_INT_NN("end"), EXC_INT_NN("globalTid"),                           \
		EXC_REF_NN("nameId", EX_STRING_IDS), EXC_INT_NN("nestingLevel")
/* A GEMM's shape as BLAS names it, columns of the math libraries' call tables. */
#define EX_GEMM_COLS                                                                               \
	EXC_TEXT("trans"), EXC_INT("m"), EXC_INT("n"), EXC_INT("k"), EXC_INT("lda"),               \
		EXC_INT("ldb"), EXC_INT("ldc")
/*
 * The row in T of an API call REC (a struct bs_ucall of a uprobe-API family), nsys's shape:
 * start, end, eventClass CLASS, globalTid, nameId, returnValue (the low 32 bits of its return),
 * nestingLevel (its depth), EV's arguments COLS[NCOLS] as dump shows them and callchainId, the
 * last. CLASS < 0: without eventClass and returnValue (functions that return nothing). None
 * for an event without a name. 0 or a negative errno.
 */
int ex_ucall_row(struct ex_sink *s, const struct ex_table *t, const struct bs_hdr *rec,
		 const struct event *ev, int event_class, const char *const *cols, int ncols);

/* ---- sinks ------------------------------------------------------------------------------- */

/* What a renderer does with each item; an item of a view it does not render never comes. */
struct ex_sink_ops {
	int (*event)(struct ex_sink *s, const struct ex_event *e);
	int (*counter)(struct ex_sink *s, const struct ex_counter *c, __u64 ts,
		       const struct ex_value *v, __u32 n);
	/* The track exists from TS (a device the trace saw, a counter whose values come later). */
	int (*track)(struct ex_sink *s, const struct ex_track *t, const struct ex_counter *c,
		     __u64 ts);
	int (*row)(struct ex_sink *s, const struct ex_table *t, int policy,
		   const struct ex_value *v, __s64 *id);
	int (*amend)(struct ex_sink *s, const struct ex_amend *a, const struct ex_value *v);
	int (*fill)(struct ex_sink *s, const struct ex_fill *f);
	/* Every thread a record named so far: 1 and *PID, *TID, 0 at the end. */
	int (*next_thread)(struct ex_sink *s, size_t *it, __u32 *pid, __u32 *tid);
	/* The trace is one rank of a job: BACKEND's RANK of NRANKS (-1: unknown). */
	void (*rank)(struct ex_sink *s, const char *backend, __s32 rank, __s32 nranks);
	/* EX_ROWS: keyed value V on the row being made (its args). */
	int (*key)(struct ex_sink *s, const struct ex_value *v);
	/* EX_ROWS: 1 and its id when the record being rendered makes a row, else 0. */
	int (*row_id)(struct ex_sink *s, __u64 *id);
	/* EX_ROWS: a row of a family's own (ex_own_row). */
	int (*own_row)(struct ex_sink *s, __u32 pid, __u32 tid, const char *kind, const char *name,
		       const struct ex_value *v, __u32 n);
};

struct ex_sink {
	const struct ex_sink_ops *ops;
	__u32 views; /* EX_OWN, EX_PROFILER, EX_TABLES */
	const struct trace_meta *meta;
	const struct trace_model *model; /* as of the record being rendered */
	__u64 start_mono;		 /* the recording's start, 0: unknown */
	__u64 bins_origin;
	void **fst; /* per family (families[] order): its export state */
	int nfam;
	int *observers, *flowing; /* the families with an observe, a flows hook, in order */
	int nobservers, nflowing;
	void **rst;    /* EX_ROWS: per family, its struct ex_rows state */
	int finishing; /* the finish hooks are running: every record was read */
};

/* Does S render any of VIEWS? */
static inline int ex_wants(const struct ex_sink *s, __u32 views)
{
	return !!(s->views & views);
}

int ex_event(struct ex_sink *s, const struct ex_event *e);
/* EV drawn by its kind's style, as if its family had emitted nothing. */
int ex_event_styled(struct ex_sink *s, const struct bs_hdr *rec, const struct event *ev);
int ex_count(struct ex_sink *s, const struct ex_counter *c, __u64 ts, const struct ex_value *v,
	     __u32 n);
/* One series: ex_count of a value V keyed KEY. */
int ex_count1(struct ex_sink *s, const struct ex_counter *c, __u64 ts, const char *key,
	      struct ex_value v);
int ex_track(struct ex_sink *s, const struct ex_track *t, __u64 ts);
/* Counter C exists from TS: its track is described then, its values may come later. */
int ex_counter_from(struct ex_sink *s, const struct ex_counter *c, __u64 ts);
/* A row of T (as many values as T has columns); *ID (may be NULL): its id, 0 without tables. */
int ex_row(struct ex_sink *s, const struct ex_table *t, int policy, const struct ex_value *v,
	   __s64 *id);
/* V: the value to set, then the values to match. */
int ex_amend_last(struct ex_sink *s, const struct ex_amend *a, const struct ex_value *v);
int ex_fill(struct ex_sink *s, const struct ex_fill *f);
int ex_next_thread(struct ex_sink *s, size_t *it, __u32 *pid, __u32 *tid);
void ex_rank(struct ex_sink *s, const char *backend, __s32 rank, __s32 nranks);
/*
 * The framework op (a torch op) open on thread TID of PID at TS, as the families know it from
 * the records read so far: its id, 0 when none (struct family_export.op_at). Only for
 * EX_PROFILER: 0 elsewhere.
 */
__u64 ex_op_at(struct ex_sink *s, __u32 pid, __u32 tid, __u64 ts);
/* The flows REC starts (OUT) and ends (IN), as the families tie them; 0 when none. */
void ex_flows(struct ex_sink *s, const struct bs_hdr *rec, __u64 *out, __u64 *in);
/*
 * Where bin 0 of binned counters starts: the recording's start, or TS (the first time asked)
 * when the trace has none. The same for every counter of the sink, so that their steps line up.
 */
__u64 ex_bins_origin(struct ex_sink *s, __u64 ts);
/* Did the recording ask for FAMILY (the header's "proc,cuda,nccl")? */
int ex_recorded(const struct trace_meta *meta, const char *family);

/*
 * EX_ROWS: keyed value V (its key KEY) on the row being made: a record's while a family's
 * ex_rows.record runs, a stack's or a process's in its hooks. Nothing elsewhere.
 */
int ex_key(struct ex_sink *s, const char *key, struct ex_value v);
/* EX_ROWS: 1 and *ID, the id of the row the record being rendered makes; 0 when it makes none. */
int ex_row_id(struct ex_sink *s, __u64 *id);
/*
 * EX_ROWS: a row of a family's own (ex_rows.end), of thread TID of PID, at the recording's
 * start: its KIND and NAME, its args the N keyed values V (as dump writes arguments).
 */
int ex_own_row(struct ex_sink *s, __u32 pid, __u32 tid, const char *kind, const char *name,
	       const struct ex_value *v, __u32 n);

/* ---- a family's hooks -------------------------------------------------------------------- */

/*
 * A family's part of the events' rows (EX_ROWS: export --format clickhouse, ship), where its
 * reports and verdict rules computed in a server (stats --from, docs/CLICKHOUSE.md) need what
 * SQL cannot derive from the rows of the events alone: keys on rows (ex_key) and rows of its
 * own (ex_own_row), computed once as a file is rendered, by the same C the file's pass runs.
 * Its own state per file rendered (NEW; NULL: none kept), never the timelines' (open's). A
 * rule's input that needs a per-thread figure of every record (a thread's ledger) keeps it in
 * RECORD and writes a row per thread at END. Every member may be NULL.
 */
struct ex_rows {
	void *(*new)(void);
	void (*free)(void *st);
	/*
	 * Every record of any family, in file order, as its row is made (ex_row_id: whether it
	 * makes one, and its id): keys on that row. 0 or a negative errno.
	 */
	int (*record)(struct ex_sink *s, void *st, const struct bs_hdr *rec);
	/* After the last record: its own rows (before the file's window row). 0 or -errno. */
	int (*end)(struct ex_sink *s, void *st);
	/* Keys on the row of STACK (NULL: one not read; KERNEL: a CPU sample's kernel part). */
	void (*stack)(struct ex_sink *s, void *st, const struct trace_stack *stack, int kernel);
	/* Keys on the rows of process PID's threads' names (`thread_names`). */
	void (*process)(struct ex_sink *s, void *st, __u32 pid);
};

#define EX_SAYS_RANK 0x1 /* its finish may say the trace's rank (ex_rank) */

/*
 * What a family shows in the exports (struct family.export), in its one file NAME_export.c.
 * Every member may be NULL. ST is its state for one export, made by open (else NULL); S the
 * sink, whose model (S->model) is the records' read so far.
 */
struct family_export {
	/* Its tables, created in this order before open (NULL-terminated). */
	const struct ex_table *const *tables;
	__u32 says; /* EX_SAYS_* */
	int (*open)(struct ex_sink *s, void **st);
	void (*free)(void *st);
	/* Every record of any family, in file order, before its own family's record hook. */
	int (*observe)(struct ex_sink *s, void *st, const struct bs_hdr *rec);
	/*
	 * A record of its own (EV: its event, NULL for a metadata record): what it shows. 1 when
	 * the event was drawn (or is not to be), 0 to draw it by its style, or a negative errno.
	 */
	int (*record)(struct ex_sink *s, void *st, const struct bs_hdr *rec,
		      const struct event *ev);
	/* After the last record: what needs them all (binned counters, links, names). */
	int (*finish)(struct ex_sink *s, void *st);
	/* The flows a record of any family starts (OUT) or ends (IN), left 0 when none. */
	void (*flows)(const struct bs_hdr *rec, __u64 *out, __u64 *in);
	/* The id of the innermost framework op open on (PID, TID) at TS, 0: none known. */
	__u64 (*op_at)(void *st, __u32 pid, __u32 tid, __u64 ts);
	/*
	 * Export formats of its own (struct exporter, export.h), NULL-terminated: formats only
	 * its records fill (a PyTorch memory snapshot), offered by `bpfsight export --format`
	 * after the formats every trace has. Each named apart from every other format. May be
	 * NULL.
	 */
	const struct exporter *const *exporters;
	/* Its part of the events' rows (EX_ROWS), NULL: none beyond its events' own. */
	const struct ex_rows *rows;
};

/* F's own export formats (struct family_export.exporters), NULL when it has none. */
static inline const struct exporter *const *family__exporters(const struct family *f)
{
	return f->export ? f->export->exporters : NULL;
}

/*
 * The renderers' side of the families' hooks (export_model.c), called family by family so
 * that a renderer keeps its order (SQLite creates family I's tables before its open; Chrome
 * finishes in registry order, the others the last registered first):
 *   ex_sink__init       OPS, VIEWS, META: a state slot per family; 0 or -ENOMEM
 *   ex_sink__open_one   family I's open
 *   ex_sink__observe    every family's observe of REC
 *   ex_sink__record     REC of family FAM: 1 when it drew its event, 0 when its style is to
 *                       draw it, or a negative errno
 *   ex_sink__finish_one family I's finish
 *   ex_sink__fini       the families' states freed
 * and of EX_ROWS (struct ex_rows: no open, record or finish hook runs there):
 *   ex_sink__rows_new      every family's rows state made
 *   ex_sink__rows_record   REC through every family's ex_rows.record (keys on its row)
 *   ex_sink__rows_end      every family's own rows
 *   ex_sink__rows_stack    keys on a stack's row; ex_sink__rows_process on a process's
 */
int ex_sink__init(struct ex_sink *s, const struct ex_sink_ops *ops, const struct trace_meta *meta,
		  __u32 views);
int ex_sink__open_one(struct ex_sink *s, int i);
int ex_sink__observe(struct ex_sink *s, const struct bs_hdr *rec);
int ex_sink__record(struct ex_sink *s, int fam, const struct bs_hdr *rec, const struct event *ev);
int ex_sink__finish_one(struct ex_sink *s, int i);
void ex_sink__fini(struct ex_sink *s);
int ex_sink__rows_new(struct ex_sink *s);
int ex_sink__rows_record(struct ex_sink *s, const struct bs_hdr *rec);
int ex_sink__rows_end(struct ex_sink *s);
void ex_sink__rows_stack(struct ex_sink *s, const struct trace_stack *stack, int kernel);
void ex_sink__rows_process(struct ex_sink *s, __u32 pid);

#endif /* BPFSIGHT_EXPORT_MODEL_H */
