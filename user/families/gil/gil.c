// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gil family, record side: finds the python processes among the targets, tells BPF where
 * each one's GIL is (gil_procs), attaches the probes (bpf/gil.bpf.c) and copies the
 * in-kernel totals into the trace.
 *
 * Which process maps which file is the uprobe manager's discovery (uprobe_mgr.h): gil is one
 * of its listeners. Of every ELF file examined it keeps glibc's (the file defining
 * pthread_cond_timedwait) and the interpreters' (defining _PyRuntime), and a look at a
 * process is a scan of its maps by the manager, which names the files it maps and where.
 * What a process's memory says about its GIL is gil_python.c's.
 *
 * Probes go on files, for every process that maps them (pid -1): glibc's condition wait, and
 * in full mode take_gil/drop_gil of each interpreter file. So a process is measured from its
 * first instruction once BPF knows its GIL address, and forked children inherit that address
 * in BPF at fork. The one exception is __lll_lock_wait (the mutex slow path), single-stepped
 * by the kernel: it is attached per python process so that nothing else pays for it.
 *
 * Processes are looked at when recording starts, at exec, at fork, and on the first threads
 * they create (a GIL can only be contended once there are two threads); one that is not
 * python (yet: libpython is mapped by ld.so after exec) is looked at again on each of those
 * and on every poll during NEW_WINDOW_NS after it was first seen.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "elf_syms.h"
#include "gil.h"
#include "gil_python.h"
#include "kernel_features.h"
#include "probe_site.h"
#include "record_ctx.h"
#include "stats_math.h"
#include "uprobe_mgr.h"
#include "uprobe_multi.h"
#include "gil.skel.h"

#define NEW_WINDOW_NS	      5000000000ull /* a new process may still map libpython */
#define RECHECK_GAP_NS	      50000000ull   /* at most one look at a process per 50 ms */
#define MAX_PROBES	      8		    /* take_gil/drop_gil and their clones per file */
#define MUTEX_ATTACH_PER_POLL 4		    /* processes; each attach costs ~0.2 s on a VM */

enum { L_COND, L_COND_RET, L_TAKE, L_TAKE_RET, L_DROP, NLINKS };

/*
 * A file gil reads or probes (the uprobe manager keeps it as gil's pointer): glibc (condition
 * wait, mutex) or an interpreter. Both at once when python and libc are linked statically.
 */
struct gil_file {
	int cond;	/* defines pthread_cond_timedwait */
	__u64 cond_off; /* file offsets of the probe sites */
	__u64 lll_off;	/* 0 = __lll_lock_wait unknown (no symtab or debug file) */
	int python;	/* defines _PyRuntime */
	struct gil_pyfile py;
	__u64 take[MAX_PROBES], drop[MAX_PROBES]; /* full mode: take_gil/drop_gil sites */
	__u32 ntake, ndrop;
	int cond_tried, cond_ok; /* both condition-wait probes attached */
	int full_ok;		 /* take_gil (entry, return) and drop_gil probes attached */
	struct uprobe_links links[NLINKS];
	struct gil_file *next;
};

/* What one look at a process found (through the manager's scan of its maps). */
struct gil_look {
	pid_t pid; /* the process looked at; 0 between looks */
	char exe[PATH_MAX];
	struct gil_file *py, *libc;		       /* the first interpreter and glibc mapped */
	__u64 py_bias;				       /* the interpreter's load bias */
	char libc_path[PATH_MAX + 64];		       /* opens it now */
	char py_shown[PATH_MAX], libc_shown[PATH_MAX]; /* as the maps name them */
};

struct gil_proc {
	pid_t pid;
	int status; /* enum gil_py_status of the last look, -1 = never looked at */
	__u64 first_seen_ns, last_check_ns;
	int configured; /* in gil_procs */
	struct bs_gil_cfg cfg;
	struct uprobe_links mutex[2];
	int mutex_on;	  /* both attached */
	int mutex_wanted; /* attach the mutex probes at the next poll (it takes a while) */
	int mutex_failed; /* and do not try again */
	__u64 lll_off;
	char *libc_path;
	/* The last BS_REC_GIL_PROC written, to write again only on change. */
	int written;
	__u32 w_method, w_flags;
	__u64 w_gil;
	char w_note[256];
};

struct gil_state {
	struct record_ctx *ctx;
	struct gil_bpf *skel;
	int listener; /* gil's id with the manager (ctx->uprobes) */
	struct gil_file *files;
	struct hmap *procs;   /* (pid, 0) -> struct gil_proc * */
	struct hmap *agg_w;   /* (pid << 32 | tid, 0) -> wait_count + hold_count last written */
	struct hmap *blame_w; /* (pid << 32 | waiter, holder) -> count last written */
	struct gil_py py;     /* scratch: big */
	struct gil_look look; /* scratch: big */
	int full;
	int starting; /* recording starts: nothing is being drained yet, attach everything now */
};

static void file_free(struct gil_file *f)
{
	for (int i = 0; i < NLINKS; i++)
		uprobe_links__detach(&f->links[i]);
	free(f);
}

/*
 * PROG at the CNT file offsets OFFS of the file at PATH, for process PID (0: every process
 * that maps it), into L. 0, or -errno once said (a process that ended meanwhile missed
 * nothing: not said).
 */
static int probe(struct record_ctx *ctx, struct uprobe_links *l, const struct bpf_program *prog,
		 int ret, pid_t pid, const char *path, const __u64 *offs, __u32 cnt,
		 const char *what, const char *object)
{
	struct uprobe_multi_opts o = { .pid = pid, .retprobe = ret };
	char msg[PATH_MAX + 128];
	int err = uprobe_links__attach(l, prog, path, offs, cnt, &o);

	if (!err || (pid > 0 && err == -ESRCH))
		return err;
	snprintf(msg, sizeof(msg), "%s %s in %s", ret ? "uretprobe" : "uprobe", what, object);
	record_ctx__attach_failed(ctx, msg, err);
	return err;
}

/* Where to probe function SYM: its cheapest safe site (probe_site.h). */
static __u64 site_of(const struct elf_syms *s, const struct elf_sym *sym)
{
	struct probe_site ps;

	return uprobe_mgr__site(s, sym, &ps) ? sym->file_off : sym->file_off + ps.offset;
}

static int is_fn(const char *name, const char *fn)
{
	size_t n = strlen(fn);

	/* take_gil and its compiler clones: take_gil.constprop.0, .isra.0, .part.0, .lto_priv.0 */
	return !strncmp(name, fn, n) && (name[n] == 0 || name[n] == '.');
}

static void add_site(__u64 *v, __u32 *n, __u64 off)
{
	for (__u32 i = 0; i < *n; i++)
		if (v[i] == off)
			return; /* an alias */
	if (*n < MAX_PROBES)
		v[(*n)++] = off;
}

struct full_scan {
	const struct elf_syms *s;
	struct gil_file *f;
};

static int full_cb(const struct elf_sym *sym, void *arg)
{
	struct full_scan *fs = arg;

	if (is_fn(sym->name, "take_gil"))
		add_site(fs->f->take, &fs->f->ntake, site_of(fs->s, sym));
	else if (is_fn(sym->name, "drop_gil"))
		add_site(fs->f->drop, &fs->f->ndrop, site_of(fs->s, sym));
	return 0;
}

/* Full mode: take_gil/drop_gil of interpreter F (at PATH), for every process that maps it. */
static void full_attach(struct gil_state *st, struct record_ctx *ctx, struct gil_file *f,
			const char *path, const char *object)
{
	struct uprobe_links *l = f->links;

	if (!f->ntake || !f->ndrop)
		return;
	if (probe(ctx, &l[L_TAKE], st->skel->progs.gil_take_enter, 0, 0, path, f->take, f->ntake,
		  "take_gil", object) ||
	    probe(ctx, &l[L_TAKE_RET], st->skel->progs.gil_take_exit, 1, 0, path, f->take, f->ntake,
		  "take_gil", object) ||
	    probe(ctx, &l[L_DROP], st->skel->progs.gil_drop_enter, 0, 0, path, f->drop, f->ndrop,
		  "drop_gil", object)) {
		/* Half of take/drop would make nonsense holds. */
		for (int i = L_TAKE; i <= L_DROP; i++)
			uprobe_links__detach(&l[i]);
		return;
	}
	f->full_ok = 1;
}

/*
 * The manager's listener: a file examined for the first time. Kept if glibc or python. In
 * full mode an interpreter's take_gil/drop_gil are probed now, for every process that maps
 * it: in launch mode CMD is stopped until they are (before its interpreter runs).
 */
static void *on_file(void *arg, const char *path, const char *shown, const struct elf_syms *syms)
{
	struct gil_state *st = arg;
	struct gil_file *f = calloc(1, sizeof(*f));
	struct full_scan fs = { syms, f };
	struct elf_sym sym;

	if (!f)
		return NULL;
	/* The default version, pthread_cond_timedwait@@GLIBC_2.3.2, is what programs call. */
	if (!elf_syms__find(syms, "pthread_cond_timedwait", &sym)) {
		f->cond = 1;
		f->cond_off = site_of(syms, &sym);
		if (!elf_syms__find(syms, "__lll_lock_wait", &sym))
			f->lll_off = site_of(syms, &sym);
	}
	f->python = !gil_pyfile__read(syms, shown, &f->py);
	if (!f->cond && !f->python) {
		free(f);
		return NULL;
	}
	/* Full mode: take_gil/drop_gil in the interpreter (.symtab or a build-id debug file). */
	if (f->python && st->full) {
		elf_syms__for_each(syms, full_cb, &fs);
		full_attach(st, st->ctx, f, path, shown);
	}
	f->next = st->files;
	st->files = f;
	return f;
}

static int is_libc_name(const char *base)
{
	return !strncmp(base, "libc.", 5) || !strncmp(base, "libc-", 5) ||
	       !strncmp(base, "libpthread", 10) || !strncmp(base, "ld-musl", 7);
}

/*
 * The manager's listener: PID maps F. During a look at PID, the first interpreter (the
 * executable, or a file named like python: libpython3.X.so) and the first glibc (by its
 * name, or linked into the executable) in address order are the ones; the manager's own
 * scans are not looks (gil looks when it has a reason to).
 */
static void on_mapped(void *arg, void *cookie, pid_t pid, const char *path,
		      const struct uprobe_mapping *mp)
{
	struct gil_state *st = arg;
	struct gil_look *lk = &st->look;
	struct gil_file *f = cookie;
	const char *base = strrchr(mp->shown, '/');
	int exe = !strcmp(mp->shown, lk->exe);

	if (pid != lk->pid)
		return;
	base = base ? base + 1 : mp->shown;
	if (f->python && !lk->py && gil_python__is_interpreter(mp->shown, lk->exe)) {
		lk->py = f;
		lk->py_bias = mp->bias;
		snprintf(lk->py_shown, sizeof(lk->py_shown), "%s", mp->shown);
	}
	if (f->cond && !lk->libc && (exe || is_libc_name(base))) {
		lk->libc = f;
		snprintf(lk->libc_path, sizeof(lk->libc_path), "%s", path);
		snprintf(lk->libc_shown, sizeof(lk->libc_shown), "%s", mp->shown);
	}
}

/* Look at what PID maps (into st->look): -errno when PID is gone. */
static int look(struct gil_state *st, pid_t pid)
{
	struct gil_look *lk = &st->look;
	char fn[64];
	ssize_t n;
	int err;

	lk->py = lk->libc = NULL;
	snprintf(fn, sizeof(fn), "/proc/%d/exe", pid);
	n = readlink(fn, lk->exe, sizeof(lk->exe) - 1);
	lk->exe[n > 0 ? n : 0] = 0;
	lk->pid = pid;
	err = uprobe_mgr__scan(st->ctx->uprobes, pid);
	lk->pid = 0;
	return err;
}

/* The condition-wait probes on glibc file F (at PATH), for every process that maps it. */
static void libc_attach(struct gil_state *st, struct record_ctx *ctx, struct gil_file *f,
			const char *path, const char *name)
{
	f->cond_tried = 1;
	f->cond_ok = !probe(ctx, &f->links[L_COND], st->skel->progs.gil_cond_enter, 0, 0, path,
			    &f->cond_off, 1, "pthread_cond_timedwait", name) &&
		     !probe(ctx, &f->links[L_COND_RET], st->skel->progs.gil_cond_exit, 1, 0, path,
			    &f->cond_off, 1, "pthread_cond_timedwait", name);
}

static void proc_unlink_mutex(struct gil_proc *p)
{
	for (int i = 0; i < 2; i++)
		uprobe_links__detach(&p->mutex[i]);
	p->mutex_on = 0;
	p->mutex_wanted = 0;
}

/* The per-process mutex probes proc_check asked for; 0 when attached. */
static int proc_link_mutex(struct gil_state *st, struct record_ctx *ctx, struct gil_proc *p)
{
	int enter, exit;

	p->mutex_wanted = 0;
	enter = probe(ctx, &p->mutex[0], st->skel->progs.gil_mutex_enter, 0, p->pid, p->libc_path,
		      &p->lll_off, 1, "__lll_lock_wait", p->libc_path);
	exit = probe(ctx, &p->mutex[1], st->skel->progs.gil_mutex_exit, 1, p->pid, p->libc_path,
		     &p->lll_off, 1, "__lll_lock_wait", p->libc_path);
	if (!enter && !exit) {
		p->mutex_on = 1;
		return 0;
	}
	proc_unlink_mutex(p);
	p->mutex_failed = 1;
	return -ENOENT;
}

static void proc_unconfigure(struct gil_state *st, struct gil_proc *p)
{
	__u32 key = p->pid;

	if (p->configured)
		bpf_map_delete_elem(bpf_map__fd(st->skel->maps.gil_procs), &key);
	p->configured = 0;
	proc_unlink_mutex(p);
}

static struct gil_proc *proc_get(struct gil_state *st, pid_t pid, int create)
{
	struct gil_proc **slot = hmap__get(st->procs, (struct hkey){ (__u64)pid, 0 }, create);

	if (!slot)
		return NULL;
	if (!*slot && create) {
		*slot = calloc(1, sizeof(**slot));
		if (*slot) {
			(*slot)->pid = pid;
			(*slot)->status = -1;
			(*slot)->first_seen_ns = mono_now_ns();
		}
	}
	return *slot;
}

/* Forget PID (exec: a new image; exit): its per-process probes go, its totals stay in BPF. */
static void proc_reset(struct gil_state *st, struct gil_proc *p)
{
	proc_unconfigure(st, p);
	p->status = -1;
	p->written = 0;
	p->first_seen_ns = mono_now_ns();
	p->last_check_ns = 0;
}

static void proc_free(struct gil_proc *p)
{
	if (!p)
		return;
	proc_unlink_mutex(p);
	free(p->libc_path);
	free(p);
}

/* PID exited: free what user space kept about it (the slot stays, for a recycled pid). */
static void proc_forget(struct gil_state *st, pid_t pid)
{
	struct gil_proc **slot = hmap__get(st->procs, (struct hkey){ (__u64)pid, 0 }, 0);

	if (!slot || !*slot)
		return;
	proc_free(*slot);
	*slot = NULL;
}

static void write_proc(struct record_ctx *ctx, struct gil_proc *p, const struct gil_py *py,
		       __u32 method, __u32 flags, const char *note)
{
	struct bs_gil_proc r = { 0 };

	if (p->written && p->w_method == method && p->w_flags == flags && p->w_gil == py->gil &&
	    !strcmp(p->w_note, note))
		return;
	p->written = 1;
	p->w_method = method;
	p->w_flags = flags;
	p->w_gil = py->gil;
	snprintf(p->w_note, sizeof(p->w_note), "%s", note);
	record_ctx__hdr(&r.h, BS_REC_GIL_PROC, sizeof(r), p->pid, p->pid, 0);
	r.gil_addr = py->gil;
	r.py_version = py->version;
	r.method = method;
	r.flags = flags;
	r.object_id = record_ctx__intern(ctx, py->object);
	r.note_id = record_ctx__intern(ctx, note);
	record_ctx__write(ctx, &r);
	if (ctx->opts->verbose)
		fprintf(stderr, "bpfsight record: gil: pid %d: %s %x.%x (%s), method %s%s%s\n",
			p->pid, py->object, py->version >> 24, py->version >> 16 & 0xff,
			py->how ? py->how : "-", gil_method_name(method), *note ? ": " : "", note);
}

static void note_add(char *buf, size_t len, const char *s)
{
	size_t n = strlen(buf);

	snprintf(buf + n, len - n, "%s%s", n ? "; " : "", s);
}

/* Tell BPF where P's GIL is (when that changed). */
static int cfg_write(struct gil_state *st, struct gil_proc *p, const struct bs_gil_cfg *cfg)
{
	__u32 key = p->pid;

	if (p->configured && !memcmp(cfg, &p->cfg, sizeof(*cfg)))
		return 0;
	if (bpf_map_update_elem(bpf_map__fd(st->skel->maps.gil_procs), &key, cfg, BPF_ANY)) {
		proc_unconfigure(st, p);
		return -errno;
	}
	p->cfg = *cfg;
	p->configured = 1;
	return 0;
}

/* Look at PID now: configure BPF and the probes, say how it is measured. */
static void proc_check(struct gil_state *st, struct record_ctx *ctx, pid_t pid)
{
	struct gil_look *lk = &st->look;
	struct gil_py *py = &st->py;
	struct gil_file *libc;
	char note[256] = "";
	__u32 method = BS_GIL_METHOD_NONE, flags = 0;
	struct gil_proc *p;
	struct bs_gil_cfg cfg;

	/* The manager is gone (recording stops, the last records drain): no more looks. */
	if (!ctx->uprobes)
		return;
	p = proc_get(st, pid, 1);
	if (!p)
		return;
	p->last_check_ns = mono_now_ns();
	if (look(st, pid) ||
	    (lk->py &&
	     gil_python__inspect(pid, &lk->py->py, lk->py_bias + lk->py->py.rt_vaddr, py))) {
		proc_unconfigure(st, p); /* gone */
		p->status = GIL_PY_NOT_PYTHON;
		return;
	}
	if (!lk->py) {
		p->status = GIL_PY_NOT_PYTHON;
		return;
	}
	snprintf(py->object, sizeof(py->object), "%s", lk->py_shown);
	p->status = py->status;
	if (py->status == GIL_PY_NOT_PYTHON || py->status == GIL_PY_PENDING)
		return;
	if (py->free_threaded)
		flags |= BS_GIL_PROC_FREE_THREADED;
	if (py->status != GIL_PY_READY) {
		proc_unconfigure(st, p);
		write_proc(ctx, p, py,
			   py->status == GIL_PY_NO_GIL ? BS_GIL_METHOD_NO_GIL : BS_GIL_METHOD_NONE,
			   flags, py->note);
		return;
	}
	/* glibc (a container's, or linked into the executable): probed once for all. */
	libc = lk->libc;
	if (libc && !libc->cond_tried)
		libc_attach(st, ctx, libc, lk->libc_path, lk->libc_shown);
	if (!libc || !libc->cond_ok) {
		proc_unconfigure(st, p);
		write_proc(ctx, p, py, BS_GIL_METHOD_NONE, flags,
			   libc ? "the condition-wait probe failed to attach"
				: "no pthread_cond_timedwait found (glibc/musl)");
		return;
	}
	cfg = py->cfg;
	cfg.flags = p->configured ? p->cfg.flags : 0;
	/* Waits count from here on; the slower attaches below only add to it. */
	if (cfg_write(st, p, &cfg)) {
		write_proc(ctx, p, py, BS_GIL_METHOD_NONE, flags,
			   "too many python processes (gil_procs map full)");
		return;
	}
	if (py->holder_known)
		flags |= BS_GIL_PROC_HOLDER;
	else
		note_add(note, sizeof(note), "holder threads unknown");
	if (py->verified)
		flags |= BS_GIL_PROC_VERIFIED;
	else
		note_add(note, sizeof(note), "GIL address not verified yet");
	method = BS_GIL_METHOD_CONDWAIT;
	if (st->full) {
		if (lk->py->full_ok) {
			cfg.flags |= BS_GIL_CFG_FULL;
			method = BS_GIL_METHOD_TAKE_GIL;
		} else {
			note_add(note, sizeof(note),
				 "full mode unavailable: take_gil/drop_gil not "
				 "found (stripped, no debug file): holds not measured");
		}
	} else {
		note_add(note, sizeof(note), "holds not measured (--gil-mode=full)");
	}
	if (cfg_write(st, p, &cfg)) {
		write_proc(ctx, p, py, BS_GIL_METHOD_NONE, flags,
			   "too many python processes (gil_procs map full)");
		return;
	}
	/*
	 * The mutex probe tells drop_gil (the holder) from take_gil by the holder's tid, and is
	 * attached per process. An attach takes ~0.2-0.5 s here, so with -a it waits for a poll
	 * (a few per poll); the condition wait, which sees nearly all of the waiting, is
	 * measured meanwhile.
	 */
	if (libc->lll_off && py->holder_known && py->verified) {
		if (!p->mutex_on && !p->mutex_wanted && !p->mutex_failed) {
			p->mutex_wanted = 1;
			p->lll_off = libc->lll_off;
			free(p->libc_path);
			p->libc_path = strdup(lk->libc_path);
			if (!p->libc_path)
				p->mutex_wanted = 0, p->mutex_failed = 1;
			else if (st->starting || !ctx->opts->system_wide)
				proc_link_mutex(st, ctx, p);
		}
		if (p->mutex_on) {
			cfg.flags |= BS_GIL_CFG_MUTEX;
			flags |= BS_GIL_PROC_MUTEX;
		}
	}
	if (!(flags & BS_GIL_PROC_MUTEX))
		note_add(
			note, sizeof(note),
			p->mutex_wanted ? "waits on the GIL's mutex not seen yet (probe pending)"
			: libc->lll_off
				? "waits on the GIL's mutex not seen"
				: "waits on the GIL's mutex not seen (no symbols for __lll_lock_wait)");
	if (cfg_write(st, p, &cfg)) {
		write_proc(ctx, p, py, BS_GIL_METHOD_NONE, flags,
			   "too many python processes (gil_procs map full)");
		return;
	}
	write_proc(ctx, p, py, method, flags, note);
}

/*
 * Worth another look? Unfinished ones always; non-python ones while they are new. EVENT_TS is
 * the time of a thread creation or a new mapping in the process (0 on a poll): one that
 * happened after the last look may have changed the answer; within one ring-buffer drain
 * only the first such record costs a look.
 */
static int proc_needs_check(const struct gil_proc *p, __u64 now, __u64 event_ts)
{
	if (event_ts ? event_ts <= p->last_check_ns : now - p->last_check_ns < RECHECK_GAP_NS)
		return 0;
	switch (p->status) {
	case -1:
	case GIL_PY_PENDING:
	case GIL_PY_NO_GIL: /* the GIL may be switched on at run time */
		return 1;
	case GIL_PY_NOT_PYTHON:
		return now - p->first_seen_ns < NEW_WINDOW_NS;
	case GIL_PY_READY:
		/* Unverified or without holder ids: new threads may complete the picture. */
		return !(p->w_flags & BS_GIL_PROC_VERIFIED) || !(p->w_flags & BS_GIL_PROC_HOLDER) ||
		       (event_ts && !(p->w_flags & BS_GIL_PROC_MUTEX));
	default:
		return 0;
	}
}

/* Write the totals of thread KEY (pid << 32 | tid) if they changed since last written. */
static void agg_write(struct gil_state *st, struct record_ctx *ctx, int fd, __u64 key)
{
	struct bs_gil_agg r;
	__u64 *last;

	if (bpf_map_lookup_elem(fd, &key, &r.v))
		return;
	last = hmap__get(st->agg_w, (struct hkey){ key, 0 }, 1);
	if (!last || *last == r.v.wait_count + r.v.hold_count)
		return;
	*last = r.v.wait_count + r.v.hold_count;
	record_ctx__hdr(&r.h, BS_REC_GIL_AGG, sizeof(r), key >> 32, (__u32)key, 0);
	r.threshold_ns = GIL_THRESHOLD_NS;
	record_ctx__write(ctx, &r);
}

static void flush_agg(struct gil_state *st, struct record_ctx *ctx)
{
	int fd = bpf_map__fd(st->skel->maps.gil_agg);
	__u64 key, next, *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		agg_write(st, ctx, fd, key);
	}
}

/* A thread exited: its totals are final; write them and free the BPF entry. */
static void thread_done(struct gil_state *st, struct record_ctx *ctx, __u32 pid, __u32 tid)
{
	int fd = bpf_map__fd(st->skel->maps.gil_agg);
	__u64 key = (__u64)pid << 32 | tid;

	agg_write(st, ctx, fd, key);
	bpf_map_delete_elem(fd, &key);
}

/*
 * Write the blame totals that changed. With DONE_PID, only that process's, which has exited:
 * they are final, so their BPF entries are freed too (the map would fill on long -a runs).
 */
static void flush_blame(struct gil_state *st, struct record_ctx *ctx, __u32 done_pid)
{
	int fd = bpf_map__fd(st->skel->maps.gil_blame);
	struct bs_gil_blame_key key, next, *prev = NULL, *dead = NULL, *nd;
	struct bs_gil_blame_val v;
	struct bs_gil_blame r;
	size_t ndead = 0;
	__u64 *last;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (done_pid && key.pid != done_pid)
			continue;
		if (done_pid && (nd = realloc(dead, (ndead + 1) * sizeof(*dead)))) {
			dead = nd;
			dead[ndead++] = key;
		}
		if (bpf_map_lookup_elem(fd, &key, &v))
			continue;
		last = hmap__get(st->blame_w,
				 (struct hkey){ (__u64)key.pid << 32 | key.waiter, key.holder }, 1);
		if (!last || *last == v.count)
			continue;
		*last = v.count;
		memset(&r, 0, sizeof(r));
		record_ctx__hdr(&r.h, BS_REC_GIL_BLAME, sizeof(r), key.pid, key.waiter, 0);
		r.holder_tid = key.holder;
		r.count = v.count;
		r.total_ns = v.total_ns;
		record_ctx__write(ctx, &r);
	}
	/* Deleted after the walk: deleting under get_next_key would restart it. */
	for (size_t i = 0; i < ndead; i++)
		bpf_map_delete_elem(fd, &dead[i]);
	free(dead);
}

/* A process that ran before recording started has mapped what it maps: one look. */
static void proc_check_old(struct gil_state *st, struct record_ctx *ctx, pid_t pid)
{
	struct gil_proc *p = proc_get(st, pid, 1);

	if (p)
		p->first_seen_ns = 0;
	proc_check(st, ctx, pid);
}

static void scan_all(struct gil_state *st, struct record_ctx *ctx)
{
	struct dirent *d;
	DIR *dir = opendir("/proc");

	if (!dir)
		return;
	while ((d = readdir(dir))) {
		pid_t pid = (pid_t)strtol(d->d_name, NULL, 10);

		if (pid > 0 && pid != ctx->self_pid)
			proc_check_old(st, ctx, pid);
	}
	closedir(dir);
}

/*
 * The host's glibc, probed before anything runs: an attach walks every process that maps
 * the file (~0.3 s here), better spent now than when the first python shows up.
 */
static void preattach_libc(struct gil_state *st, struct record_ctx *ctx)
{
	static const char *const paths[] = {
		"/lib/x86_64-linux-gnu/libc.so.6",
		"/usr/lib/x86_64-linux-gnu/libc.so.6",
		"/lib/aarch64-linux-gnu/libc.so.6",
		"/usr/lib/aarch64-linux-gnu/libc.so.6",
		"/lib64/libc.so.6",
		"/usr/lib64/libc.so.6",
		"/lib/libc.so.6",
		"/usr/lib/libc.so.6",
	};
	struct gil_file *f;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		f = uprobe_mgr__examine(ctx->uprobes, st->listener, paths[i]);
		if (f && f->cond && !f->cond_tried)
			libc_attach(st, ctx, f, paths[i], paths[i]);
	}
}

static void gil_state_free(struct gil_state *st)
{
	struct gil_proc **p;
	struct gil_file *f;
	size_t it = 0;

	if (!st)
		return;
	while (st->procs && (p = hmap__next(st->procs, &it, NULL)))
		proc_free(*p);
	while ((f = st->files)) {
		st->files = f->next;
		file_free(f);
	}
	hmap__free(st->procs);
	hmap__free(st->agg_w);
	hmap__free(st->blame_w);
	gil_bpf__destroy(st->skel);
	free(st);
}

/*
 * The manager's listener: its first scan is done, with every family's files examined. Now
 * the probes that are better attached before anything runs, and the first look at the
 * targets.
 */
static void on_started(void *arg)
{
	struct gil_state *st = arg;
	struct record_ctx *ctx = st->ctx;

	st->starting = 1;
	preattach_libc(st, ctx);
	if (ctx->opts->system_wide)
		scan_all(st, ctx);
	if (ctx->launch_pid)
		proc_check(st, ctx, ctx->launch_pid);
	for (__u32 i = 0; i < ctx->opts->npids; i++)
		proc_check_old(st, ctx, ctx->opts->pids[i]);
	st->starting = 0;
}

static int gil_attach(struct record_ctx *ctx, void **state)
{
	struct gil_state *st = calloc(1, sizeof(*st));
	struct uprobe_listener lis = {
		.file = on_file, .mapped = on_mapped, .started = on_started, .arg = st
	};
	int err;

	if (!st)
		return -ENOMEM;
	st->ctx = ctx;
	st->full = ctx->opts->gil_mode == RECORD_GIL_FULL;
	st->procs = hmap__new(sizeof(struct gil_proc *));
	st->agg_w = hmap__new(sizeof(__u64));
	st->blame_w = hmap__new(sizeof(__u64));
	st->skel = gil_bpf__open();
	if (!st->skel || !st->procs || !st->agg_w || !st->blame_w) {
		err = st->skel ? -ENOMEM : -errno;
		goto fail;
	}
	RECORD_CTX_SET_COMMON_RODATA(st->skel, ctx);
	st->skel->rodata->threshold_ns = GIL_THRESHOLD_NS;
	st->skel->rodata->gil_stack_ns = record_opts__stack_ns(ctx->opts, &family_gil);
	err = 0;
	if (uprobe_multi__supported()) {
		struct bpf_program *progs[] = {
			st->skel->progs.gil_cond_enter, st->skel->progs.gil_cond_exit,
			st->skel->progs.gil_take_enter, st->skel->progs.gil_take_exit,
			st->skel->progs.gil_drop_enter, st->skel->progs.gil_mutex_enter,
			st->skel->progs.gil_mutex_exit,
		};

		for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]) && !err; i++)
			err = uprobe_multi__prepare(progs[i]);
		if (err)
			goto fail;
	}
	err = record_ctx__prepare(ctx, st->skel->obj);
	if (!err)
		err = gil_bpf__load(st->skel);
	if (!err)
		err = gil_bpf__attach(st->skel); /* the lifecycle tracepoints; uprobes come later */
	if (err)
		goto fail;
	/* Last: the manager keeps ST from here on, and nothing below can fail. */
	if (!uprobe_mgr__get(ctx, &err))
		goto fail;
	st->listener = uprobe_mgr__add_listener(ctx->uprobes, &lis);
	if (st->listener < 0) {
		err = st->listener;
		goto fail;
	}
	*state = st;
	return 0;
fail:
	gil_state_free(st);
	return err;
}

static void gil_observe(struct record_ctx *ctx, void *state, const struct bs_hdr *rec)
{
	const struct bs_fork *fk = (const void *)rec;
	const struct bs_exit *ex = (const void *)rec;
	struct gil_state *st = state;
	struct gil_proc *p;

	switch (rec->type) {
	case BS_REC_EXEC:
		p = proc_get(st, rec->pid, 1);
		if (!p)
			return;
		proc_reset(st, p);
		proc_check(st, ctx, rec->pid);
		break;
	case BS_REC_FORK:
		if (fk->child_pid == fk->child_tid) {
			/* A forked python is the parent's interpreter: look now (mutex probe). */
			p = proc_get(st, rec->pid, 0);
			if (p && p->configured)
				proc_check(st, ctx, fk->child_pid);
			else
				proc_get(st, fk->child_pid, 1);
			break;
		}
		p = proc_get(st, rec->pid, 1);
		if (p && proc_needs_check(p, mono_now_ns(), rec->ts))
			proc_check(st, ctx, rec->pid);
		break;
	case BS_REC_MAP_EXEC:
		/*
		 * New code (dlopen of libpython), reported by the uprobe manager's libmap. Its
		 * records come at once (launch mode: the process waits), so an interpreter is often
		 * first seen before it starts: like a new thread, a later dlopen (an extension
		 * module) is a chance to verify it.
		 */
		p = proc_get(st, rec->pid, 1);
		if (p && rec->ts > p->last_check_ns &&
		    (p->status != GIL_PY_READY || proc_needs_check(p, mono_now_ns(), rec->ts)))
			proc_check(st, ctx, rec->pid);
		break;
	case BS_REC_EXIT:
		thread_done(st, ctx, rec->pid, rec->tid);
		if (!ex->group_dead)
			break;
		/* BPF dropped its configuration already; the pid may come back as another. */
		proc_forget(st, rec->pid);
		flush_blame(st, ctx, rec->pid);
		break;
	default:
		break;
	}
}

static int gil_poll(struct record_ctx *ctx, void *state)
{
	struct gil_state *st = state;
	struct gil_proc **pp;
	__u64 now = mono_now_ns();
	pid_t *todo;
	size_t it = 0;
	int n = 0;

	/* proc_check may add to procs (moving its values): collect first. */
	todo = calloc(hmap__count(st->procs) + 1, sizeof(*todo));
	if (!todo)
		return -ENOMEM;
	while ((pp = hmap__next(st->procs, &it, NULL)))
		if (*pp && proc_needs_check(*pp, now, 0))
			todo[n++] = (*pp)->pid;
	for (int i = 0; i < n; i++)
		proc_check(st, ctx, todo[i]);
	/* Mutex probes, a few per poll: each attach stalls the ring-buffer consumer. */
	it = n = 0;
	while ((pp = hmap__next(st->procs, &it, NULL)) && n < MUTEX_ATTACH_PER_POLL)
		if (*pp && (*pp)->mutex_wanted && (*pp)->configured)
			todo[n++] = (*pp)->pid;
	for (int i = 0; i < n; i++) {
		struct gil_proc *p = proc_get(st, todo[i], 0);

		if (p && !proc_link_mutex(st, ctx, p))
			proc_check(st, ctx, todo[i]);
	}
	free(todo);
	flush_agg(st, ctx);
	flush_blame(st, ctx, 0);
	return 0;
}

static void gil_detach(struct record_ctx *ctx, void *state)
{
	struct gil_state *st = state;
	struct gil_proc **p;
	size_t it = 0;

	/* Probes off first, so the last totals are final. */
	gil_bpf__detach(st->skel);
	while ((p = hmap__next(st->procs, &it, NULL)))
		if (*p)
			proc_unlink_mutex(*p);
	for (struct gil_file *f = st->files; f; f = f->next)
		for (int i = 0; i < NLINKS; i++)
			uprobe_links__detach(&f->links[i]);
	flush_agg(st, ctx);
	flush_blame(st, ctx, 0);
	gil_state_free(st);
}

/* How each python process is measured: gil_procs and GIL.md's notes need it in any window. */
static const __u16 gil_state_records[] = { BS_REC_GIL_PROC, 0 };

const struct family family_gil = {
	.name = "gil",
	.desc = "CPython GIL waits per thread and who held it (uprobes on glibc/libpython)",
	.flags = FAMILY_STACKS_DEFAULT,
	.needs = 1u << KF_TASK_STORAGE,	      /* gil_thr: each thread's GIL state */
	.stack_default_ns = GIL_THRESHOLD_NS, /* every wait with a record, and its rounds */
	.state_records = gil_state_records,
	.cumulative = gil_cumulative,
	.attach = gil_attach,
	.poll = gil_poll,
	.detach = gil_detach,
	.observe = gil_observe,
	.decoders = gil_decoders,
	.reports = gil_reports,
	.chrome = &gil_chrome,
	.perfetto = &gil_perfetto,
	.sqlite = &gil_sqlite,
};
