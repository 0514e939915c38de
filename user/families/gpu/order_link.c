// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Launch order links (see order_link.h). */
#include <stdlib.h>
#include <string.h>
#include "cuda.h"
#include "cuda_decode.h"
#include "order_link.h"
#include "gpu_records.h"
#include "array.h"
#include "hmap.h"

#define ALIGN_SCAN 4096 /* calls looked back at, per handle, when aligning a stream */

enum { OL_NONE, OL_KERNEL, OL_BYTES, OL_KIND = 3, OL_PER_THREAD = 4 };

struct ol_call {
	__u64 ts, key;
	__u32 tid, used;
};

/* The calls a process queued on one stream handle, by entry time; c[0] is call number base. */
struct ol_handle {
	__u32 pid;
	int succeeded; /* a call on it returned success: its failed ones queued nothing */
	struct ol_call *c;
	size_t n, cap;
	__u64 base;
};

struct ol_op {
	__u64 start, arrived, key;
	__u32 corr, _pad;
};

/* One CUPTI stream (context, stream id) of a process: its waiting ops, by start once sorted. */
struct ol_stream {
	__u32 pid;
	struct ol_handle *h; /* aligned to; NULL until then */
	__u64 cursor;	     /* call number of the next call on h */
	struct ol_op *ops;
	size_t n, cap;
	int unsorted; /* ops came since they were last sorted */
};

struct order_link {
	order_link_fn fn;
	void *arg;
	struct hmap *handles; /* (pid, handle key) -> struct ol_handle * */
	struct hmap *streams; /* (pid, context << 32 | stream) -> struct ol_stream * */
	__u64 ncalls, nops;
	struct order_link_stats st;
	__u8 kinds[1024]; /* cuda fn -> OL_* */
};

static __u64 mix(__u64 h, __u64 v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static __u64 kernel_key(const __u32 grid[3], const __u32 block[3], __u64 shmem)
{
	__u64 h = OL_KERNEL;

	for (int i = 0; i < 3; i++)
		h = mix(mix(h, grid[i]), block[i]);
	return mix(h, shmem);
}

static __u64 bytes_key(__u64 bytes)
{
	return mix(OL_BYTES, bytes);
}

struct order_link *order_link__new(order_link_fn fn, void *arg)
{
	struct order_link *ol = calloc(1, sizeof(*ol));

	if (!ol)
		return NULL;
	ol->fn = fn;
	ol->arg = arg;
	ol->handles = hmap__new(sizeof(struct ol_handle *));
	ol->streams = hmap__new(sizeof(struct ol_stream *));
	if (!ol->handles || !ol->streams) {
		order_link__free(ol);
		return NULL;
	}
	for (__u32 fn = 0; fn < cuda_table.napis && fn < sizeof(ol->kinds); fn++) {
		__u16 g = cuda_table.apis[fn].group;

		const char *name = cuda_table.apis[fn].name;
		size_t len = strlen(name);

		ol->kinds[fn] = g == CUDA_GRP_LAUNCH			       ? OL_KERNEL
				: g == CUDA_GRP_MEMCPY || g == CUDA_GRP_MEMSET ? OL_BYTES
									       : OL_NONE;
		/* The _ptsz/_ptds variants: stream 0 is the thread's default stream. */
		if (ol->kinds[fn] && len > 5 &&
		    (!strcmp(name + len - 5, "_ptsz") || !strcmp(name + len - 5, "_ptds")))
			ol->kinds[fn] |= OL_PER_THREAD;
	}
	return ol;
}

static void handle_free(struct ol_handle *h)
{
	if (h) {
		free(h->c);
		free(h);
	}
}

static void stream_free(struct ol_stream *s)
{
	if (s) {
		free(s->ops);
		free(s);
	}
}

void order_link__free(struct order_link *ol)
{
	struct ol_handle **hp;
	struct ol_stream **sp;
	size_t it = 0;

	if (!ol)
		return;
	while (ol->handles && (hp = hmap__next(ol->handles, &it, NULL)))
		handle_free(*hp);
	it = 0;
	while (ol->streams && (sp = hmap__next(ol->streams, &it, NULL)))
		stream_free(*sp);
	hmap__free(ol->handles);
	hmap__free(ol->streams);
	free(ol);
}

/*
 * The handle a call names: the legacy default stream (0, or cudaStreamLegacy) is the
 * process's; the per-thread default stream (cudaStreamPerThread) is the calling thread's.
 */
static struct hkey handle_key(__u32 pid, __u32 tid, __u64 stream)
{
	if (stream == 1)
		stream = 0;
	else if (stream == 2)
		stream = 1ull << 63 | tid;
	return (struct hkey){ pid, stream };
}

static struct ol_handle *handle_get(struct order_link *ol, struct hkey k)
{
	struct ol_handle **hp = hmap__get(ol->handles, k, 1);

	if (!hp)
		return NULL;
	if (!*hp && (*hp = calloc(1, sizeof(**hp))))
		(*hp)->pid = (__u32)k.a;
	return *hp;
}

/* Forget the first N calls of H. */
static void handle_drop(struct order_link *ol, struct ol_handle *h, size_t n)
{
	memmove(h->c, h->c + n, (h->n - n) * sizeof(*h->c));
	h->n -= n;
	h->base += n;
	ol->ncalls -= n;
}

void order_link__call(struct order_link *ol, const struct bs_hdr *rec)
{
	const struct bs_ucall *u = (const void *)rec;
	struct cuda_call c;
	struct ol_handle *h;
	struct ol_call *dst;
	__u64 key, stream;
	size_t i;

	if (rec->type != BS_REC_CUDA_CALL || rec->size < sizeof(*u) || u->depth ||
	    u->fn >= sizeof(ol->kinds) || !ol->kinds[u->fn])
		return;
	cuda_call__read(rec, &c);
	if ((ol->kinds[u->fn] & OL_KIND) == OL_KERNEL) {
		__u32 grid[3], block[3];

		for (i = 0; i < 3; i++) {
			if (!(c.have & 1ull << (K_GRID_X + i)) ||
			    !(c.have & 1ull << (K_BLOCK_X + i)))
				return;
			grid[i] = (__u32)c.v[K_GRID_X + i];
			block[i] = (__u32)c.v[K_BLOCK_X + i];
		}
		key = kernel_key(grid, block,
				 c.have & 1ull << K_SHARED_BYTES ? c.v[K_SHARED_BYTES] : 0);
	} else {
		if (!(c.have & 1ull << K_BYTES))
			return;
		key = bytes_key(c.v[K_BYTES]);
	}
	stream = c.have & 1ull << K_STREAM ? c.v[K_STREAM] : 0;
	if (!stream && (ol->kinds[u->fn] & OL_PER_THREAD))
		stream = 2; /* cudaStreamPerThread */
	h = handle_get(ol, handle_key(rec->pid, rec->tid, stream));
	if (!h)
		return;
	/*
	 * A failed call queued nothing. Where every call fails (no GPU: the tests), they are kept
	 * all the same: the records fed for them stand for what they would have queued.
	 */
	if (u->ret && h->succeeded)
		return;
	h->succeeded |= !u->ret;
	if (ol->ncalls >= ORDER_MAX_CALLS && h->n) {
		handle_drop(ol, h, 1);
		ol->st.calls_dropped++;
	}
	if (h->n == h->cap && array__grow((void **)&h->c, h->n, &h->cap, sizeof(*h->c)))
		return;
	/* Calls come as they return: by entry time, an outer one may go before later ones. */
	for (i = h->n; i && h->c[i - 1].ts > rec->ts; i--)
		;
	dst = &h->c[i];
	memmove(dst + 1, dst, (h->n - i) * sizeof(*dst));
	*dst = (struct ol_call){ .ts = rec->ts, .key = key, .tid = rec->tid };
	h->n++;
	ol->ncalls++;
}

void order_link__op(struct order_link *ol, const struct bs_hdr *rec, __u64 now)
{
	__u32 ctx, stream, corr;
	struct ol_stream **sp, *s;
	__u64 key;

	if (!rec->ts)
		return; /* CUPTI had no start for it */
	if (rec->type == BS_REC_GPU_KERNEL && rec->size >= sizeof(struct bs_gpu_kernel)) {
		const struct bs_gpu_kernel *k = (const void *)rec;

		if (k->graph_id)
			return;
		key = kernel_key(k->grid, k->block, k->shmem_dynamic);
		ctx = k->context, stream = k->stream, corr = k->correlation;
	} else if (rec->type == BS_REC_GPU_MEMCPY && rec->size >= sizeof(struct bs_gpu_memcpy)) {
		const struct bs_gpu_memcpy *m = (const void *)rec;

		if (m->graph_id)
			return;
		key = bytes_key(m->bytes);
		ctx = m->context, stream = m->stream, corr = m->correlation;
	} else if (rec->type == BS_REC_GPU_MEMSET && rec->size >= sizeof(struct bs_gpu_memset)) {
		const struct bs_gpu_memset *m = (const void *)rec;

		if (m->graph_id)
			return;
		key = bytes_key(m->bytes);
		ctx = m->context, stream = m->stream, corr = m->correlation;
	} else {
		return;
	}
	if (ol->nops >= ORDER_MAX_OPS) {
		ol->st.ops_dropped++;
		return;
	}
	sp = hmap__get(ol->streams, (struct hkey){ rec->pid, (__u64)ctx << 32 | stream }, 1);
	if (!sp || (!*sp && !(*sp = calloc(1, sizeof(**sp)))))
		return;
	s = *sp;
	s->pid = rec->pid;
	if (s->n == s->cap && array__grow((void **)&s->ops, s->n, &s->cap, sizeof(*s->ops)))
		return;
	s->unsorted |= s->n && s->ops[s->n - 1].start > rec->ts;
	s->ops[s->n++] =
		(struct ol_op){ .start = rec->ts, .arrived = now, .key = key, .corr = corr };
	ol->nops++;
}

static int by_start(const void *a, const void *b)
{
	const struct ol_op *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static const struct ol_call *call_at(const struct ol_handle *h, __u64 num)
{
	return num >= h->base && num - h->base < h->n ? &h->c[num - h->base] : NULL;
}

static int fits(const struct ol_op *o, const struct ol_call *c)
{
	return c && !c->used && c->key == o->key && c->ts <= o->start;
}

/* How many of S's ops from I on fit H's calls from NUM on, one for one (at most WANT). */
static size_t run_length(const struct ol_stream *s, size_t i, const struct ol_handle *h, __u64 num,
			 size_t want)
{
	size_t n = 0;

	while (n < want && i + n < s->n && fits(&s->ops[i + n], call_at(h, num + n)))
		n++;
	return n;
}

/* The best call to align a stream's op on: number + 1 (0: none), and how far ops fit from it. */
struct fit {
	__u64 at, ts;
	size_t run;
	int tie; /* an earlier call fits as far */
};

/*
 * Offer H's calls numbered FROM or later to F for S's op I: those from which at least the
 * window of ops fits call for call. The longest run wins, and of equal runs the latest call:
 * a run shifted by a repetition of the ops' shapes (the GPU behind by as many launches) fits
 * in time too, but only until the queue drained (a synchronization): then its ops would start
 * before their calls.
 */
static void align_on(const struct ol_stream *s, size_t i, const struct ol_handle *h, __u64 from,
		     struct fit *f)
{
	size_t left = s->n - i, hi = h->n, scanned = 0;
	size_t want = left < ORDER_WINDOW ? left : ORDER_WINDOW;
	size_t cap = left < ORDER_RUN_MAX ? left : ORDER_RUN_MAX;
	const struct ol_op *o = &s->ops[i];
	size_t lo = 0;

	while (lo < hi) { /* hi: the calls that began by the op's start */
		size_t mid = lo + (hi - lo) / 2;

		if (h->c[mid].ts <= o->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; hi && scanned < ALIGN_SCAN; hi--, scanned++) {
		__u64 num = h->base + hi - 1;
		size_t run;

		if (num < from)
			break;
		if (h->c[hi - 1].key != o->key)
			continue;
		run = run_length(s, i, h, num, cap);
		if (run < want || run < f->run)
			continue;
		if (run == f->run) {
			f->tie |= h->c[hi - 1].ts <= f->ts;
			if (h->c[hi - 1].ts <= f->ts)
				continue;
		}
		*f = (struct fit){ .at = num + 1, .ts = h->c[hi - 1].ts, .run = run };
	}
}

/*
 * Align S from op I: on its handle (unused calls before the cursor too: a stream's ops may
 * come out of order), or the first time on any handle of its process. 1 when aligned, 0 when
 * no call fits, -1 to wait for more ops: two calls fit as far as there are ops (HOLD).
 */
static int align(struct order_link *ol, struct ol_stream *s, size_t i, int hold)
{
	struct ol_handle **hp, *best = s->h;
	struct fit f = { 0 };
	size_t it = 0;

	if (s->h) {
		align_on(s, i, s->h, s->h->base, &f);
	} else {
		while ((hp = hmap__next(ol->handles, &it, NULL))) {
			__u64 was = f.at;

			if (!*hp || (*hp)->pid != s->pid)
				continue;
			align_on(s, i, *hp, (*hp)->base, &f);
			if (f.at != was)
				best = *hp;
		}
	}
	if (!f.at)
		return 0;
	if (f.tie && hold && f.run == s->n - i && f.run < ORDER_RUN_MAX)
		return -1;
	ol->st.realigned += s->h != NULL;
	s->h = best;
	s->cursor = f.at - 1;
	return 1;
}

/* Match S's op I: 0 when it must wait for more of the stream's ops (while HOLD). */
static int match_op(struct order_link *ol, struct ol_stream *s, size_t i, int hold)
{
	const struct ol_op *o = &s->ops[i];
	struct ol_call *c;
	int a = 0;

	if (s->h && s->cursor < s->h->base)
		s->cursor = s->h->base; /* the calls it was at were forgotten */
	c = s->h ? (struct ol_call *)call_at(s->h, s->cursor) : NULL;
	if (!fits(o, c) && (a = align(ol, s, i, hold)) < 0)
		return 0;
	if (a > 0)
		c = (struct ol_call *)call_at(s->h, s->cursor);
	if (!fits(o, c)) {
		ol->st.unlinked++;
		ol->fn(ol->arg, s->pid, o->corr, 0, 0);
		return 1;
	}
	c->used = 1;
	s->cursor++;
	ol->st.linked++;
	ol->fn(ol->arg, s->pid, o->corr, c->tid, c->ts);
	return 1;
}

static void stream_run(struct order_link *ol, struct ol_stream *s, __u64 now, int all)
{
	size_t i;

	if (!s->n)
		return;
	if (s->unsorted)
		qsort(s->ops, s->n, sizeof(*s->ops), by_start);
	s->unsorted = 0;
	for (i = 0; i < s->n && (all || s->ops[i].arrived + ORDER_SETTLE_NS <= now); i++)
		if (!match_op(ol, s, i, !all && s->ops[i].arrived + ORDER_HOLD_NS > now))
			break;
	memmove(s->ops, s->ops + i, (s->n - i) * sizeof(*s->ops));
	s->n -= i;
	ol->nops -= i;
}

/* Forget calls that began ORDER_KEEP_NS before NOW. */
static void trim_calls(struct order_link *ol, __u64 now)
{
	struct ol_handle **hp;
	size_t it = 0;

	if (now < ORDER_KEEP_NS)
		return;
	while ((hp = hmap__next(ol->handles, &it, NULL))) {
		struct ol_handle *h = *hp;
		size_t n = 0;

		while (h && n < h->n && h->c[n].ts + ORDER_KEEP_NS < now)
			n++;
		if (n)
			handle_drop(ol, h, n);
	}
}

void order_link__run(struct order_link *ol, __u64 now, int all)
{
	struct ol_stream **sp;
	size_t it = 0;

	if (!ol)
		return;
	while ((sp = hmap__next(ol->streams, &it, NULL)))
		if (*sp)
			stream_run(ol, *sp, now, all);
	trim_calls(ol, now);
}

void order_link__proc_exit(struct order_link *ol, __u32 pid)
{
	struct ol_handle **hp;
	struct ol_stream **sp;
	struct hkey k;
	size_t it = 0;

	if (!ol)
		return;
	while ((sp = hmap__next(ol->streams, &it, &k))) {
		if (!*sp || (*sp)->pid != pid)
			continue;
		stream_run(ol, *sp, 0, 1);
		stream_free(*sp);
		*sp = NULL; /* the key stays, empty: deleting while iterating is not allowed */
	}
	it = 0;
	while ((hp = hmap__next(ol->handles, &it, &k))) {
		if (!*hp || (*hp)->pid != pid)
			continue;
		ol->ncalls -= (*hp)->n;
		handle_free(*hp);
		*hp = NULL;
	}
}

void order_link__stats(const struct order_link *ol, struct order_link_stats *s)
{
	*s = ol->st;
}
