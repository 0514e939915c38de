// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The cupti-shim channel: finding shims, attaching, draining (see shim_link.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "env.h"
#include "family.h"
#include "family_record.h"
#include "family_attach.h"
#include "join_holds.h"
#include "proc_meta.h"
#include "record_ctx.h"
#include "shim_blob.h"
#include "shim_cookie.h"
#include "shim_family.h"
#include "shim_inject.h"
#include "shim_link.h"
#include "shim_sites.h"
#include "hmap.h"
#include "human.h"
#include "uprobe_mgr.h"
#include "uprobe_multi.h"
#include "usdt_notes.h"
#include "shim_waker.h"
#include "shim.skel.h"
#include "msg.h"

struct shim_file {
	int fd; /* held open: attaches later (per pid, drain) name it /proc/self/fd/N */
	char *shown;
	struct sites base;		    /* batch + the control probes wanted */
	struct sites drain;		    /* attached only at the end */
	struct sites join;		    /* held a while after the base (join_holds.h) */
	struct uprobe_links all, all_drain; /* -a: every process */
};

struct shim_pid {
	struct shim_file *file;
	struct uprobe_links links, drain;
	int attached;
};

struct shim_link {
	struct record_ctx *ctx;
	struct shim_bpf *skel;
	struct shim_unpack *unpack;
	/*
	 * The shim families attached (bit i: families[i]): the first in the registry's order
	 * handles each record, tick and stop for all (handler); every one that ever attached
	 * chose the sites (want).
	 */
	__u64 users, want;
	struct shim_file **files;
	__u32 nfiles;
	struct hmap *pids;	    /* (pid, struct shim_file *) -> struct shim_pid */
	struct hmap *cuda_pids;	    /* (pid) -> its shim was woken when it mapped libcuda */
	struct shim_inject *inject; /* --inject */
	struct join_holds *joins;
	int listener; /* its id with the manager, -1 before */
	int warned_targets, stopped;
};

/* What each family's state points to. */
struct shim_user {
	struct shim_link *l;
	const struct family *f;
};

/*
 * Probes on the shim's file for every process that maps it: -a without --exclude-* (every
 * process is traced). Else each process's own (launch mode, -p, -a's not excluded).
 */
static int every_process(const struct shim_link *l)
{
	return l->ctx->opts->system_wide && !record_opts__excludes(l->ctx->opts);
}

/* ---- sites ---- */

static void file_free(struct shim_file *f)
{
	if (!f)
		return;
	uprobe_links__detach(&f->all);
	uprobe_links__detach(&f->all_drain);
	shim_sites__free(&f->base);
	shim_sites__free(&f->drain);
	shim_sites__free(&f->join);
	if (f->fd >= 0)
		close(f->fd);
	free(f->shown);
	free(f);
}

/*
 * The sites of a shim's notes that this recording attaches; -errno when it is unusable.
 * The kernel installs a link's probes (and bumps their semaphores) in array order: the
 * batch sites go last, so that a shim seeing a tracer attached already sees all it wants.
 */
/* Whether a family this recording has wants its control site NAME. */
/* A control site this recording wants: named NAME, or (NAME NULL) one that needs libcuda. */
static int site_wanted(const struct shim_link *l, const char *name)
{
	for_each_family(fit) {
		const struct family_shim *s = fit.f->record->shim;

		if (!s || !(l->want & (1ull << fit.i)))
			continue;
		for (const struct shim_site *t = s->sites; t && t->name; t++)
			if (!t->stack_type && (name ? !strcmp(t->name, name) : t->needs_libcuda) &&
			    (!t->wanted || t->wanted(l->ctx->opts)))
				return 1;
	}
	return 0;
}

/* SHIM_PROBE_STACK + K of the stack site NAME when --stacks names its family, else 0. */
static int stack_wanted(const struct shim_link *l, const char *name)
{
	int fi, k = shim_family__stack_site(name, &fi);

	if (k < 0 || !(l->want & (1ull << fi)) ||
	    record_opts__stack_ns(l->ctx->opts, families[fi]) == RECORD_STACKS_OFF)
		return 0;
	return SHIM_PROBE_STACK + k;
}

/* The stack sites' event types and thresholds, for BPF (before the object is loaded). */
static void stack_rodata(struct shim_bpf *skel, const struct record_opts *o)
{
	const struct shim_site *t;
	int fi;

	for (int k = 0; k < SHIM_STACK_SITES && (t = shim_family__stack_slot(k, &fi)); k++) {
		__u64 ns = record_opts__stack_ns(o, families[fi]);

		if (!(o->families & (1ull << fi)) || ns == RECORD_STACKS_OFF)
			continue;
		skel->rodata->shim_stack_ns[k] = ns;
		skel->rodata->shim_stack_type[k] = t->stack_type;
		skel->rodata->shim_stacks_on = 1;
	}
}

/*
 * A stack site this recording wants that the shim of F lacks (a shim older than the option):
 * its events come without stacks, said once per file.
 */
static void stack_sites_missing(const struct shim_link *l, const struct shim_file *f, __u32 found)
{
	const struct shim_site *t;
	int fi;

	for (int k = 0; k < SHIM_STACK_SITES && (t = shim_family__stack_slot(k, &fi)); k++)
		if (!(found & (1u << k)) && stack_wanted(l, t->name))
			pr_warn("%s has no bpfsight:%s site (an older cupti-shim): --stacks=%s "
				"gives its events no stack there\n",
				f->shown, t->name, families[fi]->name);
}

static int file_sites(struct shim_link *l, struct shim_file *f, const struct usdt_notes *n)
{
	__u32 cnt = usdt_notes__count(n), stacks = 0;
	int err, batches = 0;

	for (__u32 k = 0; k < 2 * cnt; k++) {
		const struct usdt_note *u = usdt_notes__get(n, k % cnt);
		int id = strcmp(u->provider, "bpfsight") ? 0
			 : shim_sites__probe_id(u->name) ? shim_sites__probe_id(u->name)
			 : stack_wanted(l, u->name)	 ? stack_wanted(l, u->name)
			 : site_wanted(l, u->name)	 ? SHIM_PROBE_CONTROL
							 : 0;
		__u32 a0 = 0, a1 = 0;

		if (!id || (k < cnt) == (id == SHIM_PROBE_BATCH))
			continue; /* first pass: control and stack probes; second: batch */
		if (id >= SHIM_PROBE_STACK)
			stacks |= 1u << (id - SHIM_PROBE_STACK);
		if (id == SHIM_PROBE_BATCH || id >= SHIM_PROBE_STACK) {
			/* The probes whose arguments BPF reads: they must be understood. */
			if (u->args_err || u->nargs < 2 || !(a0 = usdt_arg__spec(&u->arg[0])) ||
			    !(a1 = usdt_arg__spec(&u->arg[1]))) {
				pr_warn("%s: bpfsight:%s "
					"arguments '%s' are not understood; site skipped\n",
					f->shown, u->name, u->args);
				continue;
			}
			batches += id == SHIM_PROBE_BATCH;
		}
		err = shim_sites__add(id == SHIM_PROBE_DRAIN  ? &f->drain
				      : id == SHIM_PROBE_JOIN ? &f->join
							      : &f->base,
				      u->pc_off, u->sema_off, SHIM_COOKIE(id, a0, a1));
		if (err)
			return err;
	}
	if (batches)
		stack_sites_missing(l, f, stacks);
	return batches ? 0 : -ENOENT;
}

static int links_attach(struct shim_link *l, struct uprobe_links *links, const struct sites *s,
			int fd, pid_t pid)
{
	struct uprobe_multi_opts o = { .cookies = s->cookie,
				       .ref_ctr_offsets = s->ref,
				       .pid = pid };
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return uprobe_links__attach(links, l->skel->progs.shim_probe, path, s->off, s->n, &o);
}

/*
 * N probes of WHAT did not attach: each is a loss (as LOSS records count probes). The kernel
 * answers EINVAL when another tracer (perf probe, a raw uprobe) already probes one of these
 * places without its USDT semaphore: a uprobe has one reference counter or none.
 */
static void attach_failed(struct shim_link *l, char *what, size_t size, int err, __u32 n)
{
	/* The channel's losses are one family's, whichever families it carries the records of. */
	const char *family = shim_family__channel()->name;
	size_t len = strlen(what);

	if (err == -EINVAL)
		snprintf(what + len, size - len,
			 " (another tracer probing the same place without the semaphore?)");
	record_ctx__attach_failed(l->ctx, family, what, err);
	record_ctx__lost(l->ctx, family, BS_LOSS_ATTACH, n - 1);
}

/*
 * The join sites after the batch sites, held a while (join_holds.h): a shim already in
 * another tracer's session sends this one what it missed. Without them (an older shim, an
 * attach refused) this recording lacks only the names sent before it came.
 */
static void join_take(struct shim_link *l, const struct shim_file *f, pid_t pid)
{
	if (f->join.n)
		join_holds__take(l->joins, f, pid, mono_now_ns());
}

static int join_attach(void *arg, const void *file, pid_t pid, struct uprobe_links *out)
{
	const struct shim_file *f = file;
	int err = links_attach(arg, out, &f->join, f->fd, pid);

	/* Taken again after a gap: a shim asleep with nothing on sees the rise now. */
	if (!err && pid)
		shim_waker__wake(pid);
	return err;
}

/*
 * Every process this recording saw map a shim: a shim asleep with nothing on (shim_core.c)
 * reads its semaphores now that they changed (a drain attached, the links gone).
 */
static void wake_all(struct shim_link *l)
{
	struct hkey k;
	size_t it = 0;

	while (l->pids && hmap__next(l->pids, &it, &k))
		if (proc_meta__alive((pid_t)k.a))
			shim_waker__wake((pid_t)k.a);
}

/* The shim of PID answered (ATTACH, JOIN): this recording's join hold there is done. */
static void join_answered(void *arg, __u32 pid)
{
	join_holds__answered(((struct shim_link *)arg)->joins, (pid_t)pid);
}

/* ---- the uprobe manager's listener ---- */

/*
 * What on_file keeps for libcuda when GPU activity is wanted: an injected or preloaded shim
 * that has none sleeps (nothing to give), and starts CUPTI once woken after it is mapped.
 */
static char libcuda_cookie;

static int is_libcuda(const char *shown)
{
	return !strncmp(human__base(shown), "libcuda.so", strlen("libcuda.so"));
}

static void *on_file(void *arg, const char *path, const char *shown, const struct elf_syms *syms)
{
	struct shim_link *l = arg;
	struct usdt_notes *n;
	struct shim_file *f = NULL, **nf;
	char what[PATH_MAX + 64];
	int err;

	if (is_libcuda(shown))
		return site_wanted(l, NULL) && !l->ctx->opts->dry_run ? &libcuda_cookie : NULL;
	n = usdt_notes__open(path);
	if (!n || !usdt_notes__has_provider(n, "bpfsight") || l->ctx->opts->dry_run)
		goto out;
	f = calloc(1, sizeof(*f));
	if (!f)
		goto out;
	f->all.fd = f->all_drain.fd = -1;
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	f->shown = strdup(shown);
	err = f->fd < 0 ? -errno : !f->shown ? -ENOMEM : file_sites(l, f, n);
	if (!err && !(nf = realloc(l->files, (l->nfiles + 1) * sizeof(*nf))))
		err = -ENOMEM;
	if (err) {
		if (err == -ENOENT)
			pr_warn("%s has bpfsight probes but no "
				"usable bpfsight:batch: not a cupti-shim this bpfsight can read\n",
				shown);
		file_free(f);
		f = NULL;
		goto out;
	}
	l->files = nf;
	l->files[l->nfiles++] = f;
	if (every_process(l)) {
		/* Every process mapping it, now and later: the semaphores follow the file. */
		err = links_attach(l, &f->all, &f->base, f->fd, 0);
		if (err) {
			snprintf(what, sizeof(what), "%u cupti-shim probes in %s", f->base.n,
				 shown);
			attach_failed(l, what, sizeof(what), err, f->base.n);
		} else {
			join_take(l, f, 0);
		}
	}
out:
	usdt_notes__free(n);
	return f;
}

static int maps_shim(struct shim_link *l, pid_t pid);

/* PATH is not needed: the file is attached through the fd held since on_file. */
static void on_mapped(void *arg, void *cookie, pid_t pid, const char *path,
		      const struct uprobe_mapping *mp)
{
	struct shim_link *l = arg;
	struct shim_file *f = cookie;
	struct shim_pid *p;
	char what[PATH_MAX + 64];
	int *woken, err;

	if (cookie == &libcuda_cookie) {
		/* Once per process, once it has a shim (mapped first, the shim's attach woke it). */
		woken = maps_shim(l, pid) ? hmap__get(l->cuda_pids, (struct hkey){ pid }, 1) : NULL;
		if (woken && !*woken)
			*woken = 1, shim_waker__wake(pid);
		return;
	}
	/* Per (process, file): a process may map two shims (one per exec'd image, say). */
	p = hmap__get(l->pids, (struct hkey){ (__u64)pid, (__u64)(uintptr_t)f }, 1);
	if (!p || p->file)
		return; /* known (a rescan) */
	p->file = f;
	if (shim_inject__sent(l->inject, pid))
		pr_info("--inject: pid %d: the cupti-shim is loaded (%s)\n", pid, f->shown);
	if (every_process(l)) {
		/* The file's link covers it (attached in on_file): a shim asleep is woken. */
		shim_waker__wake(pid);
		return;
	}
	/* This process only: others mapping the same file keep their semaphores at 0. */
	err = links_attach(l, &p->links, &f->base, f->fd, pid);
	if (err) {
		snprintf(what, sizeof(what), "%u cupti-shim probes in %s for pid %d", f->base.n,
			 f->shown, pid);
		attach_failed(l, what, sizeof(what), err, f->base.n);
		return;
	}
	p->attached = 1;
	join_take(l, f, pid);
	/* Its semaphores are up: a shim that sleeps between recordings reads them now. */
	shim_waker__wake(pid);
}

static int has_shim(void *arg, pid_t pid)
{
	return maps_shim(arg, pid);
}

/* The first scan is done: who has a shim is known, --inject gives one to who has not. */
static void on_started(void *arg)
{
	struct shim_link *l = arg;

	for_each_family_while(fam_it, l->inject)
		if ((l->want & (1ull << fam_it.i)) && fam_it.f->record->shim->inject_note)
			pr_note("--inject: %s\n", fam_it.f->record->shim->inject_note);
	shim_inject__run(l->inject, has_shim, l);
}

/* ---- lifecycle ---- */

void shim_link__free(struct shim_link *l)
{
	size_t it = 0;
	struct shim_pid *p;

	if (!l)
		return;
	join_holds__free(l->joins);
	while (l->pids && (p = hmap__next(l->pids, &it, NULL))) {
		uprobe_links__detach(&p->links);
		uprobe_links__detach(&p->drain);
	}
	for (__u32 i = 0; i < l->nfiles; i++)
		file_free(l->files[i]);
	wake_all(l); /* their semaphores fell: a shim asleep with nothing on turns off now */
	free(l->files);
	l->files = NULL;
	l->nfiles = 0;
	/* Nothing can produce a batch now: unpack what is still in the ring. */
	while (l->ctx->pump && record_ctx__poll(l->ctx, 0) > 0)
		;
	if (l->unpack && l->ctx->pump)
		shim_unpack__finish(l->unpack);
	shim_unpack__free(l->unpack);
	l->unpack = NULL;
	hmap__free(l->pids);
	hmap__free(l->cuda_pids);
	shim_inject__free(l->inject);
	shim_bpf__destroy(l->skel);
	free(l);
}

__u16 shim_link_consumes[BS_REC_TYPE_MAX + 1];

/* What the channel and the registry's shim families' ring hooks take (shim_unpack__record). */
static void fill_consumes(void)
{
	__u8 want[BS_REC_TYPE_MAX] = { [BS_REC_SHIM_BATCH] = 1,
				       [BS_REC_THREAD_NS] = 1,
				       [BS_REC_FORK] = 1,
				       [BS_REC_EXEC] = 1,
				       [BS_REC_EXIT] = 1 };
	int n = 0;

	for_each_family(fit)
		for (const __u16 *t = fit.f->record->shim ? fit.f->record->shim->ring_types : NULL;
		     t && *t; t++)
			if (*t < BS_REC_TYPE_MAX)
				want[*t] = 1;
	for (int t = 1; t < BS_REC_TYPE_MAX; t++)
		if (want[t])
			shim_link_consumes[n++] = (__u16)t;
	shim_link_consumes[n] = 0;
}

struct shim_link *shim_link__new(struct record_ctx *ctx, struct uprobe_mgr *mgr, int *err)
{
	struct shim_link *l = calloc(1, sizeof(*l));
	struct uprobe_listener lis = {
		.file = on_file, .mapped = on_mapped, .started = on_started, .arg = l
	};

	*err = -ENOMEM;
	if (!l)
		return NULL;
	fill_consumes();
	l->ctx = ctx;
	l->listener = -1;
	l->pids = hmap__new(sizeof(struct shim_pid));
	l->cuda_pids = hmap__new(sizeof(int));
	l->joins = join_holds__new(join_attach, l);
	l->skel = shim_bpf__open();
	if (!l->pids || !l->cuda_pids || !l->joins || !l->skel) {
		*err = l->skel ? -ENOMEM : -errno;
		goto fail;
	}
	RECORD_CTX_SET_COMMON_RODATA(l->skel, ctx, loss__block_family(BS_REC_SHIM_BATCH));
	stack_rodata(l->skel, ctx->opts);
	if (uprobe_multi__supported())
		uprobe_multi__prepare(l->skel->progs.shim_probe);
	*err = record_ctx__prepare(ctx, l->skel->obj);
	if (!*err)
		*err = shim_bpf__load(l->skel);
	if (*err)
		goto fail;
	l->unpack = shim_unpack__new(ctx, bpf_map__fd(l->skel->maps.shim_gaps));
	if (!l->unpack) {
		*err = -ENOMEM;
		goto fail;
	}
	shim_unpack__on_answer(l->unpack, join_answered, l);
	if (!mgr) {
		*err = -EINVAL;
		goto fail;
	}
	l->listener = *err = uprobe_mgr__add_listener(mgr, &lis);
	if (*err < 0)
		goto fail;
	if (ctx->opts->inject && !(l->inject = shim_inject__new(ctx, mgr, err)))
		goto fail;
	*err = 0;
	return l;
fail:
	/* The manager lives on (other families use it): it must not call back into L. */
	uprobe_mgr__remove_listener(mgr, l->listener);
	shim_link__free(l);
	return NULL;
}

static int family_index(const struct family *f)
{
	for_each_family(fit)
		if (fit.f == f)
			return fit.i;
	return -1;
}

int shim_link__attach(const struct family_attach *a, void **state)
{
	struct shim_user *u = calloc(1, sizeof(*u));
	const struct family *f = a->self;
	struct shim_link *l = a->shim;
	int err, i = family_index(f);

	if (!u)
		return -ENOMEM;
	if (i < 0 || !f->record->shim || !l) {
		free(u);
		return -EINVAL;
	}
	/* Families attach before the first scan: the sites of every want are chosen then. */
	err = shim_unpack__want(l->unpack, f);
	if (err) {
		free(u);
		return err;
	}
	l->want |= 1ull << i;
	l->users |= 1ull << i;
	u->l = l;
	u->f = f;
	*state = u;
	return 0;
}

/* Whether U's family handles the channel's records, ticks and stop (the first attached). */
static int handles(const struct shim_user *u)
{
	return u && u->l->users && families[__builtin_ctzll(u->l->users)] == u->f;
}

void shim_link__detach(struct record_ctx *ctx, void *state)
{
	struct shim_user *u = state;
	struct shim_link *l;
	int i;

	if (!u)
		return;
	l = u->l;
	i = family_index(u->f);
	/* The families that stay handle the records from now on, the first of them. */
	if (i >= 0)
		l->users &= ~(1ull << i);
	free(u);
}

/*
 * PID exited: its per-process links (launch mode, -p and the children they follow) are
 * detached and its entries go, so that process churn holds no links, fds or memory.
 */
static void pid_gone(struct shim_link *l, __u32 pid)
{
	const struct record_opts *o = l->ctx->opts;
	struct hkey k, *dead = NULL, *more;
	size_t it = 0, n = 0;
	struct shim_pid *p;
	int target = 0;

	/* A -p target's entries stay (without links): the end of the recording says whether
	 * it had a shim (warn_targets). */
	for (__u32 i = 0; i < o->npids; i++)
		target |= o->pids[i] == (pid_t)pid;
	while ((p = hmap__next(l->pids, &it, &k))) {
		if (k.a != pid)
			continue;
		if (target) {
			uprobe_links__detach(&p->links);
			uprobe_links__detach(&p->drain);
			continue;
		}
		if (!(more = realloc(dead, (n + 1) * sizeof(*dead))))
			break; /* kept until the recording ends */
		dead = more;
		dead[n++] = k;
		uprobe_links__detach(&p->links);
		uprobe_links__detach(&p->drain);
	}
	while (n--)
		hmap__del(l->pids, dead[n]); /* deleting moves values: keys first */
	hmap__del(l->cuda_pids, (struct hkey){ pid });
	free(dead);
	shim_inject__proc_exit(l->inject, (pid_t)pid);
}

int shim_link__consume(struct record_ctx *ctx, void *state, const struct bs_hdr *rec)
{
	struct shim_user *u = state;
	int ret;

	/* Every shim family forwards every record: one of them handles it. */
	if (!handles(u) || !u->l->unpack)
		return 0;
	ret = shim_unpack__record(u->l->unpack, rec);
	if (rec->type == BS_REC_EXIT && rec->size >= sizeof(struct bs_exit) &&
	    ((const struct bs_exit *)rec)->group_dead)
		pid_gone(u->l, rec->pid);
	return ret;
}

/* VAR's value in PID's initial environment: 0, or -ENOENT. */
static int environ_get(pid_t pid, const char *var, char *val, size_t len)
{
	size_t vlen = strlen(var), n;
	char fn[64], *buf, *p;
	FILE *f;
	int err = -ENOENT;

	snprintf(fn, sizeof(fn), "/proc/%d/environ", pid);
	f = fopen(fn, "re");
	buf = malloc(1 << 20);
	if (!f || !buf)
		goto out;
	n = fread(buf, 1, (1 << 20) - 1, f);
	buf[n] = 0;
	for (p = buf; p < buf + n; p += strlen(p) + 1) {
		if (strncmp(p, var, vlen) || p[vlen] != '=')
			continue;
		snprintf(val, len, "%s", p + vlen + 1);
		err = 0;
		break;
	}
out:
	if (f)
		fclose(f);
	free(buf);
	return err;
}

static int maps_shim(struct shim_link *l, pid_t pid)
{
	if (!l)
		return 0;

	struct hkey k;
	size_t it = 0;

	while (hmap__next(l->pids, &it, &k))
		if (k.a == (__u64)pid)
			return 1;
	return 0;
}

/* The recorder's STATUS record for PID: it has no shim, and WHY (shown by info, shim_sum). */
static void note_no_shim(struct shim_link *l, pid_t pid, const char *why)
{
	struct bs_shim_status s;

	memset(&s, 0, sizeof(s));
	record_ctx__hdr(&s.h, BS_REC_SHIM_STATUS, sizeof(s), (__u32)pid, (__u32)pid, 0);
	s.event = BS_SHIM_EV_NO_SHIM;
	s.detail_id = record_ctx__intern(l->ctx, why);
	record_ctx__write(l->ctx, &s);
}

/* -p processes that have no shim: say how to give them one, never a silent empty trace. */
static void warn_targets(struct shim_link *l)
{
	const struct record_opts *o = l->ctx->opts;
	char why[512], inject[128];

	if (l->warned_targets++)
		return;
	/* monitor has no --inject: one short record with it loads the shim, which stays. */
	if (o->cmd_name)
		snprintf(inject, sizeof(inject),
			 "run `bpfsight record -p PID -t %s --inject -d 1s` once",
			 shim_family__channel()->name);
	else
		snprintf(inject, sizeof(inject), "record it with --inject");
	/* The -p targets named, not the children they brought (target_tree.h): said once. */
	for (__u32 i = 0; i < o->npids - o->nchildren; i++) {
		pid_t pid = o->pids[i];
		const char *failed = shim_inject__failure(l->inject, pid);
		int noted = 0;

		if (maps_shim(l, pid))
			continue;
		if (failed) {
			/* Said when it was refused. */
			snprintf(why, sizeof(why), "--inject refused: %s", failed);
			note_no_shim(l, pid, why);
			continue;
		}
		if (shim_inject__sent(l->inject, pid)) {
			pr_warn("pid %d: the cupti-shim injected "
				"into it never appeared in its mappings (its dlopen failed?)\n",
				pid);
			note_no_shim(l, pid, "--inject: the injected dlopen did not load the shim");
			continue;
		}
		for_each_family(fit) {
			const struct shim_hint *h;
			char val[PATH_MAX];

			/* Asked for: named by -t, or opt-in (pyfunc, which --python-functions
			 * brings): the default set's shim families are not a user's demand. */
			if (!(l->want & (1ull << fit.i)) ||
			    !(o->families_explicit || (fit.f->flags & FAMILY_OPT_IN)))
				continue;
			h = &fit.f->record->shim->hint;
			if (!environ_get(pid, h->var, val, sizeof(val)))
				pr_note("pid %d has %s=%s but has not "
					"loaded it yet (it does at cuInit or the first NVTX call)\n",
					pid, h->var, val);
			else
				pr_warn("pid %d was not started "
					"with the cupti-shim: %s cannot be recorded from it. Either "
					"%s (loads the shim into the running process, where it "
					"stays), or start the job with %s=<shim>%s in its "
					"environment once (`bpfsight shim --print-env` installs the "
					"shim and prints the lines); later recordings then switch it "
					"on and off without a restart\n",
					pid, h->what, inject, h->var, h->also);
			if (!noted++) {
				snprintf(
					why, sizeof(why),
					"not started with the cupti-shim: record with --inject, or "
					"start it with %s=<shim>%s",
					h->var, h->also);
				note_no_shim(l, pid, why);
			}
		}
	}
}

int shim_link__unreachable(struct record_ctx *ctx, void *state)
{
	const struct shim_user *u = state;
	const struct record_opts *o = ctx->opts;
	char val[PATH_MAX];

	if (!u || o->cmd || o->system_wide || o->inject || !o->npids)
		return 0; /* a launched CMD, new processes or --inject may bring one */
	for (__u32 i = 0; i < o->npids; i++)
		if (maps_shim(u->l, o->pids[i]) ||
		    !environ_get(o->pids[i], u->f->record->shim->hint.var, val, sizeof(val)))
			return 0;
	return 1;
}

int shim_link__poll(struct record_ctx *ctx, void *state)
{
	struct shim_user *u = state;

	if (!handles(u))
		return 0;
	shim_unpack__tick(u->l->unpack, mono_now_ns());
	join_holds__poll(u->l->joins, mono_now_ns());
	if (ctx->opts->system_wide)
		shim_inject__run(u->l->inject, has_shim, u->l); /* -a: CUDA users seen since */
	/* With --inject the shim arrives by a dlopen still being noticed: judge at the end. */
	if (!ctx->opts->inject)
		warn_targets(u->l);
	return 0;
}

/* 1 while P still owes us its final flush. */
static int owes_drain(const struct shim_proc *p)
{
	return (p->flags & SHIM_PROC_SENT) && !(p->flags & SHIM_PROC_DRAINED) &&
	       proc_meta__alive(p->pid);
}

static int drain_attach(struct shim_link *l)
{
	struct shim_pid *p;
	struct hkey k;
	size_t it = 0;
	int n = 0;

	if (every_process(l)) {
		for (__u32 i = 0; i < l->nfiles; i++)
			if (l->files[i]->drain.n &&
			    !links_attach(l, &l->files[i]->all_drain, &l->files[i]->drain,
					  l->files[i]->fd, 0))
				n++;
		return n;
	}
	while ((p = hmap__next(l->pids, &it, &k))) {
		const struct shim_proc *sp = shim_unpack__proc(l->unpack, k.a);

		if (!sp || !owes_drain(sp) || !p->attached || !p->file->drain.n)
			continue;
		if (!links_attach(l, &p->drain, &p->file->drain, p->file->fd, k.a))
			n++;
	}
	return n;
}

void shim_link__stop(struct record_ctx *ctx, void *state)
{
	struct shim_user *u = state;
	struct shim_link *l = handles(u) ? u->l : NULL;
	__u64 deadline = mono_now_ns() + SHIM_DRAIN_MS * 1000000ull;
	const struct shim_proc *sp;
	size_t it;
	int owing;

	if (!l || l->stopped++)
		return;
	/*
	 * Who owes a flush is who sent a batch: those already in the ring count, read first.
	 * Without this a process whose batches (its shim's attach status, a thread's last ops)
	 * still waited for the recorder's next drain was taken for one that sent nothing, and
	 * the records its shim held went unflushed and uncounted (test_torch_stacks' threads
	 * test, under load, once stack records stopped waking the recorder). A storm that keeps
	 * the ring full is read for a tenth of the wait at most: the flush's loop reads on.
	 */
	while (record_ctx__poll(ctx, 0) > 0 && mono_now_ns() < deadline - SHIM_DRAIN_MS * 900000ull)
		;
	warn_targets(l);
	if (!drain_attach(l))
		return;
	wake_all(l); /* a shim asleep with nothing on sees the drain now */
	do {
		record_ctx__poll(ctx, 20);
		owing = 0;
		it = 0;
		while ((sp = shim_unpack__next(l->unpack, &it)))
			owing += owes_drain(sp);
	} while (owing && mono_now_ns() < deadline);
	it = 0;
	while ((sp = shim_unpack__next(l->unpack, &it)))
		if (owes_drain(sp))
			pr_warn("pid %u did not confirm its "
				"cupti-shim flush within %d ms: what it still held is lost\n",
				sp->pid, SHIM_DRAIN_MS);
}

void shim_link__listen(void *state, shim_unpack_fn fn, void *arg)
{
	struct shim_user *u = state;

	if (u && u->l->unpack)
		shim_unpack__listen(u->l->unpack, u->f, fn, arg);
}

/* ---- launch mode ---- */

/* The shim's path for CMD into *PATH: 0, 1 when FAMILY goes without it, or -errno (said). */
static int launch_path(const struct record_opts *o, const char *family, const char **path)
{
	static char buf[PATH_MAX];
	static int err = 1;
	const char *env = env__trusted("BPFSIGHT_SHIM");

	if (err > 0)
		err = shim_blob__path(buf, sizeof(buf)); /* once for every family */
	*path = buf;
	if (!err)
		return 0;
	if (env && *env)
		return err; /* the user's own shim is missing: said, and fatal */
	if (!o->families_explicit)
		return 1; /* the default family set: programs without CUDA lose nothing */
	if (err != -ENOENT)
		return err; /* said by shim_blob__path */
	pr_err("-t %s needs the cupti-shim, and this bpfsight "
	       "was built without it (no %s/include/cupti.h at build time): set "
	       "BPFSIGHT_SHIM=/path/to/libbpfsight-shim.so, or drop %s from -t\n",
	       family, "$CUDA_HOME", family);
	return -ENOENT;
}

/* Launch mode: the shim first in CMD's LD_PRELOAD (a preloaded shim starts itself). */
static int preload(const char *path)
{
	const char *cur = getenv("LD_PRELOAD");
	char *list;
	int err;

	if (cur && strstr(cur, path))
		return 0;
	if (asprintf(&list, "%s%s%s", path, cur && *cur ? ":" : "", cur ? cur : "") < 0)
		return -ENOMEM;
	err = setenv("LD_PRELOAD", list, 1) ? -errno : 0;
	free(list);
	return err;
}

int shim_link__prelaunch(const struct record_opts *o, const struct family *f)
{
	const char *path, *var = f->record->shim->env, *cur = var ? getenv(var) : NULL;
	int err = launch_path(o, f->name, &path);

	if (err)
		return err < 0 ? err : 0;
	if (!var)
		return preload(path);
	if (cur && *cur && strcmp(cur, path)) {
		struct usdt_notes *n = usdt_notes__open(cur);
		int is_shim = n && usdt_notes__has_provider(n, "bpfsight");

		usdt_notes__free(n);
		if (is_shim)
			return 0; /* the job's own copy of a shim: it answers us just the same */
		pr_warn("%s is already set to %s: keeping it, so %s records nothing from this "
			"command%s\n",
			var, cur, f->name,
			f->record->shim->env_kept ? f->record->shim->env_kept : "");
		return 0;
	}
	if (setenv(var, path, 1))
		return -errno;
	return 0;
}

const __u16 shim_ring_only[] = { BS_REC_SHIM_BATCH, 0 };
