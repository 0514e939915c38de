// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The gil family's probes: glibc's condition wait (for every traced process that maps the file),
 * the interpreters' take_gil/drop_gil (full mode), glibc's __lll_lock_wait per python
 * process; and what a look at a process finds (the uprobe manager's scan of its maps).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "probe_site.h"
#include "gil_state.h"

void gil_file_free(struct gil_file *f)
{
	for (int i = 0; i < NLINKS; i++)
		uprobe_links__detach(&f->links[i]);
	free(f);
}

/*
 * PROG at the CNT file offsets OFFS of PATH, for process PID (0: every one), into L: on entry,
 * or on return with RET, a BS_GIL_EXIT_* (gil_exit's cookie: which function returned).
 */
static int probe(struct uprobe_mgr *m, struct uprobe_links *l, const struct bpf_program *prog,
		 int ret, pid_t pid, const char *path, const __u64 *offs, __u32 cnt,
		 const char *what, const char *object)
{
	__u64 cookies[MAX_PROBES];
	struct uprobe_multi_opts o = { .pid = pid, .retprobe = ret != 0 };

	if (ret) {
		if (cnt > MAX_PROBES)
			return -E2BIG;
		for (__u32 i = 0; i < cnt; i++)
			cookies[i] = (__u64)ret;
		o.cookies = cookies;
	}
	return uprobe_mgr__attach_links(m, "gil", l, prog, path, offs, cnt, &o, what, object);
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

/* Full mode: take_gil/drop_gil of interpreter F (at PATH), for every traced process mapping it. */
static void full_attach(struct gil_state *st, struct record_ctx *ctx, struct gil_file *f,
			const char *path, const char *object)
{
	struct uprobe_links *l = f->links;

	if (!f->ntake || !f->ndrop)
		return;
	if (probe(st->uprobes, &l[L_TAKE], st->skel->progs.gil_take_enter, 0, 0, path, f->take,
		  f->ntake, "take_gil", object) ||
	    probe(st->uprobes, &l[L_TAKE_RET], st->skel->progs.gil_exit, BS_GIL_EXIT_TAKE, 0, path,
		  f->take, f->ntake, "take_gil", object) ||
	    probe(st->uprobes, &l[L_DROP], st->skel->progs.gil_drop_enter, 0, 0, path, f->drop,
		  f->ndrop, "drop_gil", object)) {
		/* Half of take/drop would make nonsense holds. */
		for (int i = L_TAKE; i <= L_DROP; i++)
			uprobe_links__detach(&l[i]);
		return;
	}
	f->full_ok = 1;
}

/*
 * The manager's listener: a file examined for the first time. Kept if glibc or python. In
 * full mode an interpreter's take_gil/drop_gil are probed now, for every traced process that maps
 * it: in launch mode CMD is stopped until they are (before its interpreter runs).
 */
void *gil_on_file(void *arg, const char *path, const char *shown, const struct elf_syms *syms)
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
void gil_on_mapped(void *arg, void *cookie, pid_t pid, const char *path,
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
int gil_look(struct gil_state *st, pid_t pid)
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
	err = uprobe_mgr__scan(st->uprobes, pid);
	lk->pid = 0;
	return err;
}

/* The condition-wait probes on glibc file F (at PATH), for every traced process mapping it. */
void gil_libc_attach(struct gil_state *st, struct record_ctx *ctx, struct gil_file *f,
		     const char *path, const char *name)
{
	f->cond_tried = 1;
	f->cond_ok =
		!probe(st->uprobes, &f->links[L_COND], st->skel->progs.gil_cond_enter, 0, 0, path,
		       &f->cond_off, 1, "pthread_cond_timedwait", name) &&
		!probe(st->uprobes, &f->links[L_COND_RET], st->skel->progs.gil_exit,
		       BS_GIL_EXIT_COND, 0, path, &f->cond_off, 1, "pthread_cond_timedwait", name);
}

void gil_proc_unlink_mutex(struct gil_proc *p)
{
	for (int i = 0; i < 2; i++)
		uprobe_links__detach(&p->mutex[i]);
	p->mutex_on = 0;
	p->mutex_wanted = 0;
}

/* The per-process mutex probes proc_check asked for; 0 when attached. */
int gil_proc_link_mutex(struct gil_state *st, struct record_ctx *ctx, struct gil_proc *p)
{
	int enter, exit;

	p->mutex_wanted = 0;
	enter = probe(st->uprobes, &p->mutex[0], st->skel->progs.gil_mutex_enter, 0, p->pid,
		      p->libc_path, &p->lll_off, 1, "__lll_lock_wait", p->libc_path);
	exit = probe(st->uprobes, &p->mutex[1], st->skel->progs.gil_exit, BS_GIL_EXIT_MUTEX, p->pid,
		     p->libc_path, &p->lll_off, 1, "__lll_lock_wait", p->libc_path);
	if (!enter && !exit) {
		p->mutex_on = 1;
		return 0;
	}
	gil_proc_unlink_mutex(p);
	p->mutex_failed = 1;
	return -ENOENT;
}
