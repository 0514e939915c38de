// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Unpacking the cupti-shim's batches into trace records (see shim_unpack.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "nvtx.h"
#include "capture_gate.h"
#include "elf_syms.h"
#include "record_ctx.h"
#include "proc_meta.h"
#include "order_link.h"
#include "shim_join.h"
#include "shim_tids.h"
#include "shim_batch_check.h"
#include "shim_unpack.h"
#include "hmap.h"
#include "cuda.h"
#include "cuda_records.h"
#include "torch_records.h"
#include "msg.h"

#define BATCH_BYTES (sizeof(struct bs_shim_batch_hdr) + BS_SHIM_BATCH_MAX)
#define MAX_OPEN    256 /* capture ranges open at once */
#define SEQ_WINDOW  64
#define SWEEP_NS    5000000000ull /* how often to look for exits whose record was lost */

struct str {
	char *text;
	__u32 id;     /* the file's id of text (0 = not interned yet) */
	__u32 dem_id; /* the file's id of text demangled */
};

struct proc {
	struct shim_proc pub;
	/*
	 * (shim string id, 0) -> struct str; and (key, 1 << 63 | domain << 32 | kind) -> the file's name
	 * id (in `id`) of each NVTX name heard, so one sent again (a join) is not written twice
	 */
	struct hmap *strs;
	int seq_started;
};

struct open_range {
	__u32 pid, tid;
	__u64 ts;
};

struct shim_unpack {
	struct record_ctx *ctx;
	__u32 want;
	int gaps_fd;
	struct shim_join *join;
	struct shim_tids *tids;
	struct hmap *procs; /* (pid, 0) -> struct proc *: live processes heard from */
	__u64 string_bytes;
	/* --capture-range=nvtx:NAME[@DOMAIN] */
	int capture;
	char *cap_name;
	const char *cap_domain; /* NULL = the default domain, "*" = any */
	struct open_range open[MAX_OPEN];
	__u32 nopen;
	shim_unpack_fn listen; /* shim_unpack__listen */
	void *listen_arg;
	void (*answer)(void *arg, __u32 pid); /* shim_unpack__on_answer */
	void *answer_arg;
	/* what the summary says */
	__u64 bad_batches, lost_records, lost_batches, unresolved, procs_dropped;
	__u64 procs_freed, procs_swept, next_sweep;
	int warned_bad, warned_procs;
	__u64 buf[BATCH_BYTES / 8 + 1]; /* the record being rewritten */
};

struct shim_unpack *shim_unpack__new(struct record_ctx *ctx, __u32 want, int gaps_fd)
{
	struct shim_unpack *u = calloc(1, sizeof(*u));
	const char *cap = ctx->opts->capture_arg;

	if (!u)
		return NULL;
	u->ctx = ctx;
	u->want = want;
	u->gaps_fd = gaps_fd;
	u->procs = hmap__new(sizeof(struct proc *));
	u->tids = shim_tids__new();
	if (!u->procs || !u->tids)
		goto fail;
	if (record_opts__captures(ctx->opts, &family_nvtx) && cap) {
		char *at;

		u->capture = 1;
		u->cap_name = strdup(cap);
		if (!u->cap_name)
			goto fail;
		/* nsys's forms: NAME (default domain), NAME@DOMAIN, NAME@* (any domain). */
		at = strrchr(u->cap_name, '@');
		if (at && at[1]) {
			*at = 0;
			u->cap_domain = at + 1;
		}
	}
	return u;
fail:
	shim_unpack__free(u);
	return NULL;
}

static void emit(void *arg, struct bs_hdr *rec);

static void join_new(struct shim_unpack *u)
{
	u->join = shim_join__new(emit, u);
	/* Without the cuda family no call will come: API records need not wait for one. */
	if (!record_opts__captures(u->ctx->opts, &family_cuda))
		shim_join__no_calls(u->join);
}

static struct proc *proc_get(struct shim_unpack *u, __u32 pid, int create)
{
	struct proc **pp = hmap__get(u->procs, (struct hkey){ pid, 0 }, 0);

	if (pp || !create)
		return pp ? *pp : NULL;
	if (hmap__count(u->procs) >= UNPACK_MAX_PROCS) {
		if (!u->procs_dropped++)
			pr_warn("over %u processes sending cupti-shim "
				"batches at once: the batches of pid %u and of others past the cap "
				"are dropped (counted lost as shim_dropped)\n",
				UNPACK_MAX_PROCS, pid);
		return NULL;
	}
	pp = hmap__get(u->procs, (struct hkey){ pid, 0 }, 1);
	if (!pp || !(*pp = calloc(1, sizeof(**pp))))
		return NULL;
	(*pp)->pub.pid = pid;
	(*pp)->strs = hmap__new(sizeof(struct str));
	if (!u->join && (u->want & SHIM_WANT_GPU))
		join_new(u);
	return *pp;
}

static void strs_free(struct shim_unpack *u, struct proc *p)
{
	size_t it = 0;
	struct str *s;

	while (p->strs && (s = hmap__next(p->strs, &it, NULL))) {
		if (s->text)
			u->string_bytes -= strlen(s->text) + 1;
		free(s->text);
	}
	hmap__free(p->strs);
	p->strs = NULL;
}

/* Holes that BPF did not count itself: lost batches (records unknown: one each). */
static void count_holes(struct shim_unpack *u, struct proc *p, __u64 holes)
{
	__u32 key = p->pub.pid;
	__u64 bpf_gaps = 0, explained;

	if (!holes)
		return;
	if (u->gaps_fd >= 0)
		bpf_map_lookup_elem(u->gaps_fd, &key, &bpf_gaps);
	explained = bpf_gaps > p->pub.gaps_used ? bpf_gaps - p->pub.gaps_used : 0;
	if (explained > holes)
		explained = holes;
	p->pub.gaps_used += explained;
	if (holes > explained) {
		u->lost_batches += holes - explained;
		record_ctx__lost(u->ctx, NULL, BS_LOSS_SHIM, holes - explained);
	}
}

/*
 * P exited and its holes are settled: BPF's gap count of its pid goes, so that a process
 * given the recycled pid does not start with the dead one's gaps.
 */
static void gaps_forget(struct shim_unpack *u, struct proc *p)
{
	__u32 key = p->pub.pid;

	if (u->gaps_fd >= 0)
		bpf_map_delete_elem(u->gaps_fd, &key);
	p->pub.gaps_used = 0;
}

static void seq_settle(struct shim_unpack *u, struct proc *p);

/*
 * PID exited (its batches all came before its exit record: both are the ring's, in order):
 * its holes are final, and everything kept for it goes, here and in the join, so that a
 * node's process churn cannot grow the recorder and a recycled pid starts clean.
 */
static void proc_gone(struct shim_unpack *u, __u32 pid)
{
	struct proc *p = proc_get(u, pid, 0);

	if (p) {
		seq_settle(u, p);
		gaps_forget(u, p);
		strs_free(u, p);
		free(p);
		hmap__del(u->procs, (struct hkey){ pid, 0 });
		u->procs_freed++;
	}
	shim_join__proc_exit(u->join, pid);
	shim_tids__proc_exit(u->tids, pid);
}

/*
 * An exit record can be lost (ring full): now and then, the processes kept that are gone
 * are let go as if it had come.
 */
static void sweep(struct shim_unpack *u, __u64 now)
{
	__u32 *dead = NULL, *more;
	size_t it = 0, n = 0;
	struct proc **pp;

	if (now < u->next_sweep)
		return;
	u->next_sweep = now + SWEEP_NS;
	while ((pp = hmap__next(u->procs, &it, NULL))) {
		if (proc_meta__alive((*pp)->pub.pid))
			continue;
		if (!(more = realloc(dead, (n + 1) * sizeof(*dead))))
			break;
		dead = more;
		dead[n++] = (*pp)->pub.pid;
	}
	for (size_t i = 0; i < n; i++)
		proc_gone(u, dead[i]);
	u->procs_swept += n;
	free(dead);
}

/* Batch SEQ of P arrived: settle what fell out of the reordering window. */
static void seq_mark(struct shim_unpack *u, struct proc *p, __u64 seq)
{
	__u64 *w = &p->pub.window, holes = 0;

	if (!p->seq_started || seq + SEQ_WINDOW < p->pub.base) {
		/* First batch heard, or the counter restarted (a new image after exec). */
		p->seq_started = 1;
		p->pub.base = seq;
		*w = 0;
	}
	if (seq < p->pub.base)
		return; /* later than the window allows: it was counted missing */
	if (seq - p->pub.base >= SEQ_WINDOW) {
		__u64 shift = seq - p->pub.base - (SEQ_WINDOW - 1);

		if (shift >= SEQ_WINDOW) {
			holes = SEQ_WINDOW - __builtin_popcountll(*w) + (shift - SEQ_WINDOW);
			*w = 0;
		} else {
			holes = shift - __builtin_popcountll(*w & ((1ull << shift) - 1));
			*w >>= shift;
		}
		p->pub.base += shift;
	}
	*w |= 1ull << (seq - p->pub.base);
	/* Settle the run of arrivals at the bottom. */
	while (*w & 1) {
		*w >>= 1;
		p->pub.base++;
	}
	count_holes(u, p, holes);
}

/* No more batches will come from P: holes below its last arrival are final. */
static void seq_settle(struct shim_unpack *u, struct proc *p)
{
	__u64 *w = &p->pub.window;

	if (*w) {
		int top = 63 - __builtin_clzll(*w);

		count_holes(u, p, top + 1 - __builtin_popcountll(*w));
		p->pub.base += top + 1;
		*w = 0;
	}
}

void shim_unpack__want(struct shim_unpack *u, __u32 want)
{
	u->want |= want;
}

static void summary(const struct shim_unpack *u);

void shim_unpack__finish(struct shim_unpack *u)
{
	size_t it = 0;
	struct proc **pp;

	if (u->join)
		shim_join__expire(u->join, 0, 1);
	while ((pp = hmap__next(u->procs, &it, NULL)))
		seq_settle(u, *pp);
	summary(u);
}

void shim_unpack__free(struct shim_unpack *u)
{
	size_t it = 0;
	struct proc **pp;

	if (!u)
		return;
	while (u->procs && (pp = hmap__next(u->procs, &it, NULL))) {
		strs_free(u, *pp);
		free(*pp);
	}
	hmap__free(u->procs);
	shim_join__free(u->join);
	shim_tids__free(u->tids);
	free(u->cap_name);
	free(u);
}

/* ---- strings ---- */

static void string_add(struct shim_unpack *u, struct proc *p, const struct bs_string *r)
{
	const char *text = (const char *)(r + 1);
	size_t len = strnlen(text, r->len);
	struct str *s;

	if (!r->id || !p->strs)
		return;
	s = hmap__get(p->strs, (struct hkey){ r->id, 0 }, 0);
	if (s && s->text && !strncmp(s->text, text, len) && !s->text[len])
		return; /* re-sent after an attach: ids are stable within a process */
	if (u->string_bytes + len + 1 > UNPACK_MAX_STRING_BYTES)
		return; /* its users get id 0: counted as unresolved */
	s = hmap__get(p->strs, (struct hkey){ r->id, 0 }, 1);
	if (!s)
		return;
	if (s->text)
		u->string_bytes -= strlen(s->text) + 1;
	free(s->text);
	*s = (struct str){ .text = strndup(text, len) };
	if (s->text)
		u->string_bytes += len + 1;
}

static const char *string_text(struct proc *p, __u32 sid)
{
	struct str *s = sid && p->strs ? hmap__get(p->strs, (struct hkey){ sid, 0 }, 0) : NULL;

	return s ? s->text : NULL;
}

/* The file's id for the shim's SID in P (interned on first use); 0 when unknown. */
static __u32 xlate(struct shim_unpack *u, struct proc *p, __u32 sid, int demangled)
{
	struct str *s;
	char buf[4096];

	if (!sid)
		return 0;
	s = p->strs ? hmap__get(p->strs, (struct hkey){ sid, 0 }, 0) : NULL;
	if (!s || !s->text) {
		u->unresolved++;
		return 0;
	}
	if (!demangled) {
		if (!s->id)
			s->id = record_ctx__intern(u->ctx, s->text);
		return s->id;
	}
	if (!s->dem_id) {
		demangle(s->text, buf, sizeof(buf));
		s->dem_id = record_ctx__intern(u->ctx, buf);
	}
	return s->dem_id;
}

static void drop_batch(struct shim_unpack *u, __u32 pid, __u64 nrec, const char *why)
{
	if (!nrec)
		nrec = 1;
	u->lost_records += nrec;
	record_ctx__lost(u->ctx, NULL, BS_LOSS_SHIM, nrec);
	u->bad_batches++;
	if (why && !u->warned_bad++)
		pr_warn("dropped a cupti-shim batch from pid %u: "
			"%s (%llu records counted lost; further bad batches are only counted)\n",
			pid, why, (unsigned long long)nrec);
}

/* ---- writing ---- */

static void gated_ts(const struct bs_hdr *rec, __u64 *ts)
{
	__u64 call = 0;

	switch (rec->type) {
	case BS_REC_GPU_KERNEL:
		call = ((const struct bs_gpu_kernel *)rec)->call_ts;
		break;
	case BS_REC_GPU_MEMCPY:
		call = ((const struct bs_gpu_memcpy *)rec)->call_ts;
		break;
	case BS_REC_GPU_MEMSET:
		call = ((const struct bs_gpu_memset *)rec)->call_ts;
		break;
	case BS_REC_GPU_API:
		call = ((const struct bs_gpu_api *)rec)->call_ts;
		break;
	}
	/* GPU work belongs to the range of the call that launched it. */
	*ts = call ? call : rec->ts;
}

static void emit(void *arg, struct bs_hdr *rec)
{
	struct shim_unpack *u = arg;
	struct bs_hdr judged = *rec;

	if (u->ctx->gate) {
		gated_ts(rec, &judged.ts);
		if (!capture_gate__keep(u->ctx->gate, &judged))
			return;
	}
	record_ctx__write(u->ctx, rec);
}

static int cap_match(struct shim_unpack *u, struct proc *p, __u32 name_sid, __u32 dom_sid)
{
	const char *name = string_text(p, name_sid), *dom = string_text(p, dom_sid);

	if (!name || strcmp(name, u->cap_name))
		return 0;
	if (!u->cap_domain)
		return !dom_sid;
	return !strcmp(u->cap_domain, "*") || (dom && !strcmp(dom, u->cap_domain));
}

/* --capture-range=nvtx: a matching range opens the gate when it begins (sync mode). */
static void cap_begin(struct shim_unpack *u, struct proc *p, const struct bs_nvtx_begin *b)
{
	if (!u->capture || !u->ctx->gate || !cap_match(u, p, b->name_id, b->domain_id))
		return;
	if (u->nopen == MAX_OPEN)
		return; /* bounded; the gate stays open through the ranges already open */
	u->open[u->nopen++] = (struct open_range){ b->h.pid, b->h.tid, b->h.ts };
	capture_gate__open(u->ctx->gate, b->h.ts);
}

/* ... and closes when the same range (thread and start) ends. */
static void cap_end(struct shim_unpack *u, const struct bs_nvtx_range *r)
{
	for (__u32 i = 0; u->capture && u->ctx->gate && i < u->nopen; i++) {
		if (u->open[i].pid != r->h.pid || u->open[i].tid != r->h.tid ||
		    u->open[i].ts != r->h.ts)
			continue;
		u->open[i] = u->open[--u->nopen];
		capture_gate__close(u->ctx->gate, r->h.ts + r->dur);
		return;
	}
}

static void status(struct shim_unpack *u, struct proc *p, struct bs_shim_status *s)
{
	const char *text = string_text(p, s->detail_id);

	p->pub.state = s->state;
	p->pub.cupti_version = s->cupti_version;
	if (s->event == BS_SHIM_EV_DRAINED || s->event == BS_SHIM_EV_EXIT)
		p->pub.flags |= SHIM_PROC_DRAINED;
	if (s->dropped) {
		u->lost_records += s->dropped;
		record_ctx__lost(u->ctx, NULL, BS_LOSS_SHIM, s->dropped);
	}
	s->detail_id = xlate(u, p, s->detail_id, 0);
	if (u->answer && (s->event == BS_SHIM_EV_ATTACH || s->event == BS_SHIM_EV_JOIN))
		u->answer(u->answer_arg, s->h.pid);
	if (u->listen)
		u->listen(u->listen_arg, &s->h, text ? text : "");
	emit(u, &s->h);
}

static void torch_op(struct shim_unpack *u, struct proc *p, struct bs_torch_op *r)
{
	const char *text = string_text(p, r->name_id);

	r->name_id = xlate(u, p, r->name_id, 0);
	r->shapes_id = xlate(u, p, r->shapes_id, 0);
	if (u->listen)
		u->listen(u->listen_arg, &r->h, text ? text : "");
	emit(u, &r->h);
}

void shim_unpack__listen(struct shim_unpack *u, shim_unpack_fn fn, void *arg)
{
	u->listen = fn;
	u->listen_arg = arg;
}

void shim_unpack__on_answer(struct shim_unpack *u, void (*fn)(void *arg, __u32 pid), void *arg)
{
	u->answer = fn;
	u->answer_arg = arg;
}

/* Where an NVTX record keeps its message's and its domain's string ids. */
static void nvtx_ids(struct bs_hdr *h, __u32 **name, __u32 **domain)
{
	switch (h->type) {
	case BS_REC_NVTX_RANGE:
		*name = &((struct bs_nvtx_range *)h)->name_id;
		*domain = &((struct bs_nvtx_range *)h)->domain_id;
		return;
	case BS_REC_NVTX_MARK:
		*name = &((struct bs_nvtx_mark *)h)->name_id;
		*domain = &((struct bs_nvtx_mark *)h)->domain_id;
		return;
	case BS_REC_NVTX_NAME:
		*name = &((struct bs_nvtx_name *)h)->name_id;
		*domain = &((struct bs_nvtx_name *)h)->domain_id;
		return;
	default: /* BS_REC_NVTX_BEGIN */
		*name = &((struct bs_nvtx_begin *)h)->name_id;
		*domain = &((struct bs_nvtx_begin *)h)->domain_id;
	}
}

/* Whether N (ids translated) names what P's last name of its kind and key already did. */
static int name_repeat(struct proc *p, const struct bs_nvtx_name *n)
{
	/* b never 0: (id, 0) are the strings' keys, and a batch's kind may be anything */
	struct hkey k = { n->key, 1ull << 63 | (__u64)n->domain_id << 32 | n->kind };
	struct str *s = p->strs ? hmap__get(p->strs, k, 1) : NULL;

	if (s && s->dem_id && s->id == n->name_id) /* dem_id: heard before */
		return 1;
	if (s)
		*s = (struct str){ .id = n->name_id, .dem_id = 1 };
	return 0;
}

/* One checked record of P, copied into u->buf. */
static void one_record(struct shim_unpack *u, struct proc *p, struct bs_hdr *h)
{
	int gpu = u->want & SHIM_WANT_GPU, nvtx = u->want & SHIM_WANT_NVTX;
	__u32 *name, *domain;

	switch (h->type) {
	case BS_REC_STRING:
		string_add(u, p, (const void *)h);
		return;
	case BS_REC_SHIM_STATUS:
		status(u, p, (void *)h);
		return;
	case BS_REC_GPU_API: {
		struct bs_gpu_api *r = (void *)h;

		if (!gpu)
			return;
		r->name_id = xlate(u, p, r->name_id, 0);
		if (u->join)
			shim_join__api(u->join, r, mono_now_ns()); /* emits it, now or later */
		else
			emit(u, h);
		return;
	}
	case BS_REC_GPU_KERNEL: {
		struct bs_gpu_kernel *r = (void *)h;

		if (!gpu)
			return;
		r->name_id = xlate(u, p, r->name_id, 1);
		break;
	}
	case BS_REC_GPU_MEMCPY:
	case BS_REC_GPU_MEMSET:
		if (!gpu)
			return;
		break;
	case BS_REC_NVTX_RANGE:
	case BS_REC_NVTX_MARK:
	case BS_REC_NVTX_NAME:
	case BS_REC_NVTX_BEGIN:
		if (!nvtx)
			return;
		if (h->type == BS_REC_NVTX_BEGIN)
			cap_begin(u, p, (const void *)h);
		else if (h->type == BS_REC_NVTX_RANGE)
			cap_end(u, (const void *)h);
		nvtx_ids(h, &name, &domain);
		*name = xlate(u, p, *name, 0);
		*domain = xlate(u, p, *domain, 0);
		if (h->type != BS_REC_NVTX_NAME || !name_repeat(p, (const void *)h))
			emit(u, h);
		return;
	case BS_REC_TORCH_OP:
		if (u->want & SHIM_WANT_TORCH)
			torch_op(u, p, (void *)h);
		return;
	default:
		return;
	}
	/* kernels, copies, memsets: linked to their launching call first */
	if (u->join)
		shim_join__gpu(u->join, h, mono_now_ns());
	else
		emit(u, h);
}

/*
 * A record of a process in a pid namespace of its own names threads by that namespace's ids
 * (CUPTI's and the shim's gettid()): BPF's from here on, as every other record has them.
 */
static void host_tids(struct shim_unpack *u, struct bs_hdr *h, __u64 now)
{
	struct bs_nvtx_name *n = (void *)h;
	struct bs_nvtx_range *r = (void *)h;

	h->tid = shim_tids__host(u->tids, h->pid, h->tid, now);
	if (h->type == BS_REC_NVTX_RANGE)
		r->end_tid = shim_tids__host(u->tids, h->pid, r->end_tid, now);
	else if (h->type == BS_REC_NVTX_NAME && n->kind == BS_NVTX_NAME_THREAD &&
		 n->key <= 0xffffffffull)
		n->key = shim_tids__host(u->tids, h->pid, (__u32)n->key, now);
}

static void batch(struct shim_unpack *u, const struct bs_shim_batch *b)
{
	const struct bs_shim_batch_hdr *bh = (const void *)(b + 1);
	const __u8 *rec, *end;
	const char *why;
	struct proc *p;
	__u64 now;
	int ns;

	/* BPF cuts a batch at BATCH_BYTES: more would overrun u->buf with a record's copy. */
	if (b->h.size < sizeof(*b) || b->len > b->h.size - sizeof(*b) || b->len > BATCH_BYTES) {
		drop_batch(u, b->h.pid, 1, "its ring record is malformed");
		return;
	}
	p = proc_get(u, b->h.pid, 1);
	if (!p) {
		drop_batch(u, b->h.pid, b->len >= sizeof(*bh) ? bh->nrec : 1, NULL);
		return;
	}
	p->pub.flags |= SHIM_PROC_SENT;
	p->pub.batches++;
	if (b->len < sizeof(*bh)) {
		/* BPF could not read even the header: its shim_gaps count covers the hole. */
		drop_batch(u, b->h.pid, 1, NULL);
		return;
	}
	if (bh->magic != BS_SHIM_MAGIC || bh->version != BS_SHIM_VERSION) {
		drop_batch(u, b->h.pid, 1, "not a batch of this version (magic or version)");
		return;
	}
	seq_mark(u, p, bh->seq);
	if (b->flags & BS_SHIM_BATCH_FAULT) {
		drop_batch(u, b->h.pid, bh->nrec, NULL); /* unreadable: counted, not a defect */
		return;
	}
	why = b->flags & BS_SHIM_BATCH_CLAMP	? "larger than a batch may be"
	      : bh->len != b->len - sizeof(*bh) ? "its length disagrees with what was sent"
						: shim_batch__check(bh, bh->len);
	if (why) {
		drop_batch(u, b->h.pid, bh->nrec, why);
		return;
	}
	p->pub.records += bh->nrec;
	/* The pid is BPF's (the shim's getpid() is its namespace's); so are tids, below. */
	ns = shim_tids__namespaced(u->tids, b->h.pid);
	now = ns ? mono_now_ns() : 0;
	rec = (const __u8 *)(bh + 1);
	end = rec + bh->len;
	while (rec < end) {
		const struct bs_hdr *h = (const void *)rec;
		struct bs_hdr *copy = (struct bs_hdr *)u->buf;

		memcpy(copy, h, h->size);
		copy->pid = b->h.pid;
		copy->cpu = 0;
		if (ns)
			host_tids(u, copy, now);
		one_record(u, p, copy);
		rec += h->size;
	}
}

int shim_unpack__record(struct shim_unpack *u, const struct bs_hdr *rec)
{
	struct proc *p;

	switch (rec->type) {
	case BS_REC_SHIM_BATCH:
		batch(u, (const void *)rec);
		return 1;
	case BS_REC_THREAD_NS:
		if (rec->size >= sizeof(struct bs_thread_ns))
			shim_tids__told(u->tids, rec->pid, rec->tid,
					((const struct bs_thread_ns *)rec)->ns_tid);
		return 0;
	case BS_REC_CUDA_CALL:
		/* From the first call on, not the first batch: a process launches work well
		 * before its shim's first batch arrives (up to a flush period later). */
		if (!u->join && (u->want & SHIM_WANT_GPU))
			join_new(u);
		if (u->join) {
			/* While the thread lives: its CUPTI records may name it by its ns id. */
			shim_tids__seen(u->tids, rec->pid, rec->tid);
			shim_join__cuda_call(u->join, rec);
		}
		return 0;
	case BS_REC_EXEC:
		/* A new image: its shim (if any) numbers strings and batches from 1 again. */
		p = proc_get(u, rec->pid, 0);
		if (p) {
			seq_settle(u, p);
			strs_free(u, p);
			p->strs = hmap__new(sizeof(struct str));
			p->seq_started = 0;
			p->pub.flags &= ~SHIM_PROC_DRAINED;
		}
		return 0;
	case BS_REC_EXIT:
		if (rec->size >= sizeof(struct bs_exit) &&
		    ((const struct bs_exit *)rec)->group_dead)
			proc_gone(u, rec->pid);
		return 0;
	}
	return 0;
}

void shim_unpack__tick(struct shim_unpack *u, __u64 now)
{
	if (u->join)
		shim_join__expire(u->join, now, 0);
	sweep(u, now);
}

const struct shim_proc *shim_unpack__proc(const struct shim_unpack *u, __u32 pid)
{
	struct proc **pp = hmap__get(u->procs, (struct hkey){ pid, 0 }, 0);

	return pp ? &(*pp)->pub : NULL;
}

const struct shim_proc *shim_unpack__next(const struct shim_unpack *u, size_t *it)
{
	struct proc **pp = hmap__next(u->procs, it, NULL);

	return pp ? &(*pp)->pub : NULL;
}

static void summary(const struct shim_unpack *u)
{
	struct shim_join_stats js = {};
	char why[512];

	if (u->join)
		shim_join__stats(u->join, &js);
	if (js.linked_cuda || js.linked_api || js.unlinked)
		pr_info("GPU records: %llu linked to their cuda call (%llu by "
			"launch order), %llu to CUPTI's API record only, %llu unlinked\n",
			(unsigned long long)js.linked_cuda, (unsigned long long)js.linked_order,
			(unsigned long long)js.linked_api, (unsigned long long)js.unlinked);
	if (shim_join_stats__why(&js, why, sizeof(why)))
		pr_info("GPU records not linked to a cuda call, by reason: %s\n", why);
	if (js.order_dropped)
		pr_warn("launch order had no room for %llu cuda calls "
			"and GPU records (over %u calls or %u waiting records)\n",
			(unsigned long long)js.order_dropped, ORDER_MAX_CALLS, ORDER_MAX_OPS);
	if (js.calls_dropped)
		pr_warn("the launch join forgot %llu cuda calls early "
			"(over %u kept)\n",
			(unsigned long long)js.calls_dropped, JOIN_MAX_CALLS);
	if (u->lost_records || u->lost_batches)
		pr_info("cupti-shim: %llu records and %llu whole batches "
			"lost (%llu bad batches dropped)\n",
			(unsigned long long)u->lost_records, (unsigned long long)u->lost_batches,
			(unsigned long long)u->bad_batches);
	if (u->unresolved)
		pr_warn("%llu cupti-shim names could not be "
			"resolved (string text missing or over %u MiB)\n",
			(unsigned long long)u->unresolved, UNPACK_MAX_STRING_BYTES >> 20);
	if (u->procs_dropped)
		pr_warn("%llu batches of processes past %u alive "
			"at once were dropped\n",
			(unsigned long long)u->procs_dropped, UNPACK_MAX_PROCS);
	if (shim_tids__unknown(u->tids))
		pr_warn("%llu thread ids of processes in a pid "
			"namespace could not be translated (their threads were gone): left as "
			"the process saw them\n",
			(unsigned long long)shim_tids__unknown(u->tids));
}
