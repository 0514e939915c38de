// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cpu family, record side: a cpu-clock perf event per CPU at --sample-rate runs
 * bpf/cpu.bpf.c; each sample's raw user stack is symbolized and interned here while the
 * process lives (stack_intern.h), and the sample is written with its stack's id.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>
#include "cpu.h"
#include "gil_python.h"
#include "mono_clock.h"
#include "py_find.h"
#include "py_stack.h"
#include "record_ctx.h"
#include "stack_intern.h"
#include "stats_math.h"
#include "uprobe_mgr.h"
#include "cpu.skel.h"

#define PY_RECHECK_NS	100000000ull   /* a python still starting is looked at again after this */
#define NOPY_RECHECK_NS 1000000000ull  /* a process without python yet, while it is new */
#define NOPY_NEW_NS	10000000000ull /* how long a process is new */

/* What the sampler knows of a process's Python (py_procs holds its BPF side). */
struct py_proc {
	__u64 first_ns; /* first looked at (since its exec) */
	__u64 next_ns;	/* when to look again (0: at the next sample) */
	__u32 minor;	/* 3.minor when its frames are read, else 0 */
	__u32 final;	/* decided: not inspected again until an exec or a new mapping */
};

struct cpu_state {
	struct cpu_bpf *skel;
	struct bpf_link **links; /* one per CPU that has a perf event */
	int nlinks;
	struct stack_intern *stacks;
	struct uprobe_mgr *mgr; /* discovery and symbols of every traced process's code */
	__u32 max_depth;	/* the kernel's unwinding limit (perf_event_max_stack) */
	struct py_find *finder; /* which processes are CPython, and where their GIL is */
	struct py_stack *py;
	struct hmap *procs; /* pid -> struct py_proc */
	struct gil_py scratch;
};

/* The kernel stops a user stack at kernel.perf_event_max_stack frames (127 by default). */
static __u32 unwind_limit(void)
{
	unsigned int v = 127;
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_stack", "re");

	if (f) {
		if (fscanf(f, "%u", &v) != 1)
			v = 127;
		fclose(f);
	}
	return v < BS_STACK_MAX_FRAMES ? v : BS_STACK_MAX_FRAMES;
}

static void stop_samplers(struct cpu_state *st)
{
	for (int i = 0; i < st->nlinks; i++)
		bpf_link__destroy(st->links[i]);
	st->nlinks = 0;
}

/* The end: no more samples, and those in the ring are symbolized while the processes' code
 * is still known (the discovery is freed before the families detach). */
static void cpu_stop(struct record_ctx *ctx, void *state)
{
	stop_samplers(state);
	record_ctx__poll(ctx, 0);
}

static void cpu_detach(struct record_ctx *ctx, void *state)
{
	struct cpu_state *st = state;

	if (!st)
		return;
	stop_samplers(st);
	free(st->links);
	cpu_bpf__destroy(st->skel);
	stack_intern__free(st->stacks);
	py_find__free(st->finder);
	py_stack__free(st->py);
	hmap__free(st->procs);
	free(st);
}

/* A software cpu-clock event on every online CPU, all running the sampler. */
static int open_samplers(struct record_ctx *ctx, struct cpu_state *st)
{
	int ncpu = libbpf_num_possible_cpus(), fd, err = 0;
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(a),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.freq = 1,
		.sample_freq = ctx->opts->sample_rate,
	};

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	st->links = calloc(ncpu, sizeof(*st->links));
	if (!st->links)
		return -ENOMEM;
	for (int cpu = 0; cpu < ncpu; cpu++) {
		fd = syscall(__NR_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			if (errno == ENODEV)
				continue; /* a possible CPU that is not online */
			err = -errno;
			fprintf(stderr, "bpfsight record: cpu: perf_event_open on CPU %d: %s\n",
				cpu, strerror(errno));
			return err;
		}
		st->links[st->nlinks] =
			bpf_program__attach_perf_event(st->skel->progs.cpu_sample, fd);
		if (!st->links[st->nlinks]) {
			err = -errno;
			close(fd);
			return err;
		}
		st->nlinks++;
	}
	return st->nlinks ? 0 : -ENODEV;
}

static int cpu_attach(struct record_ctx *ctx, void **state)
{
	struct cpu_state *st = calloc(1, sizeof(*st));
	int err;

	if (!st)
		return -ENOMEM;
	st->max_depth = unwind_limit();
	st->stacks = stack_intern__new();
	st->py = py_stack__new();
	st->procs = hmap__new(sizeof(struct py_proc));
	st->skel = cpu_bpf__open();
	if (!st->stacks || !st->skel || !st->py || !st->procs) {
		cpu_detach(ctx, st);
		return -ENOMEM;
	}
	RECORD_CTX_SET_COMMON_RODATA(st->skel, ctx);
	err = record_ctx__prepare(ctx, st->skel->obj);
	if (!err)
		err = cpu_bpf__load(st->skel);
	if (!err)
		st->mgr = uprobe_mgr__get(ctx, &err);
	if (!err)
		st->finder = py_find__new(st->mgr, &err);
	if (!err)
		err = open_samplers(ctx, st);
	if (err) {
		cpu_detach(ctx, st);
		return err;
	}
	*state = st;
	return 0;
}

/*
 * Is PID a CPython whose frames BPF can read? Looked at on its first sample, again while its
 * interpreter starts, and after an exec; a yes goes into py_procs. The samples before that
 * have native frames only.
 */
static struct py_proc *python_of(struct record_ctx *ctx, struct cpu_state *st, pid_t pid)
{
	struct py_proc *p = hmap__get(st->procs, (struct hkey){ (__u64)pid, 0 }, 1);
	struct gil_py *py = &st->scratch;
	struct bs_py_cfg cfg;
	__u64 now = mono_now_ns();
	__u32 key = pid;

	if (!p || p->final || now < p->next_ns)
		return p;
	if (!p->first_ns)
		p->first_ns = now;
	p->next_ns = now + PY_RECHECK_NS;
	if (!ctx->uprobes || py_find__inspect(st->finder, pid, py) ||
	    py->status == GIL_PY_UNSUPPORTED || py->status == GIL_PY_NO_GIL) {
		p->final = 1;
		return p;
	}
	if (py->status == GIL_PY_NOT_PYTHON) {
		/* Right after an exec the loader has not mapped libpython yet: look again. */
		p->next_ns = now + NOPY_RECHECK_NS;
		p->final = now - p->first_ns >= NOPY_NEW_NS;
		return p;
	}
	if (py->status != GIL_PY_READY || !py->holder_known || !py->verified)
		return p; /* starting: not yet */
	p->final = 1;
	if (py_stack__cfg(py, &cfg) ||
	    bpf_map_update_elem(bpf_map__fd(st->skel->maps.py_procs), &key, &cfg, BPF_ANY))
		return p;
	p->minor = py->version >> 16 & 0xff;
	return p;
}

/* The Python frames of a sample named, innermost first, into OUT; how many. */
static __u32 name_python(struct record_ctx *ctx, struct cpu_state *st, pid_t pid, __u32 minor,
			 const struct bs_py_frame *f, __u32 n, struct bs_frame *out, __u32 *entry)
{
	struct py_frame_name nm;

	for (__u32 i = 0; i < n; i++) {
		entry[i] = !!(f[i].file & BS_PY_FRAME_ENTRY);
		if (py_stack__name(st->py, pid, minor, &f[i], &nm)) {
			/* Freed or unreadable since: an honest unknown, never a guess. */
			out[i] = (struct bs_frame){ .kind = BS_FRAME_PYTHON, .addr = f[i].code };
			continue;
		}
		out[i] = (struct bs_frame){ .kind = BS_FRAME_PYTHON,
					    .func_id = record_ctx__intern(ctx, nm.func),
					    .file_id = record_ctx__intern(ctx, nm.file),
					    .line = nm.line };
	}
	return n;
}

static int is_eval_loop(struct record_ctx *ctx, const struct bs_frame *f, __u32 eval_id)
{
	return f->kind == BS_FRAME_NATIVE && f->func_id && f->func_id == eval_id;
}

/*
 * One stack of native frames N[0..nn) and Python frames P[0..np), both innermost first:
 * each native frame of the eval loop (_PyEval_EvalFrameDefault) stands for the Python
 * frames it ran, which replace it (py-spy's --native); Python frames without an eval-loop
 * frame to stand in for (a native stack cut short, a stripped interpreter) follow the
 * native ones. Returns the frames in OUT.
 */
static __u32 merge(struct record_ctx *ctx, const struct bs_frame *nf, __u32 nn,
		   const struct bs_frame *pf, const __u32 *entry, __u32 np, struct bs_frame *out)
{
	__u32 eval_id = record_ctx__intern(ctx, "_PyEval_EvalFrameDefault"), k = 0, j = 0;

	for (__u32 i = 0; i < nn && k < BS_STACK_MAX_FRAMES; i++) {
		if (nf[i].kind == BS_FRAME_CUT) {
			out[k++] = nf[i]; /* native frames stop here; Python's go on */
			break;
		}
		if (!is_eval_loop(ctx, &nf[i], eval_id) || j >= np) {
			out[k++] = nf[i];
			continue;
		}
		/* One eval-loop call: its frames up to the one it was entered with. */
		while (j < np && k < BS_STACK_MAX_FRAMES) {
			out[k++] = pf[j];
			if (entry[j++])
				break;
		}
	}
	while (j < np && k < BS_STACK_MAX_FRAMES + 1)
		out[k++] = pf[j++];
	return k;
}

static int cpu_consume(struct record_ctx *ctx, void *state, const struct bs_hdr *rec)
{
	const struct bs_cpu_sample_raw *r = (const void *)rec;
	struct bs_frame nf[BS_STACK_MAX_FRAMES + 1], pf[BS_PY_MAX_FRAMES],
		all[BS_STACK_MAX_FRAMES + 1];
	__u32 n, npy, nn, np = 0, k, entry[BS_PY_MAX_FRAMES], tag, flags;
	struct cpu_state *st = state;
	const __u64 *w = (const __u64 *)(r + 1);
	struct bs_cpu_sample s;
	struct py_proc *p;

	if (rec->type != BS_REC_CPU_SAMPLE_RAW)
		return 0;
	if (rec->size < sizeof(*r))
		return 1; /* not from our program: nothing to keep */
	n = r->nips;
	if (n > (rec->size - sizeof(*r)) / 8)
		n = (rec->size - sizeof(*r)) / 8;
	npy = r->npy;
	if (npy > (rec->size - sizeof(*r) - n * 8) / sizeof(struct bs_py_frame))
		npy = (rec->size - sizeof(*r) - n * 8) / sizeof(struct bs_py_frame);
	if (npy > BS_PY_MAX_FRAMES)
		npy = BS_PY_MAX_FRAMES;
	p = python_of(ctx, st, rec->pid);
	record_ctx__hdr(&s.h, BS_REC_CPU_SAMPLE, sizeof(s), rec->pid, rec->tid, rec->ts);
	s.h.cpu = rec->cpu;
	s.flags = r->flags & (BS_CPU_KERNEL | BS_CPU_GIL | BS_CPU_PYTHON);
	tag = (n >= st->max_depth) | (npy && p ? p->minor << 1 : 0);
	s.stack_id = stack_intern__cached(st->stacks, rec->pid, w, n + 4 * npy, tag);
	if (!s.stack_id && n + npy) {
		nn = stack_intern__symbolize(st->stacks, ctx, st->mgr, rec->pid, w, n,
					     n >= st->max_depth, nf);
		if (npy && p && p->minor)
			np = name_python(ctx, st, rec->pid, p->minor,
					 (const struct bs_py_frame *)(w + n), npy, pf, entry);
		k = merge(ctx, nf, nn, pf, entry, np, all);
		flags = (n >= st->max_depth && !(nn && nf[nn - 1].kind == BS_FRAME_CUT)) ||
					npy >= BS_PY_MAX_FRAMES
				? BS_STACK_TRUNCATED
				: 0;
		s.stack_id = stack_intern__frames(st->stacks, ctx, all, k, flags, rec->pid,
						  rec->tid, rec->ts);
		stack_intern__cache(st->stacks, rec->pid, w, n + 4 * npy, tag, s.stack_id);
	}
	record_ctx__write(ctx, &s);
	return 1;
}

/* A process's addresses change meaning when it execs or its link map changes. */
static void cpu_observe(struct record_ctx *ctx, void *state, const struct bs_hdr *rec)
{
	struct cpu_state *st = state;

	struct py_proc *p;
	__u32 key = rec->pid;

	if (rec->type == BS_REC_EXEC || rec->type == BS_REC_MAP_EXEC ||
	    (rec->type == BS_REC_EXIT && rec->pid == rec->tid))
		stack_intern__forget(st->stacks, rec->pid);
	/* New code mapped (libpython dlopen()ed, or loaded at start): look again. */
	if (rec->type == BS_REC_MAP_EXEC) {
		p = hmap__get(st->procs, (struct hkey){ rec->pid, 0 }, 0);
		if (p && !p->minor)
			p->final = p->next_ns = 0;
	}
	/* A new program (or the end): whether it is a python is decided again. */
	if (rec->type == BS_REC_EXEC || (rec->type == BS_REC_EXIT && rec->pid == rec->tid)) {
		py_stack__forget(st->py, rec->pid);
		p = hmap__get(st->procs, (struct hkey){ rec->pid, 0 }, 0);
		if (p)
			*p = (struct py_proc){ 0 };
		bpf_map_delete_elem(bpf_map__fd(st->skel->maps.py_procs), &key);
	}
}

const struct family family_cpu = {
	.name = "cpu",
	.desc = "CPU sampling: on-CPU samples of the traced threads with their stacks",
	.flags = FAMILY_OPT_IN,
	.attach = cpu_attach,
	.detach = cpu_detach,
	.consume = cpu_consume,
	.stop = cpu_stop,
	.observe = cpu_observe,
	.decoders = cpu_decoders,
	.reports = cpu_reports,
};
