// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The sampler's records, from its channel into the recording (on the recording's thread, at
 * each poll and at the stop): each checked before it is trusted, a process's written only
 * when it is a target (or -a), what the sampler says told once, its counters' increments
 * written as losses.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include "gpum_state.h"
#include "hmap.h"
#include "msg.h"
#include "record_ctx.h"

/* NVML's words for what a lost device answered (nvml_api.h's codes). */
static const char *lost_why(__u32 err)
{
	switch (err) {
	case 15:
		return "GPU is lost";
	case 16:
		return "GPU requires reset";
	case 9:
		return "driver not loaded";
	case 28:
		return "GPU not found";
	default:
		return "no answer";
	}
}

/*
 * A process of the recording: -a's, a -p target, the launched CMD, or a child of one (its
 * FORK, observed). The BPF targets map is not asked: a process that exited before the poll
 * that drains its last samples has left it.
 */
static int is_target(struct record_ctx *ctx, struct gpum_state *st, __u32 pid)
{
	const struct record_opts *o = ctx->opts;

	if (o->system_wide || (ctx->launch_pid && (__u32)ctx->launch_pid == pid))
		return 1;
	for (__u32 i = 0; i < o->npids; i++)
		if ((__u32)o->pids[i] == pid)
			return 1;
	return st->children && hmap__get(st->children, (struct hkey){ pid, 0 }, 0);
}

/* A child's FORK adds it, its last thread's EXIT marks when it ended (-a needs neither). */
void gpum_observe(struct record_ctx *ctx, void *state, const struct bs_hdr *rec)
{
	const struct bs_fork *f = (const void *)rec;
	const struct bs_exit *e = (const void *)rec;
	struct gpum_state *st = state;
	__u64 *ended;

	if (ctx->opts->system_wide)
		return;
	if (rec->type == BS_REC_FORK && rec->size >= sizeof(*f) && f->child_pid == f->child_tid) {
		if (!st->children)
			st->children = hmap__new(sizeof(__u64));
		if (st->children &&
		    (ended = hmap__get(st->children, (struct hkey){ f->child_pid, 0 }, 1)))
			*ended = 0; /* a recycled pid's earlier process is over */
	} else if (rec->type == BS_REC_EXIT && rec->size >= sizeof(*e) && e->group_dead &&
		   st->children &&
		   (ended = hmap__get(st->children, (struct hkey){ rec->pid, 0 }, 0))) {
		*ended = rec->ts ? rec->ts : 1;
	}
}

/*
 * Children that ended over GPUM_CHILD_KEEP_NS ago go (churn fills nothing): their samples
 * have been drained by then.
 */
void gpum_forget_children(struct gpum_state *st, __u64 now)
{
	struct hkey k, gone[64];
	__u64 *ended;
	size_t it, n;

	do {
		for (it = n = 0;
		     st->children && n < 64 && (ended = hmap__next(st->children, &it, &k));)
			if (*ended && now > *ended + GPUM_CHILD_KEEP_NS)
				gone[n++] = k;
		for (size_t i = 0; i < n; i++)
			hmap__del(st->children, gone[i]);
	} while (n == 64);
}

static void said_status(struct gpum_state *st, const struct bs_gpum_status *s)
{
	char text[GPUM_STATUS_TEXT + 1];

	memcpy(text, s->text, GPUM_STATUS_TEXT);
	text[GPUM_STATUS_TEXT] = 0;
	st->state = s->state;
	st->hz_now = s->hz;
	st->ndev = s->ndevices;
	switch (s->state) {
	case BS_GPUM_RUNNING:
		if (s->hz && s->hz < s->hz_asked)
			pr_warn("gpumetrics: %s\n", text);
		else if (st->verbose)
			pr_info("gpumetrics: sampling %u GPU%s at %u Hz (%s)\n", s->ndevices,
				s->ndevices == 1 ? "" : "s", s->hz, text);
		break;
	case BS_GPUM_NO_NVML:
		pr_warn("gpumetrics: no NVIDIA driver here (%s): no GPU metrics are recorded\n",
			text);
		break;
	case BS_GPUM_NVML_FAILED:
	case BS_GPUM_NO_DEVICE:
		pr_warn("gpumetrics: %s: no GPU metrics are recorded\n", text);
		break;
	default:
		break;
	}
}

static void said_device(struct gpum_state *st, const struct bs_gpum_device *d)
{
	if (d->device >= GPUM_MAX_DEVICES || !(d->flags & BS_GPUM_DEV_LOST) ||
	    (st->said_lost & (1ull << d->device)))
		return;
	st->said_lost |= 1ull << d->device;
	pr_warn("gpumetrics: GPU %u (%.*s) stopped answering NVML (%s): its samples are counted "
		"lost from here on; the recording goes on\n",
		d->device, GPUM_NAME_LEN, d->name, lost_why(d->lost_err));
}

/* One record of the channel, checked: 0 to write it, 1 to leave it out. */
static int take(struct record_ctx *ctx, struct gpum_state *st, const struct bs_hdr *h)
{
	switch (h->type) {
	case BS_REC_GPUM_STATUS:
		if (h->size < sizeof(struct bs_gpum_status))
			return 1;
		said_status(st, (const void *)h);
		return 0;
	case BS_REC_GPUM_DEVICE:
		if (h->size < sizeof(struct bs_gpum_device))
			return 1;
		said_device(st, (const void *)h);
		return 0;
	case BS_REC_GPUM_PROC:
		return h->size < sizeof(struct bs_gpum_proc) || !is_target(ctx, st, h->pid);
	case BS_REC_GPUM_KEY:
	case BS_REC_GPUM_SAMPLE:
		return h->size < sizeof(struct bs_gpum_sample);
	default:
		return 1;
	}
}

/* Counter C's increment since the last look, as a loss of CAUSE. */
static void account(struct record_ctx *ctx, const __u64 *c, __u64 *seen, __u32 cause)
{
	__u64 now = __atomic_load_n(c, __ATOMIC_RELAXED);

	if (now > *seen)
		record_ctx__lost(ctx, "gpumetrics", cause, now - *seen);
	*seen = now;
}

void gpum_drain(struct record_ctx *ctx, struct gpum_state *st)
{
	struct gpum_chan *c = st->sp.chan;
	__u64 head, tail;

	if (!c)
		return;
	head = __atomic_load_n(&c->head, __ATOMIC_ACQUIRE);
	tail = c->tail;
	while (tail < head) {
		__u64 at = tail % c->size;
		const struct bs_hdr *h = (const void *)(st->sp.ring + at);

		if (c->size - at < 8 || !h->type) { /* the rest of the ring is skipped */
			tail += c->size - at;
			continue;
		}
		if (h->size < sizeof(*h) || h->size % 8 || h->size > c->size - at ||
		    h->size > head - tail) {
			/* Not what the sampler writes: nothing after it can be trusted. */
			pr_warn("gpumetrics: the sampler's channel is corrupt (a record of %u bytes "
				"at %llu): its records stop here\n",
				h->size, (unsigned long long)tail);
			tail = head;
			gpum_sampler__stop(&st->sp, 0);
			break;
		}
		if (!take(ctx, st, h))
			record_ctx__write(ctx, h);
		tail += h->size;
	}
	__atomic_store_n(&c->tail, tail, __ATOMIC_RELEASE);
	account(ctx, &c->late, &st->seen_late, BS_LOSS_GPUM_LATE);
	account(ctx, &c->full, &st->seen_full, BS_LOSS_GPUM_FULL);
	account(ctx, &c->lost, &st->seen_lost, BS_LOSS_GPUM_LOST);
}

/* A STATUS record written here: the sampler could not run, or ended early. */
void gpum_status(struct record_ctx *ctx, struct gpum_state *st, enum bs_gpum_state state,
		 const char *fmt, ...)
{
	struct bs_gpum_status s;
	va_list ap;

	memset(&s, 0, sizeof(s));
	record_ctx__hdr(&s.h, BS_REC_GPUM_STATUS, sizeof(s), 0, 0, 0);
	s.state = state;
	s.sampler_pid = st->sp.pid > 0 ? (__u32)st->sp.pid : 0;
	s.hz_asked = st->hz;
	s.hz = st->hz_now;
	s.ndevices = st->ndev;
	va_start(ap, fmt);
	vsnprintf(s.text, sizeof(s.text), fmt, ap);
	va_end(ap);
	if (st->sp.chan) {
		s.ticks = __atomic_load_n(&st->sp.chan->ticks, __ATOMIC_ACQUIRE);
		s.cpu_ns = __atomic_load_n(&st->sp.chan->cpu_ns, __ATOMIC_RELAXED);
	}
	st->state = state;
	record_ctx__write(ctx, &s);
}

/*
 * The recording stopped the sampler: what it took and its CPU time, in the file (and said
 * with -v).
 */
void gpum_stopped(struct record_ctx *ctx, struct gpum_state *st)
{
	const struct gpum_chan *c = st->sp.chan;
	__u64 ticks = __atomic_load_n(&c->ticks, __ATOMIC_ACQUIRE);
	__u64 cpu = __atomic_load_n(&c->cpu_ns, __ATOMIC_RELAXED);
	__u64 span = c->last_tick_ns > c->first_tick_ns ? c->last_tick_ns - c->first_tick_ns : 0;

	gpum_status(ctx, st, BS_GPUM_STOPPED, "%llu ticks in %.3f s; its CPU time %.3f ms",
		    (unsigned long long)ticks, span / 1e9, cpu / 1e6);
	if (st->verbose && span)
		pr_info("gpumetrics: %llu ticks over %.3f s (%.0f a second), the sampler's CPU "
			"time %.1f ms (%.2f%% of a core)\n",
			(unsigned long long)ticks, span / 1e9, ticks * 1e9 / span, cpu / 1e6,
			100.0 * cpu / span);
}

/* The sampler ended before the recording: said once, written, the recording goes on. */
void gpum_check_alive(struct record_ctx *ctx, struct gpum_state *st)
{
	int s = st->sp.status;

	if (st->sp.pid <= 0 || st->ended_said || !gpum_sampler__exited(&st->sp))
		return;
	st->ended_said = 1;
	gpum_drain(ctx, st); /* what it wrote last: maybe why */
	s = st->sp.status;
	if (st->state == BS_GPUM_STARTING) { /* it never ran: its program, refused (noexec) */
		pr_warn("gpumetrics: the sampler could not run (%s %d): no GPU metrics are "
			"recorded\n",
			WIFSIGNALED(s) ? "killed by signal" : "exit status",
			WIFSIGNALED(s) ? WTERMSIG(s) : WEXITSTATUS(s));
		gpum_status(ctx, st, BS_GPUM_NO_SAMPLER, "the sampler could not run (%s %d)",
			    WIFSIGNALED(s) ? "killed by signal" : "exit status",
			    WIFSIGNALED(s) ? WTERMSIG(s) : WEXITSTATUS(s));
		return;
	}
	if (st->state != BS_GPUM_RUNNING)
		return; /* it said why it stopped (no NVML, no device) */
	if (WIFSIGNALED(s))
		gpum_status(ctx, st, BS_GPUM_ENDED, "the sampler was killed by signal %d",
			    WTERMSIG(s));
	else
		gpum_status(ctx, st, BS_GPUM_ENDED, "the sampler exited with status %d",
			    WEXITSTATUS(s));
	pr_warn("gpumetrics: the sampler ended (pid %d: %s): no GPU metrics from here on; the "
		"recording goes on\n",
		st->sp.pid, WIFSIGNALED(s) ? "killed" : "exited");
}
