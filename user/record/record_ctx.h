/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What a family sees of a recording: the options, the shared BPF maps every family reuses,
 * the writer, and the services families call (record_ctx__*). The session that drives them
 * is recorder.c; families include this header, never recorder.h.
 */
#ifndef BPFSIGHT_RECORD_CTX_H
#define BPFSIGHT_RECORD_CTX_H

#include <linux/types.h>
#include <sys/types.h>
#include "records.h"
#include "loss.h"
#include "mono_clock.h"
#include "flight_opts.h"
#include "start_at.h"

struct bpf_link;
struct bpf_map;
struct bpf_object;
struct string_pool;

#define RECORD_MAX_PIDS	    256
#define RECORD_MAX_FAMILIES 64
#define RECORD_STACKS_OFF   (~0ull)	 /* --stacks: the family's events carry none */
#define RECORD_MAX_RINGBUF  (2ull << 30) /* BPF_MAP_TYPE_RINGBUF max_entries is a u32 */

struct record_opts {
	const char *output;
	/* -o with %p in launch mode: expanded once CMD is forked (output_name.h), then output */
	const char *output_pattern;
	__u32 force;
	__u64 families; /* bit i = families[i] */
	pid_t pids[RECORD_MAX_PIDS];
	__u64 pid_start
		[RECORD_MAX_PIDS]; /* each -p target's start time: a recycled pid is not it */
	__u32 npids;
	/* Of pids, the last NCHILDREN: -p's descendants taken in at the start (target_tree.h). */
	__u32 nchildren;
	/*
	 * Each child's parent and name as it was taken in: its PROCESS record when it exits
	 * before the recording starts (a DataLoader's worker of the last epoch) still names it.
	 */
	__u32 pid_parent[RECORD_MAX_PIDS];
	char pid_comm[RECORD_MAX_PIDS][BS_COMM_LEN];
	__u32 no_subprocesses; /* --no-subprocesses: -p takes in no existing child */
	/*
	 * monitor --follow: this process records again after this recording (a restarted job),
	 * so it keeps what loading probes needs: no capability dropped, no seccomp filter.
	 */
	__u32 records_again;
	__u32 system_wide;
	/*
	 * -a's --exclude-pid (with their descendants) and --exclude-comm (a process whose name
	 * is one, from its start or its exec on, and its descendants): nothing of theirs is
	 * recorded, no probe placed in them (bpf/exclude.bpf.h, user/session/exclude.c).
	 */
	pid_t exclude_pids[RECORD_MAX_PIDS];
	__u32 nexclude_pids;
	char exclude_comms[BS_EXCLUDE_COMMS][BS_COMM_LEN];
	__u32 nexclude_comms;
	__u64 duration_ns; /* 0 = until the targets exit or a signal */
	__u64 ringbuf_bytes;
	int kill_signal;    /* sent to a launched CMD when -d ends; 0 = none */
	char **cmd;	    /* launch mode when non-NULL */
	const char *run_as; /* --user: CMD runs as this user (its name), NULL: as bpfsight */
	uid_t run_uid;	    /* --user's ids */
	gid_t run_gid;
	const char *cmdline; /* bpfsight's own command line, for the file header */
	__u32 verbose;
	__u32 dry_run; /* --dry-run: find and list probe sites, record nothing */
	/* --capture-range: the family whose ranges are kept (NULL: all), KIND:ARG's ARG */
	const struct family *capture;
	const char *capture_arg;
	__u32 families_explicit; /* -t named the families (else: every family, by default) */
	__u64 families_named;	 /* the families -t names, +NAME ones too */
	__u32 inject;		 /* --inject: ptrace the cupti-shim into targets lacking it */
	/* Python threads named by their threading names: the stack service runs, stacks or not */
	__u32 thread_names;
	/* --no-edges: the job's threads are not read at the recording's start and end */
	__u32 no_edges;
	/* top -p: the targets' threads read this often (BS_SNAP_NOW: what each is in now), 0 off */
	__u64 now_every_ns;
	/* --stacks: per families[] index, the events of at least this many ns get a stack */
	__u64 stack_ns[RECORD_MAX_FAMILIES];
	/* --unwind: frame pointers only, or unwind tables of at most this many rows (0: default) */
	__u32 unwind_fp;
	__u64 unwind_rows;
	struct flight_opts flight; /* --flight-recorder: window_ns 0 = off */
	struct start_at start_at;  /* --start-at: set 0 = at once */
	/* per families[] index, its options (struct family.opts_size), NULL without */
	void *family_opts[RECORD_MAX_FAMILIES];
	/*
	 * monitor: every record written (the file's whole stream, user-space records included)
	 * also goes to SINK, on the recording's thread; with output NULL, only there. SINK_NAME
	 * says where they go, for the start line (e.g. "http://127.0.0.1:9464/metrics").
	 */
	void (*sink)(void *arg, const struct bs_hdr *rec);
	void *sink_arg;
	const char *sink_name;
	/*
	 * The recording goes live now, every probe attached (top's first interval starts here,
	 * not at the first record: start-up may hold the records for a second); NULL: none.
	 */
	void (*sink_live)(void *arg);
	/*
	 * record: the file just written judged in one line, the recording's last words
	 * (stats__verdict_line, which lies above the recorder's layer); NULL: none.
	 */
	int (*verdict_line)(const char *path, __u64 by_ns, char *buf, size_t len);
	/* profile: the file written, told once it is closed (nsys's --stats, --export); or NULL */
	void (*written)(void *arg, const char *path);
	void *written_arg;
	/*
	 * NULL for record, else "monitor", "top" or "stacks": what its advice may suggest
	 * (monitor has no --inject). Messages name the command through msg.h.
	 */
	const char *cmd_name;
};

/* Whether -a leaves processes out (--exclude-pid, --exclude-comm): record_ctx.c. */
int record_opts__excludes(const struct record_opts *o);
/* Whether the recording reads stacks (the cpu family, --stacks): record_ctx.c. */
int record_opts__wants_stacks(const struct record_opts *o);
/*
 * Whether the recording reads the job's threads at its start and end (recorder_edges.c): into
 * a file (not a flight window, monitor or top), not --dry-run, not --no-edges.
 */
int record_opts__edges(const struct record_opts *o);
/* 1 when a family it records writes into its targets' memory (FAMILY_WRITES_TARGETS). */
int record_opts__writes_targets(const struct record_opts *o);
struct family;
/* --stacks for family F: the threshold of its events that get a stack, RECORD_STACKS_OFF. */
__u64 record_opts__stack_ns(const struct record_opts *o, const struct family *f);

/* F's options (struct family.opts_size bytes), NULL when it has none. */
void *record_opts__family(const struct record_opts *o, const struct family *f);
/* 1 when --capture-range names F's kind: F opens and closes the gate's ranges. */
int record_opts__captures(const struct record_opts *o, const struct family *f);
/* The files --capture-range writes, one per range (struct family_capture.files); 0: one, -o. */
__u32 record_opts__capture_files(const struct record_opts *o);

struct capture_gate; /* capture_gate.h */
struct ring_pump;    /* ring_pump.h */

/*
 * Where the recording's records go, set by the driver (user/session/): the file, a file per
 * capture range, the flight recorder's window, monitor's and top's sink. WRITE returns 0, a
 * negative errno (the recording stops on it), or 1: the record belongs to a capture range
 * whose file is closed (counted as its family's capture_late). NULL WRITE: nowhere
 * (--dry-run).
 */
struct record_out {
	int (*write)(void *arg, const struct bs_hdr *rec);
	void *arg;
};

/*
 * One recording as the services and the families see it: its options, the shared BPF maps,
 * where its records go and what it lost. Plain data and the record path only: the services
 * themselves (the uprobe manager, the stack service, the shim channel) are made by the driver
 * and handed to who uses them (struct family_attach, family_attach.h), never found here.
 */
struct record_ctx {
	const struct record_opts *opts;
	struct record_out out;
	struct string_pool *strings;
	pid_t self_pid;
	/* Shared maps, created by the driver (user/session/) and reused by every family. */
	int events_fd, targets_fd, lost_fd;
	int excluded_fd;  /* -a's processes left out (common.bpf.h's excluded), or -1 */
	int control_fd;	  /* BS_CTL_* bits every program reads (common.bpf.h) */
	int py_procs_fd;  /* Python processes whose frames BPF reads (bpf/stack_scratch.bpf.h) */
	int py_codes_fd;  /* code objects' identities (bpf/stack_scratch.bpf.h), shared likewise */
	int unw_rows_fd;  /* unwind tables' rows and each process's mappings of them */
	int unw_procs_fd; /* (bpf/unwind_maps.h: user/stacks/unwind_load.c fills them) */
	int unw_cache_fd; /* the rows the walks found last (bpf/unwind_maps.h), shared likewise */
	int unwind_sync;  /* tables built at once by who wants them (snap.c), not by a thread */
	int use_btf;	  /* tp_btf programs, else raw_tp */
	int write_err;	  /* first error from the writer: recording stops on it */
	pid_t launch_pid; /* the launched CMD (already a target when families attach), or 0 */
	struct capture_gate *gate; /* NULL unless --capture-range */
	int capture_done;	   /* the capturing family has all it wanted: the recording ends */
	/* ... or it said why no range can ever open: the recording ends, failed */
	int capture_failed;
	/* the only family -t asked measured nothing (it said why at its detach): the file is
	 * kept, the recording exits 1 */
	int nothing_measured;
	struct ring_pump *pump; /* the ring's records (ring_pump.h), once the recording is live */
	/*
	 * Reading the ring: a read takes at most a batch, so the recorder looks at its clock
	 * and signals between batches whatever the event rate. Once stopping, past stop_by
	 * the records are counted (stop_unread), not written.
	 */
	long rb_left;  /* records the read under way may still take */
	__u64 rb_seen; /* records read, for checking the clock every so many */
	__u64 stop_by; /* CLOCK_MONOTONIC ns; 0 while recording */
	/* The recording must stop: a signal (the recorder's flag), or -d's end (0: none). */
	volatile const int *stop_flag;
	__u64 end_ns;
	/* The recording's start (CLOCK_MONOTONIC ns), once every family is attached; 0 before. */
	__u64 live_ns;
	/* Its end (CLOCK_MONOTONIC ns), set as it stops before the families detach: where an
	 * interval still open then ends (the stop's iterators); 0 before. */
	__u64 ended_ns;
	int rb_count_only;
	/* Losses user space found (BS_LOST_KEY: loss__key), added to BPF's counts. */
	__u64 lost_user[BS_LOST_KEYS];
};

/*
 * Prepare a family's BPF object between open and load: reuse the shared maps (when they
 * exist yet), and keep only the tp_btf or only the raw_tp variant of each program.
 */
int record_ctx__prepare(struct record_ctx *ctx, struct bpf_object *obj);
/*
 * After record_ctx__prepare, for a family whose tp_btf programs keep per-thread state in
 * TASK_MAP (task storage) and whose raw_tp ones in HASH_MAP (osrt, sched): a kernel with
 * BTF but without task storage for tracing programs (before 5.12) gets the raw_tp programs
 * too, and only the map the chosen programs use is created (a hash preallocates).
 */
int record_ctx__pick_task_storage(struct record_ctx *ctx, struct bpf_object *obj,
				  struct bpf_map *task_map, struct bpf_map *hash_map);
/*
 * Run the task iterator of LINK once, to its end (its program writes what it finds): 0, or
 * -errno after warning "cannot WHAT: why" (LINK NULL: its program was not loaded, 0).
 */
int record_ctx__run_iter(struct bpf_link *link, const char *what);
/*
 * Run a task iterator over PROG once: its program writes records of SIZE bytes to the reader
 * (bpf_seq_write), each handed to FN with its process and thread as a family's in_flight
 * does. 0, or -errno after warning "cannot WHAT: why" (PROG NULL or not loaded: 0).
 */
struct bpf_program;
int record_ctx__iter_records(struct bpf_program *prog, size_t size, const char *what,
			     void (*fn)(void *arg, __u32 pid, __u32 tid, const struct bs_hdr *rec),
			     void *arg);
/* Append a user-space record (ctx->out); a failure is remembered in write_err and counted as loss. */
int record_ctx__write(struct record_ctx *ctx, const void *rec);
/*
 * Intern S (writing its STRING record the first time); 0 for NULL/empty, and for a new name
 * once the recording's names hold RECORD_STRINGS_MAX_BYTES (counted: strings_capped).
 */
__u32 record_ctx__intern(struct record_ctx *ctx, const char *s);
#define RECORD_STRINGS_MAX_BYTES (256ull << 20)
/*
 * Count N events of FAMILY (a name; NULL: CAUSE's own family) lost for CAUSE that user
 * space noticed: they join the LOSS records.
 */
void record_ctx__lost(struct record_ctx *ctx, const char *family, __u32 cause, __u64 n);
/*
 * Read up to MAX records of the ring buffer (each through the consume/observe hooks into the
 * file), waiting up to TIMEOUT_MS for the first. Returns records read or -errno.
 */
int record_ctx__read(struct record_ctx *ctx, int timeout_ms, long max);
/*
 * Drain a batch of the ring buffer (record_ctx__read of RECORD_CTX_BATCH records), waiting up
 * to TIMEOUT_MS for the first record. For stop hooks; returns records seen or -errno. A
 * caller that loops while it returns > 0 ends: once the recording stops, nothing new comes.
 */
#define RECORD_CTX_BATCH 4096
int record_ctx__poll(struct record_ctx *ctx, int timeout_ms);
/*
 * The recording stops: BPF programs write no new records from now on (bs_reserve), and the
 * ring's records are read until BY, then counted as stop_unread.
 */
void record_ctx__stop_producers(struct record_ctx *ctx, __u64 by);
/*
 * 1 once the recording must stop (a stop signal came, -d's time is over, or it is stopping):
 * for work that may block long (abandonable.h), whose caller goes back to the recorder's loop.
 */
int record_ctx__must_stop(struct record_ctx *ctx);

/* The cap BPFSIGHT_MAP_ENTRIES gives the maps named NAME, or 0 (record_ctx.c). */
__u32 record_ctx__map_entries(const char *name);

/*
 * PID is a process of bpfsight's own (a family's helper): -a traces it no more than the
 * recorder (one such process; a later call replaces it). 0, or a negative errno.
 */
int record_ctx__own_process(struct record_ctx *ctx, pid_t pid);
/* Count a probe of FAMILY (a name) that failed to attach: a BS_LOSS_ATTACH of FAMILY. */
void record_ctx__attach_failed(struct record_ctx *ctx, const char *family, const char *what,
			       int err);
/* Fill a header for a record user space writes; ts = CLOCK_MONOTONIC now if 0. */
void record_ctx__hdr(struct bs_hdr *h, __u16 type, __u32 size, __u32 pid, __u32 tid, __u64 ts);

/*
 * The bytes of the ring an event's record may fill it to (common.bpf.h's record_room): the
 * last sixteenth is the process life records' (bs_reserve_life) and, with gpu or nvtx, the
 * cupti-shim's (then at least four batches, at most half).
 */
__u64 record_ctx__record_room(const struct record_ctx *ctx);

/* Set the rodata every family object shares (common.bpf.h). */
/*
 * Every BPF object's common rodata (common.bpf.h); FAM: the family whose losses it counts
 * (a const struct family *; NULL: the recording's own, a service's object).
 */
#define RECORD_CTX_SET_COMMON_RODATA(skel, ctx, fam)                                               \
	do {                                                                                       \
		(skel)->rodata->bs_loss_family = loss__key(fam, 0) / BS_LOSS_SHARED;               \
		(skel)->rodata->trace_all = (ctx)->opts->system_wide;                              \
		(skel)->rodata->have_excluded = record_opts__excludes((ctx)->opts);                \
		(skel)->rodata->self_pid = (ctx)->self_pid;                                        \
		(skel)->rodata->wakeup_bytes = (ctx)->opts->ringbuf_bytes / 4;                     \
		(skel)->rodata->record_room = record_ctx__record_room(ctx);                        \
	} while (0)

/*
 * The --exclude-comm names into an object that includes bpf/exclude.bpf.h (proc's, libmap's),
 * between open and load: the exec that gives a process one of them excludes it.
 */
#define RECORD_CTX_SET_EXCLUDE_RODATA(skel, ctx)                                                   \
	do {                                                                                       \
		for (__u32 i_ = 0; i_ < (ctx)->opts->nexclude_comms && i_ < BS_EXCLUDE_COMMS;      \
		     i_++)                                                                         \
			memcpy((char *)(skel)->rodata->exclude_comms[i_],                          \
			       (ctx)->opts->exclude_comms[i_], BS_COMM_LEN);                       \
		(skel)->rodata->nexclude_comms = (ctx)->opts->nexclude_comms;                      \
	} while (0)

#endif /* BPFSIGHT_RECORD_CTX_H */
