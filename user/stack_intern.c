// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Symbolize raw user stacks while recording and intern them (stack_intern.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "record_ctx.h"
#include "records.h"
#include "stack_intern.h"
#include "stats_math.h"
#include "uprobe_mgr.h"

/* A process's raw addresses seen before: the cache in front of symbolization. */
struct raw_ent {
	__u64 *ips;
	__u32 n;
	__u32 id;
	__u32 capped;
};

/* A stack written to the file, by content. */
struct stack_ent {
	struct bs_frame *frames;
	__u32 n;
	__u32 id;
	__u32 flags;
};

#define RAW_CACHE_MAX (1u << 16) /* a cache: emptied when it grows past this */

struct stack_intern {
	struct hmap *raw;    /* (hash of ips, pid << 32 | generation) -> struct raw_ent */
	struct hmap *stacks; /* (hash of frames, n << 16 | flags) -> struct stack_ent */
	struct hmap *gens;   /* pid -> __u32 generation, bumped by forget */
	__u32 next_id;
};

static __u64 hash64(const void *p, size_t len, __u64 h)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < len; i++) {
		h ^= b[i];
		h *= 1099511628211ull; /* FNV-1a 64 */
	}
	return h;
}

struct stack_intern *stack_intern__new(void)
{
	struct stack_intern *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->raw = hmap__new(sizeof(struct raw_ent));
	s->stacks = hmap__new(sizeof(struct stack_ent));
	s->gens = hmap__new(sizeof(__u32));
	if (!s->raw || !s->stacks || !s->gens) {
		stack_intern__free(s);
		return NULL;
	}
	return s;
}

static void raw_clear(struct stack_intern *s)
{
	size_t it = 0;
	struct raw_ent *e;

	while ((e = hmap__next(s->raw, &it, NULL)))
		free(e->ips);
	hmap__free(s->raw);
	s->raw = hmap__new(sizeof(struct raw_ent));
}

void stack_intern__free(struct stack_intern *s)
{
	size_t it = 0;
	struct stack_ent *e;

	if (!s)
		return;
	if (s->raw)
		raw_clear(s);
	hmap__free(s->raw);
	while (s->stacks && (e = hmap__next(s->stacks, &it, NULL)))
		free(e->frames);
	hmap__free(s->stacks);
	hmap__free(s->gens);
	free(s);
}

void stack_intern__forget(struct stack_intern *s, pid_t pid)
{
	__u32 *g = hmap__get(s->gens, (struct hkey){ (__u64)pid, 0 }, 1);

	if (g)
		(*g)++;
}

static __u32 gen_of(struct stack_intern *s, pid_t pid)
{
	__u32 *g = hmap__get(s->gens, (struct hkey){ (__u64)pid, 0 }, 0);

	return g ? *g : 0;
}

/* Symbolize IPS into FRAMES (room for n + 1); returns how many, a cut marker included. */
static __u32 symbolize(struct record_ctx *ctx, struct uprobe_mgr *m, pid_t pid, const __u64 *ips,
		       __u32 n, struct bs_frame *frames)
{
	struct uprobe_frame uf;
	const char *cut_in = NULL;
	__u32 k = 0;

	for (__u32 i = 0; i < n; i++) {
		int found = m ? !uprobe_mgr__frame(m, pid, ips[i], i > 0, &uf) : 0;

		if (i > 0 && (!found || !uf.valid)) {
			/* Not a return address: the frame below kept no frame pointer. */
			frames[k++] = (struct bs_frame){ .kind = BS_FRAME_CUT,
							 .file_id = record_ctx__intern(ctx, cut_in) };
			break;
		}
		frames[k++] = (struct bs_frame){
			.addr = found ? uf.vaddr : ips[i],
			.func_id = found ? record_ctx__intern(ctx, uf.func) : 0,
			.file_id = found ? record_ctx__intern(ctx, uf.module) : 0,
			.kind = BS_FRAME_NATIVE,
		};
		cut_in = found ? uf.module : NULL;
	}
	return k;
}

/* The id of FRAMES, writing the STACK record when new. */
static __u32 intern_frames(struct stack_intern *s, struct record_ctx *ctx,
			   const struct bs_frame *frames, __u32 n, __u32 flags, pid_t pid,
			   __u32 tid, __u64 ts)
{
	struct hkey key = { hash64(frames, n * sizeof(*frames), 14695981039346656037ull),
			    (__u64)n << 16 | flags };
	struct stack_ent *e = hmap__get(s->stacks, key, 1);
	struct {
		struct bs_stack h;
		struct bs_frame f[BS_STACK_MAX_FRAMES + 1];
	} rec;
	__u32 id;

	if (!e)
		return 0;
	if (e->id) /* the same key: the same frames, or a 64-bit collision (then compared) */
		return e->n == n && !memcmp(e->frames, frames, n * sizeof(*frames)) ? e->id : 0;
	e->frames = malloc(n * sizeof(*frames));
	if (!e->frames)
		return 0;
	memcpy(e->frames, frames, n * sizeof(*frames));
	e->n = n;
	e->flags = flags;
	e->id = id = ++s->next_id;
	record_ctx__hdr(&rec.h.h, BS_REC_STACK, sizeof(rec.h) + n * sizeof(*frames), pid, tid, ts);
	rec.h.id = id;
	rec.h.nframes = n;
	rec.h.flags = flags;
	memcpy(rec.f, frames, n * sizeof(*frames));
	record_ctx__write(ctx, &rec);
	return id;
}

__u32 stack_intern__native(struct stack_intern *s, struct record_ctx *ctx, struct uprobe_mgr *m,
			   pid_t pid, __u32 tid, __u64 ts, const __u64 *ips, __u32 n, int capped)
{
	struct bs_frame frames[BS_STACK_MAX_FRAMES + 1];
	struct hkey key;
	struct raw_ent *e;
	__u32 k, id;

	if (!n)
		return 0;
	if (n > BS_STACK_MAX_FRAMES)
		n = BS_STACK_MAX_FRAMES;
	key = (struct hkey){ hash64(ips, n * sizeof(*ips), 14695981039346656037ull),
			     (__u64)pid << 32 | gen_of(s, pid) };
	e = hmap__get(s->raw, key, 0);
	if (e && e->n == n && e->capped == !!capped && !memcmp(e->ips, ips, n * sizeof(*ips)))
		return e->id;
	k = symbolize(ctx, m, pid, ips, n, frames);
	id = intern_frames(s, ctx, frames, k,
			   capped && frames[k - 1].kind != BS_FRAME_CUT ? BS_STACK_TRUNCATED : 0,
			   pid, tid, ts);
	if (!id || e) /* a collision in the cache keeps its first entry */
		return id;
	if (hmap__count(s->raw) >= RAW_CACHE_MAX)
		raw_clear(s);
	e = s->raw ? hmap__get(s->raw, key, 1) : NULL;
	if (e && (e->ips = malloc(n * sizeof(*ips)))) {
		memcpy(e->ips, ips, n * sizeof(*ips));
		e->n = n;
		e->id = id;
		e->capped = !!capped;
	}
	return id;
}
