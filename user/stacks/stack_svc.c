// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The recording's stack service (stack_svc.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "family.h"
#include "gil_python.h"
#include "kernel_features.h"
#include "mono_clock.h"
#include "native_frames.h"
#include "py_code_free.h"
#include "py_find.h"
#include "py_stack.h"
#include "record_ctx.h"
#include "stack_intern.h"
#include "stack_svc.h"
#include "stack_unwind.h"
#include "unwind_load.h"
#include "hmap.h"
#include "thread_names.h"
#include "uprobe_mgr.h"
#include "msg.h"

#define PY_RECHECK_NS	20000000ull    /* a python still starting is looked at again after this */
#define NOPY_RECHECK_NS 1000000000ull  /* a process without python yet, while it is new */
#define NOPY_NEW_NS	10000000000ull /* how long a process is new */

/* What the service knows of a process's Python (py_procs holds its BPF side). */
struct py_proc {
	__u64 first_ns; /* first looked at (since its exec) */
	__u64 next_ns;	/* when to look again (0: at the next stack) */
	__u64 unread;	/* its frames are not read: the key of the words why in `told` */
	__u32 minor;	/* 3.minor when its frames are read, else 0 */
	__u16 final;	/* decided: not inspected again until an exec or a new mapping */
	__u16 pending;	/* an interpreter not ready yet: stack_svc__poll looks again */
};

struct stack_svc {
	struct hmap *told;	/* (file, reason) -> its words (char *) once said: said once */
	struct hmap *slots;	/* (addr, pid + gen) -> return_slot() + 2 */
	struct hmap *slot_gens; /* pid -> its exec/mapping generation, for slots' keys */
	struct stack_intern *intern;
	struct uprobe_mgr *mgr;		/* discovery and symbols of every traced process's code */
	int mgr_closed;			/* stack_svc__uprobes_closed: the recording stops */
	struct py_find *finder;		/* which processes are CPython, and where their GIL is */
	struct py_stack *py;		/* names Python frames */
	struct hmap *procs;		/* pid -> struct py_proc */
	int py_procs_fd;		/* the BPF map every stack reader shares */
	struct py_code_free *code_free; /* NULL: BPF reads every code object at every stack */
	__u32 code_gen;			/* registrations so far (bs_py_cfg.code_gen) */
	__u32 max_depth;		/* the kernel's unwinding limit (perf_event_max_stack) */
	struct thread_names *names;	/* the Python processes' thread names */
	struct stack_unwind *unw;	/* unwind tables (NULL: frame pointers only) */
	int unw_eager; /* every file's table before its first stack (a recording, not snap.c) */
	/*
	 * Launch mode holds a process at its new code until its tables are in: only where the
	 * recording asked for stacks (--stacks, -t naming the CPU samples). The samples taken by
	 * default need no whole stack in a library's first milliseconds (a stack cut there says
	 * so), and a launch must not wait on every library's table for them.
	 */
	int unw_hold;
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

void stack_svc__uprobes_closed(struct stack_svc *s)
{
	if (s)
		s->mgr_closed = 1;
}

void stack_svc__free(struct stack_svc *s)
{
	char **text;

	if (!s)
		return;
	stack_intern__free(s->intern);
	py_find__free(s->finder);
	py_stack__free(s->py);
	py_code_free__free(s->code_free);
	thread_names__free(s->names);
	stack_unwind__free(s->unw);
	hmap__free(s->procs);
	for (size_t it = 0; s->told && (text = hmap__next(s->told, &it, NULL));)
		free(*text);
	hmap__free(s->told);
	hmap__free(s->slots);
	hmap__free(s->slot_gens);
	free(s);
}

/* Whether O asked for stacks: an event family's (--stacks), or the CPU samples by name. */
static int asked_stacks(const struct record_opts *o)
{
	for_each_family(it) {
		if (!(o->families & (1ull << it.i)))
			continue;
		if (o->stack_ns[it.i] != RECORD_STACKS_OFF ||
		    (family__samples(it.f) && (o->families_named & (1ull << it.i))))
			return 1;
	}
	return 0;
}

struct stack_svc *stack_svc__new(struct record_ctx *ctx, struct uprobe_mgr *mgr, int *err)
{
	struct stack_svc *s = calloc(1, sizeof(*s));

	*err = 0;
	if (!s) {
		*err = -ENOMEM;
		return NULL;
	}
	s->max_depth = unwind_limit();
	s->py_procs_fd = ctx->py_procs_fd;
	s->intern = stack_intern__new();
	s->py = py_stack__new();
	s->procs = hmap__new(sizeof(struct py_proc));
	s->told = hmap__new(sizeof(char *));
	s->slots = hmap__new(sizeof(__s8));
	s->slot_gens = hmap__new(sizeof(__u32));
	s->names = thread_names__new();
	if (!s->intern || !s->py || !s->procs || !s->told || !s->slots || !s->slot_gens ||
	    !s->names)
		*err = -ENOMEM;
	s->mgr = mgr;
	if (!*err && !mgr)
		*err = -EINVAL; /* it names native frames from the manager's files */
	if (!*err)
		s->finder = py_find__new(s->mgr, err);
	if (*err) {
		stack_svc__free(s);
		return NULL;
	}
	/*
	 * Without it stacks cost more, not less right: say so and go on. Without the shared
	 * py_codes map (`bpfsight stacks`: one stack per thread) BPF keeps no identities.
	 */
	if (ctx->py_codes_fd >= 0) {
		s->code_free = py_code_free__new(ctx, err);
		if (!s->code_free)
			pr_warn("code objects' dealloc probe not loaded (%s): every "
				"Python stack reads its code objects again\n",
				strerror(-*err));
	}
	*err = 0;
	/* A recording without stacks made the one-row map: no tables, nothing to say. */
	if (ctx->unw_rows_fd >= 0 && ctx->unw_procs_fd >= 0 && kfeature__has(KF_UNWIND_TABLES) &&
	    unwind_load__has_tables(ctx->unw_rows_fd)) {
		s->unw = stack_unwind__new(s->mgr, ctx->unw_rows_fd, ctx->unw_procs_fd,
					   !ctx->unwind_sync, err);
		s->unw_eager = !ctx->unwind_sync;
		s->unw_hold = asked_stacks(ctx->opts);
		if (!s->unw)
			pr_warn("unwind tables not loaded (%s): native stacks by frame pointers "
				"only\n",
				strerror(-*err));
	}
	*err = 0;
	return s;
}

/*
 * A CPython whose frames are not read (a version or build whose layout cannot be read): said
 * on stderr once per interpreter file and reason, and for each such process a PY_UNREAD
 * record (`info`, the verdict) and stack_svc__python_unread (`bpfsight stacks`): its stacks
 * have native frames only, never in silence. WHY says what is missing.
 */
static void say_unread(struct record_ctx *ctx, struct stack_svc *s, struct py_proc *p, pid_t pid,
		       const struct gil_py *py, const char *why)
{
	__u64 h = 1469598103934665603ull;
	struct bs_py_unread r;
	char **text, buf[512];

	for (const char *c = py->object; *c; c++)
		h = (h ^ (__u8)*c) * 1099511628211ull;
	for (const char *c = why; *c; c++)
		h = (h ^ (__u8)*c) * 1099511628211ull;
	h |= 1; /* never 0: p->unread's "none" */
	text = hmap__get(s->told, (struct hkey){ h, 0 }, 1);
	if (!text)
		return;
	if (!*text) {
		if (py->version >> 24 == 3)
			snprintf(buf, sizeof(buf),
				 "CPython %u.%u%s: its Python frames, GIL holder and thread names "
				 "are not read: %s",
				 py->version >> 24, py->version >> 16 & 0xff,
				 py->free_threaded ? " (free-threaded)" : "", why);
		else
			snprintf(buf, sizeof(buf),
				 "CPython: its Python frames, GIL holder and thread names are not "
				 "read: %s",
				 why);
		*text = strdup(buf);
		if (!*text)
			return;
		pr_warn("pid %d (%s): %s\n", pid, py->object, *text);
	}
	p->unread = h;
	record_ctx__hdr(&r.h, BS_REC_PY_UNREAD, sizeof(r), pid, pid, mono_now_ns());
	r.py_version = py->version;
	r.flags = py->free_threaded ? BS_PY_UNREAD_FREE_THREADED : 0;
	r.object_id = record_ctx__intern(ctx, py->object);
	r.why_id = record_ctx__intern(ctx, why);
	record_ctx__write(ctx, &r);
}

/*
 * Is PID a CPython whose frames BPF can read? Looked at on its first stack, again while its
 * interpreter starts, and after new code is mapped; a yes goes into py_procs. The stacks
 * before that have native frames only.
 */
static struct py_proc *python_of(struct record_ctx *ctx, struct stack_svc *s, pid_t pid)
{
	struct py_proc *p = hmap__get(s->procs, (struct hkey){ (__u64)pid, 0 }, 1);
	struct gil_py *py = &s->scratch;
	struct bs_py_cfg cfg;
	__u64 now = mono_now_ns();
	__u32 key = pid;

	if (!p || p->final || now < p->next_ns)
		return p;
	if (!p->first_ns)
		p->first_ns = now;
	p->next_ns = now + PY_RECHECK_NS;
	p->pending = 0;
	/* The manager is closed (the recording stops, the last records drain): no more looks. */
	if (s->mgr_closed || py_find__inspect(s->finder, pid, py)) {
		p->final = 1;
		return p;
	}
	if (py->free_threaded) {
		/* Selected by the flag its _Py_DebugOffsets (or its file's name) carry. */
		p->final = 1;
		say_unread(ctx, s, p, pid, py, "free-threaded builds are not supported yet");
		return p;
	}
	if (py->status == GIL_PY_UNSUPPORTED) {
		p->final = 1;
		say_unread(ctx, s, p, pid, py, py->note);
		return p;
	}
	if (py->status == GIL_PY_NOT_PYTHON) {
		/* Right after an exec the loader has not mapped libpython yet: look again. */
		p->next_ns = now + NOPY_RECHECK_NS;
		p->final = now - p->first_ns >= NOPY_NEW_NS;
		return p;
	}
	if (py->status == GIL_PY_READY && py->verified && !py->holder_known &&
	    now - p->first_ns >= NOPY_NEW_NS) {
		/* Its GIL was found, its threads never were: a layout this reading gets wrong. */
		p->final = 1;
		say_unread(ctx, s, p, pid, py,
			   "its thread states do not name its threads (thread ids not found)");
		return p;
	}
	if (py->status != GIL_PY_READY || !py->holder_known || !py->verified) {
		p->pending = 1; /* starting: not yet */
		return p;
	}
	p->final = 1;
	if (py_stack__cfg(s->py, pid, py, &cfg)) {
		say_unread(ctx, s, p, pid, py, "no layout of its frames is known");
		return p;
	}
	cfg.code_gen = ++s->code_gen;
	cfg.code_cache = s->code_free && !py_code_free__watch(s->code_free, pid, py->code_type);
	if (bpf_map_update_elem(s->py_procs_fd, &key, &cfg, BPF_ANY))
		return p;
	p->minor = py->version >> 16 & 0xff;
	thread_names__add(s->names, pid, py);
	return p;
}

/* The Python frames BPF read, named, innermost first, into OUT; how many. */
static __u32 name_python(struct record_ctx *ctx, struct stack_svc *s, pid_t pid, __u32 minor,
			 const struct bs_py_frame *f, __u32 n, struct bs_frame *out, __u32 *entry)
{
	struct py_frame_name nm;

	for (__u32 i = 0; i < n; i++) {
		entry[i] = !!(f[i].file & BS_PY_FRAME_ENTRY);
		if (py_stack__name(s->py, pid, minor, &f[i], &nm)) {
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

/*
 * One stack of native frames N[0..nn) and Python frames P[0..np), both innermost first:
 * each native frame of the eval loop (_PyEval_EvalFrameDefault) stands for the Python
 * frames it ran, which replace it (py-spy's --native); Python frames without an eval-loop
 * frame to stand in for (a native stack cut short, a stripped interpreter) follow the
 * native ones. Where all would not fit in a stack, native frames are left out for the
 * Python frames. Returns the frames in OUT.
 */
static __u32 merge(struct record_ctx *ctx, const struct bs_frame *nf, __u32 nn,
		   const struct bs_frame *pf, const __u32 *entry, __u32 np, struct bs_frame *out)
{
	__u32 eval_id = record_ctx__intern(ctx, "_PyEval_EvalFrameDefault"), k = 0, j = 0;

	for (__u32 i = 0; i < nn && k < BS_STACK_MAX_FRAMES; i++) {
		/* Python frames before native ones: a deep stack (whole through unwind tables)
		 * leaves out its outer native frames, not the Python frames that have room. */
		if (np - j >= BS_STACK_MAX_FRAMES - k)
			break;
		if (nf[i].kind == BS_FRAME_CUT) {
			out[k++] = nf[i]; /* native frames stop here; Python's go on */
			break;
		}
		if (nf[i].kind != BS_FRAME_NATIVE || nf[i].func_id != eval_id || j >= np) {
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

/*
 * Where the return address of the function at ADDR lies among the words on top of its frame
 * (native_frames__return_slot), kept per process and address: the frame's shape at an
 * instruction is the code's, so each is decoded once. -1: none.
 */
static int return_slot(struct stack_svc *s, pid_t pid, __u64 addr, int is_return, const __u64 *top,
		       int ntop)
{
	__u32 *gen = hmap__get(s->slot_gens, (struct hkey){ (__u64)pid, 0 }, 0);
	struct hkey key = { addr | (__u64) !!is_return << 63,
			    (__u64)(__u32)pid | (__u64)(gen ? *gen : 0) << 32 };
	__s8 *slot = hmap__get(s->slots, key, 1);

	if (!slot)
		return -1;
	if (!*slot)
		*slot = (__s8)(native_frames__return_slot(s->mgr, pid, addr, is_return, top, ntop) +
			       2);
	return *slot - 2;
}

/*
 * W's N addresses and NPY Python frames into FIXED with the return addresses the walk
 * missed (functions without a frame of their own, innermost first: a libc wrapper and the
 * libc function it called) right after the sampled instruction; the new count of addresses
 * (the outermost dropped at the limit: the walk was cut there anyway), or 0 when none was.
 */
static __u32 leaf_fix(struct stack_svc *s, pid_t pid, const __u64 *w, __u32 n, __u32 npy,
		      const __u64 *top, __u64 *fixed)
{
	__u64 ins[BS_STACK_TOP_WORDS], at = w[0], next = n > 1 ? w[1] : 0;
	__u32 k = 0, keep, base = 0;
	int i, is_return = 0;

	while (k < BS_STACK_TOP_WORDS && base < BS_STACK_TOP_WORDS) {
		i = return_slot(s, pid, at, is_return, top + base, BS_STACK_TOP_WORDS - base);
		/* None, or the walk has it already (the function made its frame after all). */
		if (i < 0 || top[base + i] == next)
			break;
		at = ins[k++] = top[base + i];
		is_return = 1;
		base += i + 1;
	}
	if (!k)
		return 0;
	keep = n + k <= BS_STACK_MAX_FRAMES ? n : BS_STACK_MAX_FRAMES - k;
	fixed[0] = w[0];
	memcpy(fixed + 1, ins, k * 8);
	memcpy(fixed + 1 + k, w + 1, (keep - 1) * 8);
	memcpy(fixed + keep + k, w + n, (size_t)npy * sizeof(struct bs_py_frame));
	return keep + k;
}

__u32 stack_svc__stack(struct record_ctx *ctx, struct stack_svc *s, pid_t pid, __u32 tid, __u64 ts,
		       const __u64 *w, __u32 n, __u32 npy, const __u64 *top, __u32 raw_flags)
{
	struct bs_frame nf[BS_STACK_MAX_FRAMES + 1], pf[BS_PY_MAX_FRAMES],
		all[BS_STACK_MAX_FRAMES + 1];
	__u64 fixed[BS_STACK_MAX_FRAMES + 4 * BS_PY_MAX_FRAMES];
	__u32 nn, np = 0, k, entry[BS_PY_MAX_FRAMES], tag, flags, id, nfix;
	struct py_proc *p = python_of(ctx, s, pid);
	int capped = n >= s->max_depth;
	__u32 end = (raw_flags & BS_STACK_END_MASK) >> BS_STACK_END_SHIFT;

	if (n > BS_STACK_MAX_FRAMES)
		n = BS_STACK_MAX_FRAMES;
	if (npy > BS_PY_MAX_FRAMES)
		npy = BS_PY_MAX_FRAMES;
	if (!n && !npy)
		return 0;
	/* A first frame unwound by its table skipped no caller. */
	if (top && n && !s->mgr_closed && !(raw_flags & BS_STACK_UNW_FIRST) &&
	    (nfix = leaf_fix(s, pid, w, n, npy, top, fixed))) {
		w = fixed;
		n = nfix;
	}
	tag = capped | end << 1 | (npy && p ? p->minor << 5 : 0);
	id = stack_intern__cached(s->intern, pid, w, n + 4 * npy, tag);
	if (id)
		return id;
	/* The manager is closed before the families detach: the last stacks go unnamed. */
	nn = stack_intern__symbolize(s->intern, ctx, s->mgr_closed ? NULL : s->mgr, pid, w, n,
				     capped, end, nf);
	/*
	 * Cut in code without frame pointers: the tables of the stack's files not tried yet,
	 * for the next stacks (none once the recording stops: a build then would only take CPU
	 * from the last stacks' names, which have a second each to read their files).
	 */
	if (s->unw && !s->mgr_closed && nn && nf[nn - 1].kind == BS_FRAME_CUT &&
	    nf[nn - 1].line == BS_CUT_NO_FP && !record_ctx__must_stop(ctx))
		stack_unwind__cut(s->unw, pid, w, n, s->unw_eager);
	if (npy && p && p->minor)
		np = name_python(ctx, s, pid, p->minor, (const struct bs_py_frame *)(w + n), npy,
				 pf, entry);
	k = merge(ctx, nf, nn, pf, entry, np, all);
	flags = (capped && !(nn && nf[nn - 1].kind == BS_FRAME_CUT)) || npy >= BS_PY_MAX_FRAMES
			? BS_STACK_TRUNCATED
			: 0;
	id = stack_intern__frames(s->intern, ctx, all, k, flags, pid, tid, ts);
	stack_intern__cache(s->intern, pid, w, n + 4 * npy, tag, id);
	return id;
}

/*
 * BS_STACK_OWN: how many of W's N innermost addresses lie in the file of the first (the
 * tracing code the stack was read in: the cupti-shim's callback), to be dropped.
 */
static __u32 own_frames(struct record_ctx *ctx, struct stack_svc *s, pid_t pid, const __u64 *w,
			__u32 n)
{
	struct uprobe_code own, c;
	__u32 k = 1;

	if (!n || s->mgr_closed || uprobe_mgr__code_at(s->mgr, pid, w[0], 1, &own))
		return 0;
	while (k < n && !uprobe_mgr__code_at(s->mgr, pid, w[k], 0, &c) && !strcmp(c.path, own.path))
		k++;
	return k;
}

void stack_svc__consume(struct record_ctx *ctx, struct stack_svc *s, const struct bs_hdr *rec)
{
	const struct bs_stack_raw *r = (const void *)rec;
	const __u64 *w = (const void *)(r + 1), *top;
	struct bs_stack_ref ref;
	__u32 n, npy;

	if (rec->size < sizeof(*r))
		return;
	stack_svc__raw_counts(rec->size - sizeof(*r), r->nips, r->npy, &n, &npy);
	top = stack_svc__raw_top(r->flags, &w, &n);
	if (r->flags & BS_STACK_OWN) {
		__u32 own = own_frames(ctx, s, rec->pid, w, n);

		/* The Python frames follow the addresses: they move down with them. */
		w += own;
		n -= own;
	}
	record_ctx__hdr(&ref.h, BS_REC_STACK_REF, sizeof(ref), rec->pid, rec->tid, rec->ts);
	ref.h.cpu = rec->cpu;
	ref.stack_id =
		stack_svc__stack(ctx, s, rec->pid, rec->tid, rec->ts, w, n, npy, top, r->flags);
	ref.event_type = r->event_type;
	ref.flags = r->flags & BS_CPU_GIL;
	if (ref.stack_id)
		record_ctx__write(ctx, &ref);
}

#define HOLD_STEP_NS 100000000ull /* a hold looks for a stop signal this often */

/*
 * Until PID's tables are loaded, up to END (mono_clock.h) or a stop (Ctrl-C, -d's end: a
 * recording never waits on a table it will not use); said when it ends first, -v says how
 * long it took. STARTING: the recording waits to go live (-p); else the process waits,
 * held at its new code (launch mode).
 */
static void hold(struct record_ctx *ctx, struct stack_svc *s, pid_t pid, __u64 end, int starting)
{
	__u64 t0 = mono_now_ns(), now = t0;
	size_t left;

	do {
		left = stack_unwind__hold(s->unw, pid,
					  end - now > HOLD_STEP_NS ? now + HOLD_STEP_NS : end);
		now = mono_now_ns();
	} while (left && now < end && !record_ctx__must_stop(ctx));
	if (left)
		pr_warn("unwind tables: %zu mapping%s of pid %d still wait%s for a table after "
			"%.1f s%s: %s, its first stacks through them may stop there\n",
			left, left == 1 ? "" : "s", pid, left == 1 ? "s" : "", (now - t0) / 1e9,
			now < end ? " (the recording stops)" : "",
			starting ? "the recording goes live" : "it goes on");
	if (ctx->opts->verbose)
		pr_info("unwind tables: pid %d %s %.1f ms until its files' tables were loaded "
			"(%zu mapping%s still without)\n",
			pid, starting ? "waited for" : "held", (mono_now_ns() - t0) / 1e6, left,
			left == 1 ? "" : "s");
}

void stack_svc__observe(struct record_ctx *ctx, struct stack_svc *s, const struct bs_hdr *rec)
{
	struct py_proc *p;
	__u32 key = rec->pid;

	thread_names__observe(s->names, rec);
	/* A fork told to the uprobe manager (the FORK record copies the tables), an exclusion. */
	if (rec->type == BS_REC_MAP_EXEC && rec->size >= sizeof(struct bs_map_exec) &&
	    (((const struct bs_map_exec *)rec)->flags & BS_MAP_EXEC_NO_CODE))
		return;
	if (s->unw && !s->mgr_closed && s->unw_eager) {
		stack_unwind__observe(s->unw, rec);
		/*
		 * Launch mode: BPF stopped the process at its new code (its exec, its libraries,
		 * a dlopen) and the uprobe manager lets it go once this returns: its tables are
		 * loaded first, so its first stacks through them are whole.
		 */
		if (rec->type == BS_REC_MAP_EXEC && rec->size >= sizeof(struct bs_map_exec) &&
		    (((const struct bs_map_exec *)rec)->flags & BS_MAP_EXEC_STOPPED) && s->unw_hold)
			hold(ctx, s, rec->pid, mono_now_ns() + STACK_UNWIND_HOLD_NS, 0);
	}
	if (rec->type == BS_REC_EXEC || rec->type == BS_REC_MAP_EXEC ||
	    (rec->type == BS_REC_EXIT && rec->pid == rec->tid)) {
		__u32 *gen = hmap__get(s->slot_gens, (struct hkey){ rec->pid, 0 }, 1);

		stack_intern__forget(s->intern, rec->pid);
		if (gen)
			(*gen)++; /* other code at the same addresses: decoded again */
	}
	/* New code mapped (libpython dlopen()ed, or loaded at start): look again. */
	if (rec->type == BS_REC_MAP_EXEC) {
		p = hmap__get(s->procs, (struct hkey){ rec->pid, 0 }, 0);
		if (p && !p->minor)
			p->final = p->next_ns = 0;
	}
	/* A new program (or the end): whether it is a python is decided again. */
	if (rec->type == BS_REC_EXEC || (rec->type == BS_REC_EXIT && rec->pid == rec->tid)) {
		py_stack__forget(s->py, rec->pid);
		if (rec->type == BS_REC_EXIT)
			py_code_free__forget(s->code_free, rec->pid);
		p = hmap__get(s->procs, (struct hkey){ rec->pid, 0 }, 0);
		if (p)
			*p = (struct py_proc){ 0 };
		bpf_map_delete_elem(s->py_procs_fd, &key);
	}
	/*
	 * Look now, not at the first stack: an event's stack is read by BPF when the event
	 * happens, so a Python process must be in py_procs before its first one. New code and
	 * new threads are when an interpreter appears or becomes ready (launch mode: the
	 * process waits at its exec and link-map changes while this runs).
	 */
	if (rec->type == BS_REC_MAP_EXEC || rec->type == BS_REC_EXEC ||
	    (rec->type == BS_REC_FORK && rec->pid != rec->tid))
		python_of(ctx, s, rec->pid);
}

/* A process running when the recording starts: its Python, its files' tables. */
static void start_one(struct record_ctx *ctx, struct stack_svc *s, pid_t pid)
{
	python_of(ctx, s, pid);
	if (s->unw && s->unw_eager)
		stack_unwind__process(s->unw, pid);
}

void stack_svc__start(struct record_ctx *ctx, struct stack_svc *s)
{
	const struct record_opts *o = ctx->opts;
	struct dirent *d;
	__u64 end;
	DIR *proc;

	for (__u32 i = 0; i < o->npids; i++)
		start_one(ctx, s, o->pids[i]);
	proc = o->system_wide ? opendir("/proc") : NULL;
	while (proc && (d = readdir(proc))) {
		pid_t pid = atoi(d->d_name);

		if (pid > 0 && pid != ctx->self_pid)
			start_one(ctx, s, pid);
	}
	if (proc)
		closedir(proc);
	/*
	 * -p: the recording goes live once its targets' tables are loaded (queued first). -a's
	 * other processes' are built meanwhile and after: a machine's every file is not worth
	 * a start that waits for them.
	 */
	end = mono_now_ns() + STACK_UNWIND_START_NS;
	for (__u32 i = 0; s->unw && s->unw_eager && i < o->npids; i++)
		hold(ctx, s, o->pids[i], end, 1);
}

void stack_svc__poll(struct record_ctx *ctx, struct stack_svc *s)
{
	__u64 now = mono_now_ns();
	struct py_proc *p;
	struct hkey key;
	size_t it = 0;
	pid_t due[64];
	int n = 0;

	/*
	 * Only interpreters still starting: a process without one is looked at again when new
	 * code is mapped (its exec, a dlopen of libpython), not polled. Collected first:
	 * python_of may insert (and move the map's values).
	 */
	while (n < 64 && (p = hmap__next(s->procs, &it, &key)))
		if (p->pending && !p->final && now >= p->next_ns)
			due[n++] = (pid_t)key.a;
	for (int i = 0; i < n; i++)
		python_of(ctx, s, due[i]);
	thread_names__poll(ctx, s->names);
	if (s->unw)
		stack_unwind__poll(s->unw); /* tables built since */
}

__u32 stack_svc__python_minor(struct stack_svc *s, pid_t pid)
{
	const struct py_proc *p = hmap__get(s->procs, (struct hkey){ (__u64)pid, 0 }, 0);

	return p ? p->minor : 0;
}

const char *stack_svc__python_unread(struct stack_svc *s, pid_t pid)
{
	const struct py_proc *p = hmap__get(s->procs, (struct hkey){ (__u64)pid, 0 }, 0);
	char **text = p && p->unread ? hmap__get(s->told, (struct hkey){ p->unread, 0 }, 0) : NULL;

	return text ? *text : NULL;
}

int stack_svc__thread_names(struct stack_svc *s, pid_t pid, struct py_thread_name *out, int max)
{
	return thread_names__read(s->names, pid, out, max);
}

void stack_svc__unwind_usage(struct stack_svc *s, struct unwind_load_usage *out)
{
	memset(out, 0, sizeof(*out));
	if (s && s->unw) {
		stack_unwind__poll(s->unw); /* builds done since the loop last looked */
		stack_unwind__usage(s->unw, out);
	}
}

int stack_svc__unwind_record(struct stack_svc *s, struct bs_unwind_usage *r)
{
	struct unwind_load_usage u;

	stack_svc__unwind_usage(s, &u);
	*r = (struct bs_unwind_usage){
		.files = u.files,
		.failed = u.failed,
		.procs = u.procs,
		.full = u.full,
		.rows = u.rows,
		.cap_rows = u.cap,
		.bytes = u.bytes,
		.cap_bytes = u.cap_bytes,
		.build_ns = u.build_ns,
		.built = u.built,
		.cached = u.cached,
		.refused = u.refused,
		.fp_files = u.fp,
		.cache_ns = u.cache_ns,
	};
	r->h.type = BS_REC_UNWIND_USAGE;
	r->h.size = sizeof(*r);
	return u.files || u.failed || u.fp;
}

void stack_svc__write_unwind_usage(struct record_ctx *ctx, struct stack_svc *s)
{
	struct bs_unwind_usage r;

	if (!stack_svc__unwind_record(s, &r))
		return;
	record_ctx__hdr(&r.h, BS_REC_UNWIND_USAGE, sizeof(r), 0, 0, 0);
	record_ctx__write(ctx, &r);
}

void unwind_usage__text(const struct bs_unwind_usage *r, char *buf, size_t len)
{
	snprintf(buf, len,
		 "%u file%s, %.1f MiB of rows of the %.0f MiB reserved, %u built in %llu ms, %u "
		 "read from the store in %llu ms; %u file%s without one",
		 r->files, r->files == 1 ? "" : "s", r->bytes / 1048576.0, r->cap_bytes / 1048576.0,
		 r->built, (unsigned long long)(r->build_ns / 1000000), r->cached,
		 (unsigned long long)(r->cache_ns / 1000000), r->failed, r->failed == 1 ? "" : "s");
}

struct unwind_load *stack_svc__unwind_load(struct stack_svc *s)
{
	return s->unw ? stack_unwind__load(s->unw) : NULL;
}
