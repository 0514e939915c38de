// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A live process's threads' stacks, now, without stopping it (snap.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cpu_records.h"
#include "mono_clock.h"
#include "proc_meta.h"
#include "py_mem.h"
#include "py_walk.h"
#include "record_ctx.h"
#include "snap.h"
#include "stack_svc.h"
#include "string_pool.h"
#include "thread_state.h"
#include "trace_model.h"
#include "unwind_load.h"
#include "uprobe_mgr.h"
#include "snap.skel.h"

#define SNAP_MAX_THREADS 4096
#define RAW_WORDS	 (BS_STACK_TOP_WORDS + BS_STACK_MAX_FRAMES + 4 * BS_PY_MAX_FRAMES)
#define FP_SPAN		 (16ull << 20) /* a frame pointer lies this far above sp at most */
#define SAMPLE_NS	 100000	       /* a running thread is sampled after this much CPU */
#define ROUND_MS	 10	       /* the samples waited for between two rounds */
#define RING_BYTES	 (1u << 20)
#define UNWIND_PASSES	 8 /* reads of the threads, each with the tables the last one wanted */

/* One thread's stack as BPF sends it: the words on top of its stack, addresses, frames. */
struct raw {
	__u64 w[RAW_WORDS];
	__u32 n, npy, flags;
	int have;	/* 1: W is its stack; 2: read from memory, not checked yet */
	__u64 switches; /* its context switches before the memory read */
	struct bpf_link *sampler;
};

/* What reads processes, loaded once: a `bpfsight stacks` run, or a recording's hang trigger. */
struct snap_session {
	struct snap_bpf *skel;
	struct bpf_link *iter;
	struct ring_buffer *rb;
	struct py_mem *mem;
	/* Its own recording context and services (`bpfsight stacks`), or a recording's. */
	struct record_opts opts;
	struct record_ctx own;
	struct record_ctx *ctx;
	struct uprobe_mgr *uprobes; /* own: no probes, its files name the native frames */
	struct stack_svc *svc;
	int own_svc;
	struct trace_model *model; /* own: names the stacks its service writes */
	struct snap_run *run;	   /* the process being read */
};

/* One process being read. */
struct snap_run {
	struct snap *out;
	struct snap_session *ss;
	struct snap_bpf *skel;
	struct record_ctx *ctx;
	struct stack_svc *svc;
	struct py_mem *mem;
	struct bs_py_cfg cfg; /* valid when out->python_minor */
	struct raw *raws;     /* per out->threads[i] */
	struct snap_task *view;
	__u32 nview;
};

/* The records the stack service writes (strings, stacks) go to the snap's model. */
static int to_model_out(void *arg, const struct bs_hdr *rec)
{
	trace_model__observe(arg, rec);
	return 0;
}

/* The iterator's view of the process now into r->view; how many threads (0: none left). */
static int look(struct snap_run *r)
{
	int fd = bpf_iter_create(bpf_link__fd(r->ss->iter));
	size_t got = 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	while (got < SNAP_MAX_THREADS * sizeof(*r->view) &&
	       (n = read(fd, (char *)r->view + got, SNAP_MAX_THREADS * sizeof(*r->view) - got)) > 0)
		got += n;
	close(fd);
	r->nview = got / sizeof(*r->view);
	return r->nview;
}

static const struct snap_task *seen(const struct snap_run *r, __u32 tid)
{
	for (__u32 i = 0; i < r->nview; i++)
		if (r->view[i].tid == tid)
			return &r->view[i];
	return NULL;
}

static int thread_index(const struct snap *s, __u32 tid)
{
	for (__u32 i = 0; i < s->n; i++)
		if (s->threads[i].task.tid == tid)
			return i;
	return -1;
}

/* The threads of the view not met before join the list (up to SNAP_MAX_THREADS). */
static void add_new(struct snap_run *r)
{
	struct snap *s = r->out;

	for (__u32 i = 0; i < r->nview && s->n < SNAP_MAX_THREADS; i++)
		if (thread_index(s, r->view[i].tid) < 0) {
			struct snap_thread *th = &s->threads[s->n++];

			th->task = r->view[i];
			th->cpu_ns = r->view[i].cpu_ns;
			th->run_delay_ns = r->view[i].run_delay_ns;
		}
}

/*
 * The caller of the frame at *IP (registers *SP, *BP) of a thread of PID that is not running,
 * as the BPF walk finds it (bpf/stack_native.bpf.h): by its file's unwind table when it has
 * one (the rows BPF reads, bs_unw_cfa), else by the frame pointer. 0 with the caller's
 * registers in place (*EXACT: *IP is an instruction, after a signal frame), else how the walk
 * ended (BS_STACK_END_*, -1 where a frame pointer could not be followed).
 */
static int caller_from_memory(struct snap_run *r, __u64 *ip, __u64 *sp, __u64 *bp, __u64 hi,
			      int *exact)
{
	struct unwind_load *ul = stack_svc__unwind_load(r->svc);
	const struct bs_unwind_row *row = NULL;
	const struct bs_unw_map *m = NULL;
	__u64 cfa, fr[2], uc[(BS_UC_RIP + 8 - BS_UC_RBP) / 8];
	pid_t pid = r->out->pid;
	int how;

	if (ul)
		row = unwind_load__row(ul, pid, *ip, *exact, &m);
	if (!m || !m->nrows) {
		/* A frame pointer lies up the stack, or it is not one. */
		if (*bp < *sp || *bp >= hi || (*bp & 7) ||
		    py_mem__read(r->mem, pid, *bp, fr, sizeof(fr)) || !fr[1])
			return -1;
		*sp = *bp + 16;
		*bp = fr[0];
		*ip = fr[1];
		*exact = 0;
		return 0;
	}
	if (!row)
		return BS_CUT_NO_FDE + 1;
	how = bs_unw_cfa(row, *ip, *sp, *bp, hi, &cfa);
	if (how == BS_UNW_STEP_SIGNAL) {
		if (py_mem__read(r->mem, pid, *sp + BS_UC_RBP, uc, sizeof(uc)))
			return BS_CUT_BAD_CFA + 1;
		*bp = uc[0];
		*sp = uc[(BS_UC_RSP - BS_UC_RBP) / 8];
		*ip = uc[(BS_UC_RIP - BS_UC_RBP) / 8];
		*exact = 1;
		return 0;
	}
	if (how == BS_UNW_STEP_DEREF) {
		/* Stack realignment: the CFA and the caller's rbp saved in the frame. */
		if (py_mem__read(r->mem, pid, *bp + row->cfa_off, &cfa, 8) ||
		    !bs_unw_cfa_ok(cfa, *sp, hi) ||
		    py_mem__read(r->mem, pid, *bp + row->rbp_off, bp, 8))
			return BS_CUT_BAD_CFA + 1;
	} else if (how != BS_UNW_STEP_CFA) {
		return how;
	} else if (row->rbp_off && py_mem__read(r->mem, pid, cfa + row->rbp_off, bp, 8)) {
		return BS_CUT_BAD_CFA + 1;
	}
	if (py_mem__read(r->mem, pid, cfa - 8, fr, 8))
		return BS_CUT_BAD_CFA + 1;
	*ip = fr[0];
	*sp = cfa;
	*exact = 0;
	return *ip ? 0 : -1;
}

/*
 * The native stack of T, which is not running, from its saved registers, as stack_unwind
 * reads a running one: the words on top of its stack, its instruction, the return addresses
 * the walk finds; how the walk ended into *FLAGS (BS_STACK_END_*, BS_STACK_UNW_FIRST). How
 * many words after the top ones.
 */
static __u32 native_from_memory(struct snap_run *r, const struct snap_task *t, __u64 *w,
				__u32 *flags)
{
	__u64 ip = t->ip, sp = t->sp, bp = t->bp, hi = t->sp + FP_SPAN;
	struct unwind_load *ul = stack_svc__unwind_load(r->svc);
	const struct bs_unw_map *m;
	int exact = 1, end = 0;
	__u32 n = 0;

	if (py_mem__read(r->mem, r->out->pid, t->sp, w, BS_STACK_TOP_WORDS * 8))
		memset(w, 0, BS_STACK_TOP_WORDS * 8);
	w += BS_STACK_TOP_WORDS;
	if (!t->ip)
		return 0;
	if (ul && unwind_load__row(ul, r->out->pid, ip, 1, &m) && m)
		*flags |= BS_STACK_UNW_FIRST;
	w[n++] = ip;
	while (n < BS_STACK_MAX_FRAMES + 1 &&
	       !(end = caller_from_memory(r, &ip, &sp, &bp, hi, &exact)))
		w[n++] = ip;
	if (end > 0)
		*flags |= (__u32)end << BS_STACK_END_SHIFT;
	return n;
}

/* T's stack read from memory into RAW (checked later: it may have run meanwhile). */
static void read_memory(struct snap_run *r, const struct snap_task *t, struct raw *raw)
{
	int npy = 0;

	raw->flags = BS_CPU_LEAF;
	raw->n = native_from_memory(r, t, raw->w, &raw->flags);
	if (r->out->python_minor) {
		npy = py_walk__frames(r->mem, r->out->pid, &r->cfg,
				      py_walk__key(&r->cfg, t->tid, t->fsbase),
				      (struct bs_py_frame *)(raw->w + BS_STACK_TOP_WORDS + raw->n),
				      BS_PY_MAX_FRAMES);
		raw->flags |= npy >= 0 ? BS_CPU_PYTHON : 0;
	}
	raw->npy = npy > 0 ? npy : 0;
	raw->n += BS_STACK_TOP_WORDS;
	raw->switches = t->switches;
	raw->have = 2;
}

/*
 * A task-clock event on thread TID running snap_sample, for one overflow: its stack comes
 * once it has run SAMPLE_NS more.
 */
static int sample(struct snap_run *r, __u32 tid, struct raw *raw)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(a),
		.config = PERF_COUNT_SW_TASK_CLOCK,
		.sample_period = SAMPLE_NS,
	};
	int fd;

	if (raw->sampler)
		return 0;
	fd = syscall(__NR_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	raw->sampler = bpf_program__attach_perf_event(r->skel->progs.snap_sample, fd);
	if (!raw->sampler) {
		close(fd);
		return -errno;
	}
	/* One interrupt of the thread, not one per period until the event is closed. */
	ioctl(fd, PERF_EVENT_IOC_REFRESH, 1);
	return 0;
}

static void stop_sampling(struct raw *raw)
{
	bpf_link__destroy(raw->sampler); /* closes the event */
	raw->sampler = NULL;
}

/* A sample's STACK_RAW: the first one of its thread is its stack. */
static int on_sample(void *arg, void *data, size_t size)
{
	const struct bs_stack_raw *rec = data;
	struct snap_session *ss = arg;
	struct snap_run *r = ss->run;
	struct raw *raw;
	__u32 n, npy;
	int i;

	if (!r || size < sizeof(*rec) || rec->h.type != BS_REC_STACK_RAW ||
	    rec->h.pid != (__u32)r->out->pid)
		return 0;
	i = thread_index(r->out, rec->h.tid);
	if (i < 0 || r->raws[i].have == 1)
		return 0;
	raw = &r->raws[i];
	stack_svc__raw_counts(size - sizeof(*rec), rec->nips, rec->npy, &n, &npy);
	if (n > BS_STACK_TOP_WORDS + BS_STACK_MAX_FRAMES)
		n = BS_STACK_TOP_WORDS + BS_STACK_MAX_FRAMES;
	memcpy(raw->w, rec + 1, (n + 4ull * npy) * 8);
	raw->n = n;
	raw->npy = npy;
	raw->flags = rec->flags;
	raw->have = 1;
	r->out->threads[i].sampled = 1;
	r->out->threads[i].in_kernel = !!(rec->flags & BS_CPU_KERNEL);
	return 0;
}

/*
 * One round: each thread still without a stack is read from memory when it does not run
 * (kept when the next look shows it did not run meanwhile), sampled when it does.
 */
static int round_once(struct snap_run *r)
{
	struct snap *s = r->out;
	const struct snap_task *t;
	int left = 0, err;

	if (look(r) <= 0)
		return -ESRCH;
	add_new(r);
	for (__u32 i = 0; i < s->n; i++) {
		struct snap_thread *th = &s->threads[i];

		if (r->raws[i].have == 1 || th->error)
			continue;
		t = seen(r, th->task.tid);
		if (!t) {
			th->error = "it exited during the dump";
			continue;
		}
		th->task = *t;
		if (t->kthread) {
			th->error = "a kernel thread: no user-space stack";
		} else if (t->exiting) {
			th->error = "it is exiting";
		} else if (t->on_cpu || !t->state) {
			/* Running, or runnable: it runs again soon, and the sample is then. */
			err = sample(r, t->tid, &r->raws[i]);
			if (err)
				th->error =
					"running, and it could not be sampled (perf_event_open)";
		} else {
			read_memory(r, t, &r->raws[i]);
		}
	}
	if (look(r) <= 0)
		return -ESRCH;
	for (__u32 i = 0; i < s->n; i++) {
		struct raw *raw = &r->raws[i];

		if (raw->have == 2) {
			t = seen(r, s->threads[i].task.tid);
			raw->have = t && !t->on_cpu && t->switches == raw->switches ? 1 : 0;
		}
		if (raw->have == 1 && raw->sampler)
			stop_sampling(raw);
		left += raw->have != 1 && !s->threads[i].error;
	}
	s->rounds++;
	return left;
}

/* The GIL's holder among the threads. */
static void mark_gil(struct snap_run *r)
{
	__u64 key = r->out->python_minor ? py_walk__gil_holder(r->mem, r->out->pid, &r->cfg) : 0;

	for (__u32 i = 0; key && i < r->out->n; i++) {
		const struct snap_task *t = &r->out->threads[i].task;

		r->out->threads[i].gil = py_walk__key(&r->cfg, t->tid, t->fsbase) == key;
	}
}

/* Each stack named by the stack service; Python names from the threading module. */
static void name_all(struct snap_run *r)
{
	static struct py_thread_name names[SNAP_MAX_THREADS];
	struct snap *s = r->out;
	int nn = 0;

	for (__u32 i = 0; i < s->n; i++) {
		struct raw *raw = &r->raws[i];
		const __u64 *w = raw->w, *top;
		__u32 n = raw->n;

		if (raw->have != 1)
			continue;
		top = stack_svc__raw_top(raw->flags, &w, &n);
		s->threads[i].stack_id =
			stack_svc__stack(r->ctx, r->svc, s->pid, s->threads[i].task.tid, s->read_at,
					 w, n, raw->npy, top, raw->flags);
		if (!s->threads[i].stack_id && !s->threads[i].error)
			s->threads[i].error = "no frame could be read";
	}
	if (s->python_minor)
		nn = stack_svc__thread_names(r->svc, s->pid, names, SNAP_MAX_THREADS);
	for (int k = 0; k < nn; k++) {
		int i = thread_index(s, names[k].tid);

		if (i >= 0)
			snprintf(s->threads[i].name, sizeof(s->threads[i].name), "%s",
				 names[k].name);
	}
}

/* PID's executable and command line, for naming its threads (thread_name.h). */
static void read_program(struct snap *s)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/exe", s->pid);
	n = readlink(path, s->exe, sizeof(s->exe) - 1);
	s->exe[n > 0 ? n : 0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", s->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, s->cmdline, sizeof(s->cmdline) - 1) : 0;
	if (fd >= 0)
		close(fd);
	s->cmdline[n > 0 ? n : 0] = 0;
	for (ssize_t i = 0; i + 1 < n; i++)
		if (!s->cmdline[i])
			s->cmdline[i] = ' ';
}

static int fail(struct snap *out, int err, const char *why)
{
	out->failure = why;
	return err;
}

/*
 * RANK, LOCAL_RANK, WORLD_SIZE in PID's environment as it started (torchrun's), -1: none; and
 * the job it belongs to (MASTER_ADDR:MASTER_PORT, TORCHELASTIC_RUN_ID), its parent.
 */
static void read_env_ranks(struct snap *s)
{
	static const char *const vars[] = { "RANK=", "LOCAL_RANK=", "WORLD_SIZE=" };
	__s32 *at[] = { &s->env_rank, &s->env_local_rank, &s->env_world };
	const char *addr = NULL, *port = NULL, *run = NULL;
	char path[64], *buf = malloc(1 << 16), *end;
	ssize_t n = 0, got;
	int fd;

	s->env_rank = s->env_local_rank = s->env_world = -1;
	s->job[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/environ", s->pid);
	fd = buf ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	while (fd >= 0 && n < (1 << 16) - 1 && (got = read(fd, buf + n, (1 << 16) - 1 - n)) > 0)
		n += got;
	if (fd >= 0)
		close(fd);
	if (buf)
		buf[n] = 0;
	for (char *p = buf; buf && p < buf + n; p += strlen(p) + 1) {
		if (!strncmp(p, "MASTER_ADDR=", 12))
			addr = p + 12;
		else if (!strncmp(p, "MASTER_PORT=", 12))
			port = p + 12;
		else if (!strncmp(p, "TORCHELASTIC_RUN_ID=", 20))
			run = p;
		for (size_t k = 0; k < sizeof(vars) / sizeof(vars[0]); k++) {
			size_t len = strlen(vars[k]);
			long v;

			if (strncmp(p, vars[k], len))
				continue;
			v = strtol(p + len, &end, 10);
			if (end != p + len && !*end && v >= 0 && v < (1l << 30))
				*at[k] = (__s32)v;
		}
	}
	if (addr && port)
		snprintf(s->job, sizeof(s->job), "%s:%s", addr, port);
	else if (run)
		snprintf(s->job, sizeof(s->job), "%s", run);
	free(buf);
	s->ppid = 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", s->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		char st[512], *rp;

		got = read(fd, st, sizeof(st) - 1);
		close(fd);
		st[got > 0 ? got : 0] = 0;
		/* After the comm's closing parenthesis: " S PPID ..." */
		rp = strrchr(st, ')');
		if (rp && rp[1] == ' ' && rp[2] && rp[3] == ' ')
			s->ppid = (pid_t)strtol(rp + 4, NULL, 10);
	}
}

/*
 * The shared maps a recording has (CTX's fds): Python processes, code objects, unwind tables,
 * so the snapshot reads frames as the recording's programs do; its targets too, which no
 * snapshot program reads, but which its object would otherwise make again (65,536 entries
 * allocated whole: ~1.5 ms of every recording's start). Its own ring, for its samples.
 */
static int reuse_maps(struct snap_session *ss)
{
	struct {
		struct bpf_map *map;
		int fd;
	} m[] = {
		{ ss->skel->maps.py_procs, ss->ctx->py_procs_fd },
		{ ss->skel->maps.py_codes, ss->ctx->py_codes_fd },
		{ ss->skel->maps.unw_rows, ss->ctx->unw_rows_fd },
		{ ss->skel->maps.unw_procs, ss->ctx->unw_procs_fd },
		{ ss->skel->maps.targets, ss->ctx->targets_fd },
	};
	int err;

	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (m[i].fd >= 0 && (err = bpf_map__reuse_fd(m[i].map, m[i].fd)))
			return err;
	return 0;
}

/* A context of its own, writing to its model, and the stack service on it. */
static int own_services(struct snap_session *ss, const pid_t *pids, int npids, const char **why)
{
	int err;

	ss->opts = (struct record_opts){ .cmd_name = "stacks" };
	for (int i = 0; i < npids && i < RECORD_MAX_PIDS; i++)
		ss->opts.pids[ss->opts.npids++] = pids[i];
	ss->own = (struct record_ctx){ .opts = &ss->opts,
				       .self_pid = getpid(),
				       .strings = string_pool__new(),
				       .events_fd = -1,
				       .targets_fd = -1,
				       .excluded_fd = -1,
				       .lost_fd = -1,
				       .control_fd = -1,
				       .py_procs_fd = bpf_map__fd(ss->skel->maps.py_procs),
				       .py_codes_fd = -1,
				       .unw_rows_fd = bpf_map__fd(ss->skel->maps.unw_rows),
				       .unw_procs_fd = bpf_map__fd(ss->skel->maps.unw_procs),
				       .unw_cache_fd = bpf_map__fd(ss->skel->maps.unw_cache),
				       .unwind_sync = 1 };
	ss->model = trace_model__new();
	ss->own.out = (struct record_out){ to_model_out, ss->model };
	ss->ctx = &ss->own;
	ss->uprobes = ss->own.strings && ss->model ? uprobe_mgr__new(&ss->own) : NULL;
	if (!ss->uprobes || !(ss->svc = stack_svc__new(&ss->own, ss->uprobes, &err))) {
		*why = "cannot start the stack service";
		return -ENOMEM;
	}
	ss->own_svc = 1;
	stack_svc__start(&ss->own, ss->svc);
	return 0;
}

struct snap_session *snap_session__new(struct record_ctx *ctx, struct stack_svc *svc,
				       const pid_t *pids, int npids, int *err, const char **why)
{
	struct snap_session *ss = calloc(1, sizeof(*ss));

	*why = "out of memory";
	*err = -ENOMEM;
	if (!ss || !(ss->mem = py_mem__new()))
		goto fail;
	ss->ctx = ctx;
	ss->svc = svc;
	*why = "cannot open the BPF object";
	ss->skel = snap_bpf__open();
	if (!ss->skel) {
		*err = -errno;
		goto fail;
	}
	ss->skel->rodata->self_pid = getpid();
	bpf_map__set_max_entries(ss->skel->maps.events, RING_BYTES);
	*why = "cannot use the recording's maps";
	if (ctx && (*err = reuse_maps(ss)))
		goto fail;
	*why = "cannot load the BPF programs";
	*err = snap_bpf__load(ss->skel);
	if (*err)
		goto fail;
	ss->iter = bpf_program__attach_iter(ss->skel->progs.snap_tasks, NULL);
	if (!ss->iter) {
		*err = -errno;
		*why = "cannot attach the task iterator";
		goto fail;
	}
	if (!ctx && (*err = own_services(ss, pids, npids, why)))
		goto fail;
	ss->rb = ring_buffer__new(bpf_map__fd(ss->skel->maps.events), on_sample, ss, NULL);
	if (!ss->rb) {
		*err = -errno;
		*why = "cannot open the ring buffer";
		goto fail;
	}
	*err = 0;
	return ss;
fail:
	snap_session__free(ss);
	return NULL;
}

void snap_session__free(struct snap_session *ss)
{
	if (!ss)
		return;
	ring_buffer__free(ss->rb);
	if (ss->own_svc)
		stack_svc__free(ss->svc);
	uprobe_mgr__free(ss->uprobes);
	string_pool__free(ss->own.strings);
	trace_model__free(ss->model);
	bpf_link__destroy(ss->iter);
	snap_bpf__destroy(ss->skel);
	py_mem__free(ss->mem);
	free(ss);
}

const struct trace_model *snap_session__model(const struct snap_session *ss)
{
	return ss->model;
}

/* PID's interpreter as the stack service knows it, and where its GIL lies. */
static void find_python(struct snap_run *r)
{
	struct snap *s = r->out;
	const char *unread = stack_svc__python_unread(r->svc, s->pid);
	__u32 key = s->pid;

	snprintf(s->python_unread, sizeof(s->python_unread), "%s", unread ? unread : "");
	s->python_minor = stack_svc__python_minor(r->svc, s->pid);
	if (s->python_minor && bpf_map_lookup_elem(r->ctx->py_procs_fd, &key, &r->cfg))
		s->python_minor = 0;
	/* struct _gil_runtime_state: locked at 16, its condition variables and mutexes up to 208 */
	if (s->python_minor && r->cfg.locked >= 16) {
		s->gil = r->cfg.locked - 16;
		s->gil_end = s->gil + 208;
	}
}

/*
 * A stack of the process cut where a frame pointer could not be followed: another process may
 * have had that file's table built already, and this one's mappings of it were registered as
 * its stacks were named (stack_unwind.h): read again, it may go further.
 */
static int cut_by_fp(const struct snap_run *r)
{
	for (__u32 i = 0; r->ss->model && i < r->out->n; i++) {
		const struct trace_stack *st =
			trace_model__stack(r->ss->model, r->out->threads[i].stack_id);

		for (__u16 k = 0; st && k < st->nframes; k++)
			if (st->frames[k].kind == BS_FRAME_CUT &&
			    st->frames[k].line == BS_CUT_NO_FP)
				return 1;
	}
	return 0;
}

static void stop_run(struct snap_run *r)
{
	for (__u32 i = 0; r->raws && i < r->out->n; i++)
		stop_sampling(&r->raws[i]);
	if (r->ss)
		r->ss->run = NULL;
	free(r->raws);
	free(r->view);
}

/* Each thread's stack, as the rounds read them within WAIT_NS; how many have none. */
static int read_all(struct snap_run *r, __u64 wait_ns)
{
	struct snap *out = r->out;
	__u64 start = mono_now_ns();
	int left = 1;

	/* The wait is for the threads, from the first look: not the setup's time. */
	if (!out->read_at)
		out->read_at = start;
	while (left > 0) {
		left = round_once(r);
		if (out->rounds == 1 && left >= 0)
			mark_gil(r);
		if (left > 0 && mono_now_ns() - start >= wait_ns)
			break;
		if (left > 0)
			ring_buffer__poll(r->ss->rb, ROUND_MS);
	}
	ring_buffer__consume(r->ss->rb);
	out->read_ns += mono_now_ns() - start;
	return left;
}

int snap_session__take(struct snap_session *ss, pid_t pid, __u64 wait_ns, struct snap *out)
{
	struct unwind_load_usage before, after;
	__u64 t0 = mono_now_ns();
	struct snap_run r = { .out = out,
			      .ss = ss,
			      .skel = ss->skel,
			      .ctx = ss->ctx,
			      .svc = ss->svc,
			      .mem = ss->mem };
	pid_t tgid = proc_meta__tgid(pid);
	int err = 0, left;

	memset(out, 0, sizeof(*out));
	out->model = ss->model;
	if (tgid <= 0 || !proc_meta__alive(tgid))
		return fail(out, -ESRCH, "no such process");
	out->pid = tgid;
	read_program(out);
	read_env_ranks(out);
	out->threads = calloc(SNAP_MAX_THREADS, sizeof(*out->threads));
	r.raws = calloc(SNAP_MAX_THREADS, sizeof(*r.raws));
	r.view = calloc(SNAP_MAX_THREADS, sizeof(*r.view));
	if (!out->threads || !r.raws || !r.view) {
		err = fail(out, -ENOMEM, "out of memory");
		goto out;
	}
	ss->skel->bss->snap_pid = tgid;
	ss->run = &r;
	find_python(&r);
	/*
	 * Read, named: the tables of the files a cut stack went through are built as it is
	 * named (stack_unwind.h), and the threads are read again with them, until no new
	 * file comes up. Every file's table at once would cost more than the dump (a torch
	 * job maps 300 files, libtorch_cpu's table alone is 17 MB). A recording builds its
	 * tables off its loop: its snapshot reads once, with the tables it has.
	 */
	for (int pass = 0;; pass++) {
		stack_svc__unwind_usage(r.svc, &before);
		left = read_all(&r, wait_ns);
		if (left < 0 || !proc_meta__alive(tgid)) {
			err = fail(out, -ESRCH, "the process exited during the dump");
			goto out;
		}
		for (__u32 i = 0; i < out->n; i++)
			if (r.raws[i].have != 1 && !out->threads[i].error)
				out->threads[i].error =
					r.raws[i].sampler
						? "running, and no sample of it came in time"
						: "it kept running while its memory was read";
		name_all(&r);
		stack_svc__unwind_usage(r.svc, &after);
		if (pass + 1 >= UNWIND_PASSES || !r.ctx->unwind_sync ||
		    (after.files + after.failed == before.files + before.failed &&
		     (pass || !cut_by_fp(&r))))
			break;
		for (__u32 i = 0; i < out->n; i++)
			r.raws[i].have = 0;
	}
	out->took_ns = mono_now_ns() - t0;
out:
	stop_run(&r);
	return err;
}

int snap__take(pid_t pid, __u64 wait_ns, struct snap *out)
{
	const char *why;
	struct snap_session *ss;
	int err;

	ss = snap_session__new(NULL, NULL, &pid, 1, &err, &why);
	if (!ss) {
		memset(out, 0, sizeof(*out));
		return fail(out, err, why);
	}
	err = snap_session__take(ss, pid, wait_ns, out);
	/* The model names this snap's stacks: it goes with the snap. */
	out->own_model = ss->model;
	ss->model = NULL;
	snap_session__free(ss);
	return err;
}

#define NR_FUTEX 202 /* x86-64 */

int snap__waits_for_gil(const struct snap *s, const struct snap_thread *th)
{
	const struct snap_task *t = &th->task;

	return !t->on_cpu && !th->sampled && t->state && t->syscall == NR_FUTEX &&
	       t->arg0 >= s->gil && t->arg0 < s->gil_end;
}

__u32 snap__flags(const struct snap *s, const struct snap_thread *th)
{
	const struct snap_task *t = &th->task;

	return (t->on_cpu || th->sampled ? BS_SNAP_RUNNING : 0) |
	       (th->sampled ? BS_SNAP_SAMPLED : 0) | (th->in_kernel ? BS_SNAP_IN_KERNEL : 0) |
	       (th->gil ? BS_SNAP_GIL : 0) | (t->exiting ? BS_SNAP_EXITING : 0) |
	       (snap__waits_for_gil(s, th) ? BS_SNAP_GIL_WAIT : 0) |
	       (t->queue_stale ? BS_SNAP_CLOCK_STALE : 0);
}

const char *snap__state(const struct snap *s, const struct snap_thread *th, char *buf, size_t len)
{
	return thread_state__text(th->task.state, (__s32)th->task.syscall, snap__flags(s, th), buf,
				  len);
}

void snap__free(struct snap *s)
{
	trace_model__free(s->own_model);
	free(s->threads);
	memset(s, 0, sizeof(*s));
}
