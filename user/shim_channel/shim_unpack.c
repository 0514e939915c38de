// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Unpacking the cupti-shim's batches into trace records (see shim_unpack.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "capture_gate.h"
#include "elf_syms.h"
#include "family.h"
#include "family_record.h"
#include "record_ctx.h"
#include "proc_meta.h"
#include "shim_family.h"
#include "shim_tids.h"
#include "shim_batch_check.h"
#include "shim_unpack.h"
#include "hmap.h"
#include "msg.h"

#define BATCH_BYTES (sizeof(struct bs_shim_batch_hdr) + BS_SHIM_BATCH_MAX)
#define SEQ_WINDOW  64
#define SWEEP_NS    5000000000ull /* how often to look for exits whose record was lost */

struct str {
	char *text;
	__u32 id;     /* the file's id of text (0 = not interned yet) */
	__u32 dem_id; /* the file's id of text demangled */
};

struct proc {
	struct shim_proc pub;
	struct hmap *strs; /* (shim string id, 0) -> struct str */
	int seq_started;
	/*
	 * Forked or exec'd while recording: its shim numbers batches from 1, every one of them
	 * meant for this recording, so a first batch heard past 1 says the ones before it were
	 * missed (a DataLoader worker's, flushed before the recorder attached to it).
	 */
	int from_one;
};

/* A family of the registry, as this channel unpacks it. */
struct fam {
	const struct family_shim *shim; /* NULL: not a shim family, or not recorded */
	void *st;			/* its hooks' state (family_shim.new) */
	shim_unpack_fn listen;		/* shim_unpack__listen */
	void *listen_arg;
};

struct shim_unpack {
	struct record_ctx *ctx;
	int gaps_fd;
	struct shim_tids *tids;
	struct hmap *procs; /* (pid, 0) -> struct proc *: live processes heard from */
	__u64 string_bytes;
	struct fam *fams; /* by registry index */
	int nfams;
	/* By record type: the family that sends it (-1: none), its record, its least size. */
	__s8 fam_of[BS_REC_TYPE_MAX];
	const struct shim_rec *rec_of[BS_REC_TYPE_MAX];
	__u16 min_size[BS_REC_TYPE_MAX];
	__u64 ring_fams[BS_REC_TYPE_MAX];     /* the families whose ring hook sees the type */
	void (*answer)(void *arg, __u32 pid); /* shim_unpack__on_answer */
	void *answer_arg;
	/* what the summary says */
	__u64 bad_batches, lost_records, lost_batches, unresolved, procs_dropped;
	__u64 procs_freed, procs_swept, next_sweep;
	int warned_bad, warned_procs;
	__u64 buf[BATCH_BYTES / 8 + 1]; /* the record being rewritten */
};

struct shim_unpack *shim_unpack__new(struct record_ctx *ctx, int gaps_fd)
{
	struct shim_unpack *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->ctx = ctx;
	u->gaps_fd = gaps_fd;
	u->nfams = family__count();
	u->fams = calloc(u->nfams + 1, sizeof(*u->fams));
	u->procs = hmap__new(sizeof(struct proc *));
	u->tids = shim_tids__new();
	if (!u->fams || !u->procs || !u->tids) {
		shim_unpack__free(u);
		return NULL;
	}
	shim_family__min_sizes(u->min_size);
	for (int t = 0; t < BS_REC_TYPE_MAX; t++)
		u->fam_of[t] = (__s8)shim_family__of((__u16)t, &u->rec_of[t]);
	return u;
}

int shim_unpack__want(struct shim_unpack *u, const struct family *f)
{
	int i = 0;
	struct fam *fm;

	while (families[i] && families[i] != f)
		i++;
	if (!families[i] || !f->record->shim)
		return -EINVAL;
	fm = &u->fams[i];
	if (fm->shim)
		return 0;
	if (f->record->shim->new && !(fm->st = f->record->shim->new (u)))
		return -ENOMEM;
	fm->shim = f->record->shim;
	for (const __u16 *t = f->record->shim->ring_types; t && *t; t++)
		if (*t < BS_REC_TYPE_MAX)
			u->ring_fams[*t] |= 1ull << i;
	return 0;
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
 * its holes are final, and everything kept for it goes, here and in the families' hooks, so that a
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
	for (int i = 0; i < u->nfams; i++)
		if (u->fams[i].shim && u->fams[i].shim->proc_exit)
			u->fams[i].shim->proc_exit(u->fams[i].st, pid);
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
		p->pub.base = p->from_one && seq > 1 ? 1 : seq;
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

static void summary(const struct shim_unpack *u);

void shim_unpack__finish(struct shim_unpack *u)
{
	size_t it = 0;
	struct proc **pp;

	for (int i = 0; i < u->nfams; i++)
		if (u->fams[i].shim && u->fams[i].shim->finish)
			u->fams[i].shim->finish(u->fams[i].st);
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
	for (int i = 0; u->fams && i < u->nfams; i++)
		if (u->fams[i].shim && u->fams[i].shim->free)
			u->fams[i].shim->free(u->fams[i].st);
	free(u->fams);
	shim_tids__free(u->tids);
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

void shim_unpack__emit(struct shim_unpack *u, struct bs_hdr *rec, __u64 gate_ts)
{
	struct bs_hdr judged = *rec;

	judged.ts = gate_ts;
	if (u->ctx->gate && !capture_gate__keep(u->ctx->gate, &judged))
		return;
	record_ctx__write(u->ctx, rec);
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
	for (int i = 0; i < u->nfams; i++) {
		struct fam *fm = &u->fams[i];

		if (fm->shim && fm->shim->status)
			fm->shim->status(fm->st, s, text ? text : "");
		if (fm->listen)
			fm->listen(fm->listen_arg, &s->h, text ? text : "");
	}
	shim_unpack__emit(u, &s->h, s->h.ts);
}

void shim_unpack__listen(struct shim_unpack *u, const struct family *f, shim_unpack_fn fn,
			 void *arg)
{
	for (int i = 0; i < u->nfams; i++)
		if (families[i] == f) {
			u->fams[i].listen = fn;
			u->fams[i].listen_arg = arg;
		}
}

void shim_unpack__on_answer(struct shim_unpack *u, void (*fn)(void *arg, __u32 pid), void *arg)
{
	u->answer = fn;
	u->answer_arg = arg;
}

struct record_ctx *shim_unpack__ctx(const struct shim_unpack *u)
{
	return u->ctx;
}

/*
 * One checked record of P, copied into u->buf: its string ids become the file's, then its
 * family's hook sees it, and the channel writes it unless the hook took it. A family that is
 * not recorded gets nothing (its module in the shim sends nothing unless another tracer asked).
 */
static void one_record(struct shim_unpack *u, struct proc *p, struct bs_hdr *h)
{
	const char *texts[SHIM_REC_STRINGS] = { NULL };
	const struct shim_rec *r;
	struct fam *fm;
	int f;

	if (h->type == BS_REC_STRING) {
		string_add(u, p, (const void *)h);
		return;
	}
	if (h->type == BS_REC_SHIM_STATUS) {
		status(u, p, (void *)h);
		return;
	}
	f = u->fam_of[h->type]; /* the batch's check refused every other type */
	if (f < 0 || !(fm = &u->fams[f])->shim)
		return;
	r = u->rec_of[h->type];
	for (int i = 0; i < SHIM_REC_STRINGS; i++) {
		__u32 *id;

		if (!r->strings[i])
			continue;
		id = (__u32 *)((__u8 *)h + r->strings[i]);
		texts[i] = string_text(p, *id);
		*id = xlate(u, p, *id, r->demangle >> i & 1);
	}
	if (fm->shim->record && fm->shim->record(fm->st, h, texts))
		return;
	if (fm->listen)
		fm->listen(fm->listen_arg, h, texts[0] ? texts[0] : "");
	shim_unpack__emit(u, h, h->ts);
}

/*
 * A record of a process in a pid namespace of its own names threads by that namespace's ids
 * (CUPTI's and the shim's gettid()): BPF's from here on, as every other record has them.
 */
static void host_tids(struct shim_unpack *u, struct bs_hdr *h, __u64 now)
{
	const struct shim_rec *r = h->type < BS_REC_TYPE_MAX ? u->rec_of[h->type] : NULL;

	h->tid = shim_tids__host(u->tids, h->pid, h->tid, now);
	for (int i = 0; r && i < SHIM_REC_TIDS; i++) {
		__u32 *tid = r->tids[i] ? (__u32 *)((__u8 *)h + r->tids[i]) : NULL;

		if (tid)
			*tid = shim_tids__host(u->tids, h->pid, *tid, now);
	}
}

__u32 shim_unpack__host_tid(struct shim_unpack *u, __u32 pid, __u32 tid)
{
	return shim_tids__namespaced(u->tids, pid)
		       ? shim_tids__host(u->tids, pid, tid, mono_now_ns())
		       : tid;
}

void shim_unpack__tid_seen(struct shim_unpack *u, __u32 pid, __u32 tid)
{
	shim_tids__seen(u->tids, pid, tid);
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
						: shim_batch__check(bh, bh->len, u->min_size);
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
	__u64 fams = rec->type < BS_REC_TYPE_MAX ? u->ring_fams[rec->type] : 0;

	for (int i = 0; fams; i++, fams >>= 1)
		if (fams & 1)
			u->fams[i].shim->ring(u->fams[i].st, rec);
	switch (rec->type) {
	case BS_REC_SHIM_BATCH:
		batch(u, (const void *)rec);
		return 1;
	case BS_REC_THREAD_NS:
		if (rec->size >= sizeof(struct bs_thread_ns))
			shim_tids__told(u->tids, rec->pid, rec->tid,
					((const struct bs_thread_ns *)rec)->ns_tid);
		return 0;
	case BS_REC_FORK: {
		const struct bs_fork *f = (const void *)rec;

		/*
		 * A new process of one whose shim sends batches (a DataLoader's worker): the shim
		 * it inherited numbers its batches from 1 (shim_buf.c). Others get no entry: -a
		 * forks thousands of processes without a shim.
		 */
		if (rec->size >= sizeof(*f) && f->child_pid == f->child_tid &&
		    proc_get(u, rec->pid, 0) && (p = proc_get(u, f->child_pid, 1)))
			p->from_one = 1;
		return 0;
	}
	case BS_REC_EXEC:
		/* A new image: its shim (if any) numbers strings and batches from 1 again. */
		p = proc_get(u, rec->pid, 0);
		if (p) {
			seq_settle(u, p);
			strs_free(u, p);
			p->strs = hmap__new(sizeof(struct str));
			p->seq_started = 0;
			p->from_one = 1;
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
	for (int i = 0; i < u->nfams; i++)
		if (u->fams[i].shim && u->fams[i].shim->tick)
			u->fams[i].shim->tick(u->fams[i].st, now);
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
