// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gil family, record side: finds the python processes among the targets (gil_python.c),
 * tells BPF where each one's GIL is (gil_procs), attaches the probes (bpf/gil.bpf.c) and
 * copies the in-kernel totals into the trace.
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
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "kdev.h"
#include "elf_syms.h"
#include "gil.h"
#include "gil_python.h"
#include "probe_site.h"
#include "record_ctx.h"
#include "stats_math.h"
#include "uprobe_multi.h"
#include "gil.skel.h"

#define NEW_WINDOW_NS	      5000000000ull /* a new process may still map libpython */
#define RECHECK_GAP_NS	      50000000ull   /* at most one look at a process per 50 ms */
#define CODE_PEEK	      64
#define MAX_PROBES	      8 /* take_gil/drop_gil and their clones per file */
#define MUTEX_ATTACH_PER_POLL 4 /* processes; each attach costs ~0.2 s on a VM */

/* An attached probe: a uprobe_multi link (its fd) or, before Linux 6.6, a perf-event uprobe. */
struct gil_probe {
	struct bpf_link *link;
	int fd;
};

/* An ELF file mapped by traced pythons: glibc (condition wait, mutex) or an interpreter. */
struct gil_file {
	int examined;
	int is_libc;	/* defines pthread_cond_timedwait */
	__u64 cond_off; /* file offsets of the probe sites */
	__u64 lll_off;	/* 0 = __lll_lock_wait unknown (no symtab or debug file) */
	int cond_ok;	/* both condition-wait probes attached */
	int full_examined;
	int full_ok; /* take_gil (entry, return) and drop_gil probes attached */
	struct gil_probe *probes;
	__u32 nprobes;
};

struct gil_proc {
	pid_t pid;
	int status; /* enum gil_py_status of the last look, -1 = never looked at */
	__u64 first_seen_ns, last_check_ns;
	int configured; /* in gil_procs */
	struct bs_gil_cfg cfg;
	struct bpf_link *mutex_links[2];
	int mutex_wanted; /* attach the mutex probes at the next poll (it takes a while) */
	int mutex_failed; /* and do not try again */
	__u64 lll_off;
	char libc_path[96];
	/* The last BS_REC_GIL_PROC written, to write again only on change. */
	int written;
	__u32 w_method, w_flags;
	__u64 w_gil;
	char w_note[256];
};

struct gil_state {
	struct gil_bpf *skel;
	struct gil_finder *finder;
	struct hmap *files;   /* (dev, ino) -> struct gil_file * */
	struct hmap *procs;   /* (pid, 0) -> struct gil_proc * */
	struct hmap *agg_w;   /* (pid << 32 | tid, 0) -> wait_count + hold_count last written */
	struct hmap *blame_w; /* (pid << 32 | waiter, holder) -> count last written */
	struct gil_py py;     /* scratch: big */
	int full;
	int multi;    /* pid -1 probes are uprobe_multi links: one grace period, not 2 each */
	int starting; /* in attach(): nothing is being drained yet, attach everything now */
};

static struct gil_file *file_get(struct gil_state *st, __u64 dev, __u64 ino)
{
	struct gil_file **slot = hmap__get(st->files, (struct hkey){ dev, ino }, 1);

	if (!slot)
		return NULL;
	if (!*slot)
		*slot = calloc(1, sizeof(**slot));
	return *slot;
}

static void probe_free(struct gil_probe *p)
{
	bpf_link__destroy(p->link);
	if (p->fd >= 0)
		close(p->fd);
	p->link = NULL;
	p->fd = -1;
}

static void file_unprobe(struct gil_file *f, __u32 keep)
{
	while (f->nprobes > keep)
		probe_free(&f->probes[--f->nprobes]);
}

static void file_free(struct gil_file *f)
{
	if (!f)
		return;
	file_unprobe(f, 0);
	free(f->probes);
	free(f);
}

static struct bpf_link *attach(struct record_ctx *ctx, struct bpf_program *prog, int ret, pid_t pid,
			       const char *path, __u64 off, const char *what, const char *object)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = ret);
	struct bpf_link *l;
	char msg[PATH_MAX + 128];

	l = bpf_program__attach_uprobe_opts(prog, pid, path, off, &opts);
	if (!l) {
		int err = -errno;

		if (pid > 0 && err == -ESRCH)
			return NULL; /* the process ended meanwhile: nothing was missed */
		snprintf(msg, sizeof(msg), "%s %s in %s", ret ? "uretprobe" : "uprobe", what,
			 object);
		record_ctx__attach_failed(ctx, msg, err);
	}
	return l;
}

/*
 * PROG at file offset OFF of the file at PATH, for every process that maps it (pid -1):
 * a uprobe_multi link where the kernel has them, else a perf-event uprobe. 0 or -errno.
 */
static int file_probe(struct gil_state *st, struct record_ctx *ctx, struct gil_file *f,
		      struct bpf_program *prog, int ret, const char *path, __u64 off,
		      const char *what, const char *object)
{
	struct gil_probe pr = { .fd = -1 }, *np;
	char msg[PATH_MAX + 128];

	if (st->multi) {
		pr.fd = uprobe_multi__attach(prog, path, &off, NULL, 1, ret);
		if (pr.fd < 0) {
			snprintf(msg, sizeof(msg), "%s %s in %s", ret ? "uretprobe" : "uprobe",
				 what, object);
			record_ctx__attach_failed(ctx, msg, pr.fd);
			return pr.fd;
		}
	} else {
		pr.link = attach(ctx, prog, ret, -1, path, off, what, object);
		if (!pr.link)
			return -ENOENT;
	}
	np = realloc(f->probes, (f->nprobes + 1) * sizeof(*np));
	if (!np) {
		probe_free(&pr);
		return -ENOMEM;
	}
	f->probes = np;
	f->probes[f->nprobes++] = pr;
	return 0;
}

/* Where to probe function SYM: its cheapest safe site (probe_site.h). */
static __u64 site_of(const struct elf_syms *s, const struct elf_sym *sym)
{
	struct probe_site ps;
	__u8 code[CODE_PEEK];
	size_t len = sym->size && sym->size < sizeof(code) ? sym->size : sizeof(code);

	if (elf_syms__read(s, sym->vaddr, code, len))
		return sym->file_off;
	probe_site__choose(code, len, &ps);
	return sym->file_off + ps.offset;
}

/* Does the file at PATH define the condition wait (and the mutex slow path)? */
static void libc_examine(struct gil_file *f, const char *path, const char *root)
{
	struct elf_syms *s = elf_syms__open(path, root);
	struct elf_sym sym;

	f->examined = 1;
	if (!s)
		return;
	/* The default version, pthread_cond_timedwait@@GLIBC_2.3.2, is what programs call. */
	if (!elf_syms__find(s, "pthread_cond_timedwait", &sym)) {
		f->is_libc = 1;
		f->cond_off = site_of(s, &sym);
		if (!elf_syms__find(s, "__lll_lock_wait", &sym))
			f->lll_off = site_of(s, &sym);
	}
	elf_syms__free(s);
}

struct full_scan {
	const struct elf_syms *s;
	__u64 take[MAX_PROBES], drop[MAX_PROBES];
	__u32 ntake, ndrop;
};

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

static int full_cb(const struct elf_sym *sym, void *arg)
{
	struct full_scan *fs = arg;

	if (is_fn(sym->name, "take_gil"))
		add_site(fs->take, &fs->ntake, site_of(fs->s, sym));
	else if (is_fn(sym->name, "drop_gil"))
		add_site(fs->drop, &fs->ndrop, site_of(fs->s, sym));
	return 0;
}

/* Full mode: take_gil/drop_gil in the interpreter file (.symtab or a build-id debug file). */
static void full_attach(struct gil_state *st, struct record_ctx *ctx, struct gil_file *f,
			const char *path, const char *root, const char *object)
{
	struct full_scan fs = { 0 };
	__u32 before, i;

	f->full_examined = 1;
	fs.s = elf_syms__open(path, root);
	if (!fs.s)
		return;
	elf_syms__for_each(fs.s, full_cb, &fs);
	elf_syms__free((struct elf_syms *)fs.s);
	if (!fs.ntake || !fs.ndrop)
		return;
	before = f->nprobes;
	for (i = 0; i < fs.ntake; i++) {
		if (file_probe(st, ctx, f, st->skel->progs.gil_take_enter, 0, path, fs.take[i],
			       "take_gil", object) ||
		    file_probe(st, ctx, f, st->skel->progs.gil_take_exit, 1, path, fs.take[i],
			       "take_gil", object))
			goto fail;
	}
	for (i = 0; i < fs.ndrop; i++)
		if (file_probe(st, ctx, f, st->skel->progs.gil_drop_enter, 0, path, fs.drop[i],
			       "drop_gil", object))
			goto fail;
	f->full_ok = 1;
	return;
fail:
	/* Half of take/drop would make nonsense holds. */
	file_unprobe(f, before);
}

/* The condition-wait probes on glibc file F (at PATH), for every process that maps it. */
static void libc_attach(struct gil_state *st, struct record_ctx *ctx, struct gil_file *f,
			const char *path, const char *name)
{
	f->cond_ok = !file_probe(st, ctx, f, st->skel->progs.gil_cond_enter, 0, path, f->cond_off,
				 "pthread_cond_timedwait", name) &&
		     !file_probe(st, ctx, f, st->skel->progs.gil_cond_exit, 1, path, f->cond_off,
				 "pthread_cond_timedwait", name);
}

/*
 * glibc in PID (it may be a container's, or linked into the executable): the file that
 * defines pthread_cond_timedwait, with the condition-wait probes attached once for all.
 */
static struct gil_file *libc_of(struct gil_state *st, struct record_ctx *ctx, pid_t pid, char *path,
				size_t pathlen)
{
	char maps[64], line[PATH_MAX + 128], exe[PATH_MAX], root[64];
	unsigned long long start, end, off, ino;
	unsigned int major, minor;
	struct gil_file *f, *found = NULL;
	char perms[8], file[PATH_MAX];
	ssize_t n;
	FILE *fp;

	snprintf(maps, sizeof(maps), "/proc/%d/exe", pid);
	n = readlink(maps, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	fp = fopen(maps, "re");
	if (!fp)
		return NULL;
	while (!found && fgets(line, sizeof(line), fp)) {
		const char *base;

		file[0] = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %4095[^\n]", &start, &end, perms,
			   &off, &major, &minor, &ino, file) < 8 ||
		    perms[2] != 'x' || file[0] != '/')
			continue;
		base = strrchr(file, '/') + 1;
		if (strncmp(base, "libc.", 5) && strncmp(base, "libc-", 5) &&
		    strncmp(base, "libpthread", 10) && strncmp(base, "ld-musl", 7) &&
		    strcmp(file, exe))
			continue;
		f = file_get(st, (__u64)major << 20 | minor, ino);
		if (!f)
			break;
		snprintf(path, pathlen, "/proc/%d/map_files/%llx-%llx", pid, start, end);
		if (!f->examined)
			libc_examine(f, path, root);
		if (!f->is_libc)
			continue;
		if (!f->cond_ok && !f->nprobes)
			libc_attach(st, ctx, f, path, file);
		found = f;
	}
	fclose(fp);
	return found;
}

static void proc_unlink_mutex(struct gil_proc *p)
{
	for (int i = 0; i < 2; i++) {
		bpf_link__destroy(p->mutex_links[i]);
		p->mutex_links[i] = NULL;
	}
	p->mutex_wanted = 0;
}

/* The per-process mutex probes proc_check asked for; 0 when attached. */
static int proc_link_mutex(struct gil_state *st, struct record_ctx *ctx, struct gil_proc *p)
{
	p->mutex_wanted = 0;
	p->mutex_links[0] = attach(ctx, st->skel->progs.gil_mutex_enter, 0, p->pid, p->libc_path,
				   p->lll_off, "__lll_lock_wait", p->libc_path);
	p->mutex_links[1] = attach(ctx, st->skel->progs.gil_mutex_exit, 1, p->pid, p->libc_path,
				   p->lll_off, "__lll_lock_wait", p->libc_path);
	if (p->mutex_links[0] && p->mutex_links[1])
		return 0;
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

/* PID exited: free what user space kept about it (the slot stays, for a recycled pid). */
static void proc_forget(struct gil_state *st, pid_t pid)
{
	struct gil_proc **slot = hmap__get(st->procs, (struct hkey){ (__u64)pid, 0 }, 0);

	if (!slot || !*slot)
		return;
	(*slot)->configured = 0;
	proc_unlink_mutex(*slot);
	free(*slot);
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
	struct gil_py *py = &st->py;
	struct gil_file *libc, *obj;
	char path[96], root[64], note[256] = "";
	__u32 method = BS_GIL_METHOD_NONE, flags = 0;
	struct gil_proc *p;
	struct bs_gil_cfg cfg;

	p = proc_get(st, pid, 1);
	if (!p)
		return;
	p->last_check_ns = mono_now_ns();
	if (gil_finder__inspect(st->finder, pid, py)) {
		proc_unconfigure(st, p); /* gone */
		p->status = GIL_PY_NOT_PYTHON;
		return;
	}
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
	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	libc = libc_of(st, ctx, pid, path, sizeof(path));
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
		obj = file_get(st, py->dev, py->ino);
		if (obj && !obj->full_examined)
			full_attach(st, ctx, obj, py->open_path, root, py->object);
		if (obj && obj->full_ok) {
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
		if (!p->mutex_links[0] && !p->mutex_wanted && !p->mutex_failed) {
			p->mutex_wanted = 1;
			p->lll_off = libc->lll_off;
			snprintf(p->libc_path, sizeof(p->libc_path), "%s", path);
			if (st->starting || !ctx->opts->system_wide)
				proc_link_mutex(st, ctx, p);
		}
		if (p->mutex_links[0] && p->mutex_links[1]) {
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
	struct stat sb;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		if (stat(paths[i], &sb) || !(f = file_get(st, kdev_of(sb.st_dev), sb.st_ino)))
			continue;
		if (!f->examined)
			libc_examine(f, paths[i], NULL);
		if (f->is_libc && !f->nprobes)
			libc_attach(st, ctx, f, paths[i], paths[i]);
	}
}

/* NAME as execvp would find it; 0 with its real path in OUT. */
static int find_exe(const char *name, char *out)
{
	const char *p = getenv("PATH");
	char cand[PATH_MAX];
	size_t n;

	if (strchr(name, '/'))
		return realpath(name, out) ? 0 : -errno;
	for (p = p ? p : "/usr/local/bin:/usr/bin:/bin"; *p; p += n + (p[n] == ':')) {
		n = strcspn(p, ":");
		snprintf(cand, sizeof(cand), "%.*s/%s", (int)n, p, name);
		if (n && !access(cand, X_OK) && realpath(cand, out))
			return 0;
	}
	return -ENOENT;
}

/* The interpreter file CMD will run (through a #! line and env too), or -ENOENT. */
static int launch_interpreter(const char *cmd, char *out, size_t len)
{
	char exe[PATH_MAX], line[PATH_MAX], *interp, *arg, *save = NULL;
	const char *base;
	FILE *fp;

	if (find_exe(cmd, exe))
		return -ENOENT;
	fp = fopen(exe, "re");
	if (!fp)
		return -errno;
	if (fgets(line, sizeof(line), fp) && !strncmp(line, "#!", 2)) {
		interp = strtok_r(line + 2, " \t\n", &save);
		arg = strtok_r(NULL, " \t\n", &save);
		base = interp && strrchr(interp, '/') ? strrchr(interp, '/') + 1 : interp;
		if (base && arg && !strcmp(base, "env")) {
			while (arg && arg[0] == '-') /* env -S python3 */
				arg = strtok_r(NULL, " \t\n", &save);
			interp = arg;
		}
		if (!interp || find_exe(interp, exe)) {
			fclose(fp);
			return -ENOENT;
		}
	}
	fclose(fp);
	return gil_python__interpreter_file(exe, out, len);
}

/* Full mode, launch mode: take_gil/drop_gil of CMD's interpreter, before CMD runs. */
static void preattach_launch(struct gil_state *st, struct record_ctx *ctx)
{
	char path[PATH_MAX];
	struct gil_file *f;
	struct stat sb;

	if (launch_interpreter(ctx->opts->cmd[0], path, sizeof(path)) || stat(path, &sb))
		return;
	f = file_get(st, kdev_of(sb.st_dev), sb.st_ino);
	if (f && !f->full_examined)
		full_attach(st, ctx, f, path, NULL, path);
}

static void gil_state_free(struct gil_state *st)
{
	struct gil_file **f;
	struct gil_proc **p;
	size_t it = 0;

	if (!st)
		return;
	while (st->procs && (p = hmap__next(st->procs, &it, NULL))) {
		if (*p)
			proc_unlink_mutex(*p);
		free(*p);
	}
	it = 0;
	while (st->files && (f = hmap__next(st->files, &it, NULL)))
		file_free(*f);
	hmap__free(st->procs);
	hmap__free(st->files);
	hmap__free(st->agg_w);
	hmap__free(st->blame_w);
	gil_finder__free(st->finder);
	gil_bpf__destroy(st->skel);
	free(st);
}

static int gil_attach(struct record_ctx *ctx, void **state)
{
	struct gil_state *st = calloc(1, sizeof(*st));
	int err;

	if (!st)
		return -ENOMEM;
	st->full = ctx->opts->gil_mode == RECORD_GIL_FULL;
	st->finder = gil_finder__new();
	st->files = hmap__new(sizeof(struct gil_file *));
	st->procs = hmap__new(sizeof(struct gil_proc *));
	st->agg_w = hmap__new(sizeof(__u64));
	st->blame_w = hmap__new(sizeof(__u64));
	st->skel = gil_bpf__open();
	if (!st->skel || !st->finder || !st->files || !st->procs || !st->agg_w || !st->blame_w) {
		err = st->skel ? -ENOMEM : -errno;
		goto fail;
	}
	RECORD_CTX_SET_COMMON_RODATA(st->skel, ctx);
	st->skel->rodata->threshold_ns = GIL_THRESHOLD_NS;
	/* The mutex probes stay perf-event uprobes: they are attached per process. */
	st->multi = uprobe_multi__supported();
	err = 0;
	if (st->multi) {
		struct bpf_program *progs[] = {
			st->skel->progs.gil_cond_enter, st->skel->progs.gil_cond_exit,
			st->skel->progs.gil_take_enter, st->skel->progs.gil_take_exit,
			st->skel->progs.gil_drop_enter,
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
		err = gil_bpf__attach(st->skel); /* the lifecycle tracepoints; uprobes come below */
	if (err)
		goto fail;
	st->starting = 1;
	preattach_libc(st, ctx);
	if (st->full && ctx->opts->cmd)
		preattach_launch(st, ctx);
	if (ctx->opts->system_wide)
		scan_all(st, ctx);
	if (ctx->launch_pid)
		proc_check(st, ctx, ctx->launch_pid);
	for (__u32 i = 0; i < ctx->opts->npids; i++)
		proc_check_old(st, ctx, ctx->opts->pids[i]);
	st->starting = 0;
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
		/* New code (dlopen of libpython), reported when a uprobe family loaded libmap. */
		p = proc_get(st, rec->pid, 1);
		if (p && p->status != GIL_PY_READY && rec->ts > p->last_check_ns)
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
	struct gil_file **f;
	struct gil_proc **p;
	size_t it = 0;

	/* Probes off first, so the last totals are final. */
	gil_bpf__detach(st->skel);
	while ((p = hmap__next(st->procs, &it, NULL)))
		if (*p)
			proc_unlink_mutex(*p);
	it = 0;
	while ((f = hmap__next(st->files, &it, NULL)))
		file_unprobe(*f, 0);
	flush_agg(st, ctx);
	flush_blame(st, ctx, 0);
	gil_state_free(st);
}

const struct family family_gil = {
	.name = "gil",
	.desc = "CPython GIL waits per thread and who held it (uprobes on glibc/libpython)",
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
