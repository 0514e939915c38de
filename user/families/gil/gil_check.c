// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * How the gil family measures a process: a look at what it maps and at its interpreter's
 * memory (gil_python.c), BPF told where its GIL is (gil_procs), the probes it needs, and a
 * GIL_PROC record saying the method and what it cannot see, written again on change.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "gil_state.h"
#include "msg.h"

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
		pr_info("gil: pid %d: %s %x.%x (%s), method %s%s%s\n", p->pid, py->object,
			py->version >> 24, py->version >> 16 & 0xff, py->how ? py->how : "-",
			gil_method_name(method), *note ? ": " : "", note);
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
		gil_proc_unconfigure(st, p);
		return -errno;
	}
	p->cfg = *cfg;
	p->configured = 1;
	return 0;
}

/*
 * The per-process mutex probe tells drop_gil (the holder) from take_gil by the holder's tid.
 * An attach takes ~0.2-0.5 s here, so with -a it waits for a poll (a few per poll); the
 * condition wait, which sees nearly all of the waiting, is measured meanwhile. Returns
 * BS_GIL_PROC_MUTEX when it is on.
 */
static __u32 want_mutex(struct gil_state *st, struct record_ctx *ctx, struct gil_proc *p,
			const struct gil_file *libc, const char *libc_path)
{
	if (!p->mutex_on && !p->mutex_wanted && !p->mutex_failed) {
		p->mutex_wanted = 1;
		p->lll_off = libc->lll_off;
		free(p->libc_path);
		p->libc_path = strdup(libc_path);
		if (!p->libc_path)
			p->mutex_wanted = 0, p->mutex_failed = 1;
		else if (st->starting || !ctx->opts->system_wide)
			gil_proc_link_mutex(st, ctx, p);
	}
	return p->mutex_on ? BS_GIL_PROC_MUTEX : 0;
}

/*
 * A ready interpreter with glibc's condition wait probed: BPF told where its GIL is, with
 * each measurement it can have (full mode, the mutex probe), and the record says which.
 */
static void configure(struct gil_state *st, struct record_ctx *ctx, struct gil_proc *p,
		      const struct gil_py *py, struct gil_file *libc, __u32 flags)
{
	const char *map_full = "too many python processes (gil_procs map full)";
	struct gil_look *lk = &st->look;
	__u32 method = BS_GIL_METHOD_CONDWAIT;
	struct bs_gil_cfg cfg = py->cfg;
	char note[256] = "";

	cfg.flags = p->configured ? p->cfg.flags : 0;
	/* Waits count from here on; the slower attaches below only add to it. */
	if (cfg_write(st, p, &cfg)) {
		write_proc(ctx, p, py, BS_GIL_METHOD_NONE, flags, map_full);
		return;
	}
	st->measured++;
	if (py->holder_known)
		flags |= BS_GIL_PROC_HOLDER;
	else
		note_add(note, sizeof(note), "holder threads unknown");
	if (py->verified)
		flags |= BS_GIL_PROC_VERIFIED;
	else
		note_add(note, sizeof(note), "GIL address not verified yet");
	if (!st->full) {
		note_add(note, sizeof(note), "holds not measured (--gil-mode=full)");
	} else if (lk->py->full_ok) {
		cfg.flags |= BS_GIL_CFG_FULL;
		method = BS_GIL_METHOD_TAKE_GIL;
	} else {
		note_add(note, sizeof(note),
			 "full mode unavailable: take_gil/drop_gil not found (stripped, no debug "
			 "file): holds not measured");
	}
	if (cfg_write(st, p, &cfg)) {
		write_proc(ctx, p, py, BS_GIL_METHOD_NONE, flags, map_full);
		return;
	}
	if (libc->lll_off && py->holder_known && py->verified &&
	    want_mutex(st, ctx, p, libc, lk->libc_path)) {
		cfg.flags |= BS_GIL_CFG_MUTEX;
		flags |= BS_GIL_PROC_MUTEX;
	}
	if (!(flags & BS_GIL_PROC_MUTEX))
		note_add(
			note, sizeof(note),
			p->mutex_wanted ? "waits on the GIL's mutex not seen yet (probe pending)"
			: libc->lll_off
				? "waits on the GIL's mutex not seen"
				: "waits on the GIL's mutex not seen (no symbols for __lll_lock_wait)");
	if (cfg_write(st, p, &cfg)) {
		write_proc(ctx, p, py, BS_GIL_METHOD_NONE, flags, map_full);
		return;
	}
	write_proc(ctx, p, py, method, flags, note);
}

void gil_proc_check(struct gil_state *st, struct record_ctx *ctx, pid_t pid)
{
	struct gil_look *lk = &st->look;
	struct gil_py *py = &st->py;
	struct gil_file *libc;
	struct gil_proc *p;
	__u32 flags = 0;

	/* The manager is closed (recording stops, the last records drain): no more looks. */
	if (uprobe_mgr__closed(st->uprobes))
		return;
	p = gil_proc_get(st, pid, 1);
	if (!p)
		return;
	p->last_check_ns = mono_now_ns();
	if (gil_look(st, pid) ||
	    (lk->py &&
	     gil_python__inspect(pid, &lk->py->py, lk->py_bias + lk->py->py.rt_vaddr, py))) {
		gil_proc_unconfigure(st, p); /* gone */
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
		if (!p->configured && py->status != GIL_PY_NO_GIL) {
			st->unmeasured++;
			snprintf(st->unmeasured_note, sizeof(st->unmeasured_note), "pid %d: %.200s",
				 pid, py->note);
		}
		gil_proc_unconfigure(st, p);
		write_proc(ctx, p, py,
			   py->status == GIL_PY_NO_GIL ? BS_GIL_METHOD_NO_GIL : BS_GIL_METHOD_NONE,
			   flags, py->note);
		return;
	}
	/* glibc (a container's, or linked into the executable): probed once for all. */
	libc = lk->libc;
	if (libc && !libc->cond_tried)
		gil_libc_attach(st, ctx, libc, lk->libc_path, lk->libc_shown);
	if (!libc || !libc->cond_ok) {
		gil_proc_unconfigure(st, p);
		write_proc(ctx, p, py, BS_GIL_METHOD_NONE, flags,
			   libc ? "the condition-wait probe failed to attach"
				: "no pthread_cond_timedwait found (glibc/musl)");
		return;
	}
	configure(st, ctx, p, py, libc, flags);
}
