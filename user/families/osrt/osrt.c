// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * osrt family, record side: syscall latency probes (bpf/osrt.bpf.c) and the periodic copy
 * of the in-kernel aggregates of short calls into the trace.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "array.h"
#include "osrt.h"
#include "family_attach.h"
#include "kernel_features.h"
#include "record_ctx.h"
#include "hmap.h"
#include "msg.h"
#include "osrt.skel.h"
#include "family_record.h"
#include "family_stats.h"

/* Defaults: a cap sized to the machine (map memory follows the live keys, not the cap). */
#define AGG_MIN_ENTRIES	  131072u
#define AGG_MAX_ENTRIES	  (1u << 21)
#define AGG_PER_CPU	  65536u
#define EVICT_IDLE_POLLS  3 /* polls (s) a key must stay unchanged to be evicted */
#define EVICT_PRESSURE(n) ((n) / 4 * 3)

struct agg_seen {
	__u64 count; /* last written */
	__u64 idle;  /* polls since it changed */
};

struct agg_ent {
	struct bs_syscall_agg_key key;
	struct bs_syscall_agg_val val;
};

struct osrt_state {
	struct osrt_bpf *skel;
	/*
	 * Live keys {pid << 32 | tid, gen << 32 | nr} -> struct agg_seen: only changed aggregates
	 * are written. Rebuilt every poll, so it holds the live keys only.
	 */
	struct hmap *written;
	struct agg_ent *ents; /* one poll's copy of sys_agg */
	size_t cap;
	__u32 max_entries;
	__u32 exits;   /* thread exits seen since the last flush */
	__u32 blocked; /* --osrt-mode blocked: aggregates are of sleeps (BS_AGG_BLOCKED) */
};

/* sys_agg's cap: BPFSIGHT_MAP_ENTRIES=sys_agg=N (tests force a small map), else per CPU. */
static __u32 agg_entries(void)
{
	__u32 forced = record_ctx__map_entries("sys_agg");
	int ncpu = libbpf_num_possible_cpus();
	__u64 n;

	if (forced)
		return forced;
	n = (__u64)(ncpu > 0 ? ncpu : 1) * AGG_PER_CPU;
	return n < AGG_MIN_ENTRIES ? AGG_MIN_ENTRIES : n > AGG_MAX_ENTRIES ? AGG_MAX_ENTRIES : n;
}

static void osrt_state__free(struct osrt_state *st)
{
	osrt_bpf__destroy(st->skel);
	hmap__free(st->written);
	free(st->ents);
	free(st);
}

/*
 * --osrt-mode: blocked runs the switch program alone, exact the syscall programs alone.
 * Blocked needs task storage (tp_btf); without it the recording counts every call, and says so.
 */
static int osrt_pick_mode(struct osrt_state *st, const struct record_opts *o)
{
	struct osrt_bpf *s = st->skel;
	const char *why;
	/* Still to load after the task-storage pick: tp_btf and task storage are there. */
	int blocked = osrt_blocked(o, &why), can = bpf_program__autoload(s->progs.osrt_switch_btf);
	int state = kfeature__has(KF_PREV_STATE), err;

	if (blocked && !can)
		pr_warn("osrt: --osrt-mode blocked needs BPF task storage, which this kernel lacks: "
			"every system call is counted instead\n");
	st->blocked = blocked && can;
	if (st->blocked && record_opts__stack_ns(o, &family_osrt) != RECORD_STACKS_OFF) {
		pr_warn("osrt: --stacks osrt needs --osrt-mode exact (the stack where a call "
			"blocked is sched's: --stacks sched)\n");
		return -EINVAL;
	}
	/* Resolved for the header's options (osrt_mode=) and the metrics' names. */
	((struct osrt_opts *)record_opts__family(o, &family_osrt))->mode =
		st->blocked ? OSRT_MODE_BLOCKED : OSRT_MODE_EXACT;
	if (o->verbose)
		pr_info("osrt: %s (%s)\n",
			st->blocked ? "the system calls that block, timed asleep"
				    : "every system call",
			why);
	/* The switch's prev_state where the tracepoint has it (5.18+), else the task's state. */
	err = bpf_program__set_autoload(s->progs.osrt_switch_btf, st->blocked && state)
		      ?: bpf_program__set_autoload(s->progs.osrt_switch_taskstate_btf,
						   st->blocked && !state);
	if (!err && st->blocked)
		err = bpf_program__set_autoload(s->progs.osrt_enter_btf, 0)
			      ?: bpf_program__set_autoload(s->progs.osrt_exit_btf, 0);
	return err;
}

static int osrt_attach(const struct family_attach *a, void **state)
{
	struct record_ctx *ctx = a->ctx;
	struct osrt_state *st = calloc(1, sizeof(*st));
	int err;

	if (!st)
		return -ENOMEM;
	st->written = hmap__new(sizeof(struct agg_seen));
	st->skel = osrt_bpf__open();
	if (!st->skel || !st->written) {
		err = st->skel ? -ENOMEM : -errno;
		osrt_state__free(st);
		return err;
	}
	RECORD_CTX_SET_COMMON_RODATA(st->skel, ctx, &family_osrt);
	st->skel->rodata->threshold_ns = osrt_opts(ctx->opts)->threshold_ns;
	st->skel->rodata->osrt_stack_ns = record_opts__stack_ns(ctx->opts, &family_osrt);
	st->max_entries = agg_entries();
	err = bpf_map__set_max_entries(st->skel->maps.sys_agg, st->max_entries);
	if (!err)
		err = record_ctx__prepare(ctx, st->skel->obj);
	if (!err)
		/* The call in flight: task storage (tp_btf) or a hash (raw_tp). */
		err = record_ctx__pick_task_storage(ctx, st->skel->obj,
						    st->skel->maps.sys_start_task,
						    st->skel->maps.sys_start);
	if (!err)
		err = osrt_pick_mode(st, ctx->opts);
	if (!err && st->blocked) {
		st->skel->rodata->osrt_stack_ns = ~0ull; /* none: see bpf/osrt.bpf.c */
		st->skel->rodata->blocked_mode = 1;
	}
	if (!err)
		err = osrt_bpf__load(st->skel);
	if (!err)
		err = osrt_bpf__attach(st->skel);
	if (err) {
		osrt_state__free(st);
		return err;
	}
	*state = st;
	return 0;
}

static struct hkey agg_hkey(const struct bs_syscall_agg_key *k)
{
	return (struct hkey){ (__u64)k->pid << 32 | k->tid, (__u64)k->gen << 32 | k->nr };
}

/* FLAGS: BS_AGG_FINAL or 0; the state adds BS_AGG_BLOCKED in blocked mode. */
static void write_agg(struct record_ctx *ctx, const struct osrt_state *st,
		      const struct bs_syscall_agg_key *k, const struct bs_syscall_agg_val *v,
		      __u32 flags)
{
	struct bs_syscall_agg r = {
		.nr = k->nr,
		.flags = flags | (st->blocked ? BS_AGG_BLOCKED : 0),
		.count = v->count,
		.total_ns = v->total_ns,
		.min_ns = v->min_ns,
		.max_ns = v->max_ns,
	};

	record_ctx__hdr(&r.h, BS_REC_SYSCALL_AGG, sizeof(r), k->pid, k->tid, 0);
	record_ctx__write(ctx, &r);
}

/* Copy sys_agg into st->ents; returns the number of entries or -ENOMEM. */
static long osrt_read_aggs(struct osrt_state *st, int fd)
{
	struct bs_syscall_agg_key key, next, *prev = NULL;
	size_t n = 0;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (array__grow((void **)&st->ents, n, &st->cap, sizeof(*st->ents)))
			return -ENOMEM;
		if (bpf_map_lookup_elem(fd, &key, &st->ents[n].val))
			continue;
		st->ents[n++].key = key;
	}
	return (long)n;
}

/*
 * Threads marked dead (sys_dead) before the aggregates are read: their values are final.
 * Returns the set {pid << 32 | tid, gen} (NULL when out of memory).
 */
static struct hmap *osrt_read_dead(int fd)
{
	struct bs_syscall_agg_key key, next, *prev = NULL;
	struct hmap *dead = hmap__new(1);

	while (dead && !bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (!hmap__get(dead, (struct hkey){ (__u64)key.pid << 32 | key.tid, key.gen }, 1)) {
			hmap__free(dead);
			return NULL;
		}
	}
	return dead;
}

/*
 * Under pressure (the map 3/4 full of live threads' keys; leaked keys of threads whose exit
 * mark did not fit in sys_dead look the same), evict the keys unchanged for EVICT_IDLE_POLLS
 * polls: their totals are written as final and the thread's next call of that number counts
 * from zero in a new key. The value is taken and deleted in one step; only a call returning in
 * the instant between a BPF program's lookup and its add could be lost.
 */
static void osrt_evict_idle(struct record_ctx *ctx, struct osrt_state *st, int fd, size_t n)
{
	struct bs_syscall_agg_val v;
	struct agg_seen *seen;
	size_t i;

	for (i = 0; i < n; i++) {
		struct agg_ent *e = &st->ents[i];

		if (!e->val.count)
			continue;
		seen = hmap__get(st->written, agg_hkey(&e->key), 0);
		if (!seen || seen->idle < EVICT_IDLE_POLLS)
			continue;
		if (bpf_map_lookup_and_delete_elem(fd, &e->key, &v))
			continue; /* gone meanwhile, or a kernel before 5.14 */
		write_agg(ctx, st, &e->key, &v, BS_AGG_FINAL);
		seen->count = seen->idle = 0;
	}
}

/*
 * Write the aggregates that changed, and end the life of the keys that are done: a thread
 * that exited gets its final totals written (BS_AGG_FINAL) and its keys deleted, so a map
 * sized for the live threads never fills with dead ones. Finals go first: a recycled tid's
 * new keys must follow the old thread's final in the file.
 */
static int osrt_flush(struct record_ctx *ctx, struct osrt_state *st, int timed)
{
	int fd = bpf_map__fd(st->skel->maps.sys_agg);
	int dead_fd = bpf_map__fd(st->skel->maps.sys_dead);
	struct hmap *dead, *written;
	size_t it = 0, i, live;
	struct hkey hk;
	long n;

	dead = osrt_read_dead(dead_fd);
	written = hmap__new(sizeof(struct agg_seen));
	n = osrt_read_aggs(st, fd);
	if (!dead || !written || n < 0) {
		hmap__free(dead);
		hmap__free(written);
		return -ENOMEM;
	}
	for (i = 0; i < (size_t)n; i++) {
		struct agg_ent *e = &st->ents[i];

		if (!hmap__get(dead,
			       (struct hkey){ (__u64)e->key.pid << 32 | e->key.tid, e->key.gen },
			       0))
			continue;
		write_agg(ctx, st, &e->key, &e->val, BS_AGG_FINAL);
		bpf_map_delete_elem(fd, &e->key);
		e->val.count = 0; /* done: skipped below */
	}
	for (i = 0, live = 0; i < (size_t)n; i++) {
		struct agg_ent *e = &st->ents[i];
		struct agg_seen *old, *seen;
		struct agg_seen now = { e->val.count, 0 };

		if (!e->val.count)
			continue;
		live++;
		old = hmap__get(st->written, agg_hkey(&e->key), 0);
		if (old && old->count == now.count)
			now.idle = old->idle + timed; /* idle time counts in timed polls only */
		else
			write_agg(ctx, st, &e->key, &e->val, 0);
		seen = hmap__get(written, agg_hkey(&e->key), 1);
		if (!seen)
			break;
		*seen = now;
	}
	hmap__free(st->written);
	st->written = written;
	/* The marks read above are handled (also those of threads without aggregates). */
	while (hmap__next(dead, &it, &hk)) {
		struct bs_syscall_agg_key key = { hk.a >> 32, (__u32)hk.a, 0, (__u32)hk.b };

		bpf_map_delete_elem(dead_fd, &key);
	}
	hmap__free(dead);
	st->exits = 0;
	if (live > EVICT_PRESSURE(st->max_entries))
		osrt_evict_idle(ctx, st, fd, (size_t)n);
	return 0;
}

static int osrt_poll(struct record_ctx *ctx, void *state)
{
	return osrt_flush(ctx, state, 1);
}

/*
 * Churn: the keys of exited threads wait for a flush, once a second; a burst of short
 * processes (or a recorder slowed by a loaded machine) could fill the map with them before
 * that. So every MAX_ENTRIES / 8 thread exits the recorder reads also flush early: the map
 * is emptied of dead keys at the pace the exits are read, a whole-map walk per 1/8 of its
 * size of exits.
 */
static void osrt_observe(struct record_ctx *ctx, void *state, const struct bs_hdr *rec)
{
	struct osrt_state *st = state;

	if (rec->type == BS_REC_EXIT && ++st->exits >= st->max_entries / 8 + 1)
		osrt_flush(ctx, st, 0);
}

static const __u16 osrt_observes[] = { BS_REC_EXIT, 0 };

/* -p with the edges: the threads asleep in a call now carry it into the recording. */
static void osrt_at_start(struct record_ctx *ctx, void *state)
{
	struct osrt_state *st = state;

	(void)ctx;
	record_ctx__run_iter(st->skel->links.osrt_start_iter_btf,
			     "read which system calls are in flight as the recording begins");
}

/*
 * With the edges, the calls still in flight at the stop are written by the task iterator once
 * sys_enter and sys_exit are detached (no call ends meanwhile): bpf/osrt.bpf.c.
 */
static void osrt_write_open(struct record_ctx *ctx, struct osrt_state *st)
{
	struct bpf_link *link;

	if (!record_opts__edges(ctx->opts) ||
	    !bpf_program__autoload(st->skel->progs.osrt_stop_iter_btf))
		return;
	st->skel->bss->osrt_stop_ns = ctx->ended_ns;
	link = bpf_program__attach_iter(st->skel->progs.osrt_stop_iter_btf, NULL);
	if (!link) {
		pr_warn("cannot write the system calls still in flight: %s\n", strerror(errno));
		return;
	}
	record_ctx__run_iter(link, "write the system calls still in flight");
	bpf_link__destroy(link);
}

static void osrt_detach(struct record_ctx *ctx, void *state)
{
	struct osrt_state *st = state;

	osrt_bpf__detach(st->skel);
	osrt_write_open(ctx, st);
	osrt_poll(ctx, st); /* final values, after the last probe ran */
	osrt_state__free(st);
}

/* A dump's cut: the system calls in flight then (osrt_open_iter_btf), as their records. */
static void osrt_open_at(struct record_ctx *ctx, void *state, __u64 cut, family_in_flight_fn fn,
			 void *arg)
{
	struct osrt_state *st = state;

	(void)ctx;
	st->skel->bss->osrt_cut_ns = cut;
	record_ctx__iter_records(st->skel->progs.osrt_open_iter_btf, sizeof(struct bs_syscall),
				 "write the system calls open at the dump's cut", fn, arg);
}

/* Cumulative totals since the recording began: a range's reader needs the ones before it. */
static const __u16 osrt_ungated[] = { BS_REC_SYSCALL_AGG, 0 };

static const struct family_record osrt_recording = {
	.nsys_trace = "osrt",	   /* nsys -t */
	.stack_default_ns = 80000, /* --stacks=osrt: calls of 80 us or more (nsys's default) */
	.attach = osrt_attach,
	.poll = osrt_poll,
	.detach = osrt_detach,
	.at_start = osrt_at_start,
	.open_at = osrt_open_at,
	.observe = osrt_observe,
	.observes = osrt_observes,
	.options = osrt_options,
	.opts_size = sizeof(struct osrt_opts),
	.opts_init = osrt_opts_init,
	.opts_describe = osrt_opts_describe,
	.ungated = osrt_ungated,
};

static const struct family_decode osrt_reading = {
	.cumulative = osrt_cumulative,
	.decoders = osrt_decoders,
};

static const struct family_stats osrt_stats = {
	.ledger = &osrt_ledger,
	.reports = osrt_reports,
	.verdict = &osrt_verdict,
	.page = &osrt_page,
};

static const struct loss_cause osrt_losses[] = {
	{ BS_LOSS_OSRT_MISSED, "osrt_missed",
	  "sleeps in system calls (--osrt-mode blocked) whose context switch no program saw" },
	{ 0 },
};

const struct family family_osrt = {
	.name = "osrt",
	.desc = "system call latency (raw_syscalls tracepoints)",
	.losses = osrt_losses,
	.export = &osrt_export,
	.sql = &osrt_sql,
	.metrics = &osrt_metrics,
	.top = &osrt_top,
	.record = &osrt_recording,
	.decode = &osrt_reading,
	.stats = &osrt_stats,
};
