// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `bpfsight export --format memory-snapshot`: the CUDA memory of a trace as the pickle
 * torch.cuda.memory._snapshot() returns (torch/csrc/cuda/memory_snapshot.cpp), which
 * pytorch.org/memory_viz and torch.cuda._memory_viz open (docs/EXPORT.md, "PyTorch memory
 * snapshot"):
 *
 *   {'segments': [{'device', 'address', 'total_size', 'allocated_size', 'active_size',
 *                  'requested_size', 'stream', 'segment_type', 'segment_pool_id',
 *                  'is_expandable', 'frames', 'blocks': [{'address', 'size',
 *                  'requested_size', 'state', 'frames', 'history'}]}],
 *    'device_traces': [[{'action', 'addr' | 'device_free', 'size', 'stream', 'frames',
 *                        'time_us'}, ...] per device],
 *    'bpfsight_devices': [{'pid', 'process', 'device'} or None per device]}
 *
 * A device's trace holds every allocation ('alloc') and free ('free_requested' then
 * 'free_completed': the report comes when the block goes back to the allocator), the segments
 * derived from the reserved totals ('segment_alloc', 'segment_free': mem_segments.h) and the
 * OOMs ('oom', 'device_free' 0: the report does not say), each with its allocation's frames
 * (--stacks=mem) and the wall-clock time in microseconds. 'segments' is the allocator's state
 * at each process's last record: its segments with the blocks still allocated in them
 * ('active_allocated') and the gaps between ('inactive'); 'history' repeats an allocated
 * block's size and frames for torch 1.13's _memory_viz. Sizes are the blocks' (the
 * allocator's rounding): the reports do not give the size asked for.
 *
 * The device index is the CUDA device's, unless several processes used one index: then each
 * (process, device) is an index of its own, in the order they first allocated, which
 * 'bpfsight_devices' tells (and a line on stderr for each of the first SNAP_SAID). CPU tensors
 * are not in a CUDA snapshot: they are left out, and said. A trace with no GPU memory event
 * writes nothing (-ENODATA).
 *
 * Streamed: device_traces is a list per device and the records interleave devices, so each
 * (process, device)'s entries are written as pickle opcodes as they come into a buffer of its
 * own in memory; a buffer of SNAP_CHUNK bytes, or every buffer once they hold SNAP_HELD
 * together, goes as a chunk to the end of one unlinked temporary file in OUT's directory
 * (O_TMPFILE: the disk OUT goes to, not a /tmp that may be memory), and each device's chunks
 * and buffer are copied into OUT in order at the end. One descriptor whatever the number of
 * processes. Memory: the live blocks and segments, a memo id per distinct stack and string of
 * each stream, SNAP_HELD bytes of entries and an offset per chunk.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "array.h"
#include "export.h"
#include "hmap.h"
#include "mem.h"
#include "mem_live.h"
#include "mem_segments.h"
#include "msg.h"
#include "pickle.h"
#include "stack_format.h"

struct snap_entry {
	const char *action;
	__u64 addr; /* the OOM's: device_free */
	__u64 size, stream;
	__u32 stack;
	__u64 ts;
};

#define SNAP_PENDING 8 /* an allocation and the segments it made (one, or a few around it) */
#define SNAP_CHUNK   (64u << 10) /* a device's buffer spilled alone: chunks few and long */
#define SNAP_HELD    (8u << 20)	 /* every device's buffers together: then all are spilled */
#define SNAP_SAID    8		 /* devices each named on stderr */

/* Bytes of a device's trace in the temporary file. */
struct snap_chunk {
	__u64 off, len;
};

/* One process's CUDA device. */
struct snap_dev {
	__u32 pid;
	__s16 device;
	__u32 index; /* its place in device_traces, chosen at the end */
	struct mem_segs *segs;
	/*
	 * Its trace entries (MARK, entries, APPENDS and MARK again): the chunks spilled, then
	 * what mem holds (open_memstream's buf and size; NULL: nothing since the last spill).
	 */
	struct snap_chunk *chunks;
	size_t nchunks, chunks_cap;
	FILE *mem;
	char *buf;
	size_t size;
	__u64 held;	     /* bytes in mem */
	struct pickle p;     /* writing to mem */
	struct hmap *frames; /* {stack id, 0} -> the memo id + 1 of its frames in tmp */
	__u64 entries;
	/*
	 * Its last allocation and the segments it made, held until the record after it: the
	 * USDT probe's MEM_STREAM (torch 2.2+) comes just after the block's MEM_ALLOC and gives
	 * their stream.
	 */
	struct snap_entry pending[SNAP_PENDING];
	__u32 npending;
	int holding; /* an allocation is being applied: its segment events are held */
};

struct snap {
	FILE *out;
	char *dir; /* OUT's directory, where the temporary file goes */
	FILE *tmp; /* the devices' chunks; NULL until the first spill */
	__u64 tmp_size;
	__u64 held;	     /* bytes in the devices' mem */
	struct pickle p;     /* OUT's own opcodes */
	struct hmap *frames; /* the same as snap_dev.frames, for OUT */
	__u32 memo;	     /* the pickle's memo ids, every stream's */
	__s64 wall;	     /* CLOCK_REALTIME - CLOCK_MONOTONIC at the start; 0: not said */
	struct hmap *devs;   /* {pid, device} -> index in v + 1 */
	struct snap_dev **v; /* in the order they first allocated */
	size_t n, cap;
	struct mem_live *live; /* GPU blocks, each with its allocation's stack id as site */
	const struct trace_model *m;
	__u64 cpu_events; /* CPU allocations, frees and OOMs left out */
};

static void snap_dev_free(struct snap_dev *d)
{
	if (!d)
		return;
	pickle__free(&d->p);
	if (d->mem)
		fclose(d->mem);
	free(d->buf);
	free(d->chunks);
	hmap__free(d->frames);
	mem_segs__free(d->segs);
	free(d);
}

static void snap_free(struct snap *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		snap_dev_free(s->v[i]);
	free(s->v);
	pickle__free(&s->p);
	if (s->out)
		fclose(s->out);
	if (s->tmp)
		fclose(s->tmp);
	hmap__free(s->frames);
	hmap__free(s->devs);
	mem_live__free(s->live);
	free(s->dir);
	free(s);
}

static void *snap_open(const char *out, const struct trace_meta *meta,
		       const struct export_opts *opts, int *err)
{
	struct snap *s = calloc(1, sizeof(*s));
	char *slash;
	int fd;

	*err = -ENOMEM;
	if (!s)
		return NULL;
	s->frames = hmap__new(sizeof(__u32));
	s->devs = hmap__new(sizeof(size_t));
	s->live = mem_live__new();
	s->dir = strdup(out);
	if (!s->frames || !s->devs || !s->live || !s->dir)
		goto fail;
	slash = strrchr(s->dir, '/');
	if (!slash)
		strcpy(s->dir, "."); /* OUT's name has a byte at least, and its NUL */
	else if (slash == s->dir)
		slash[1] = 0; /* OUT in / */
	else
		*slash = 0;
	if (meta && meta->start.mono_ns && meta->start.realtime_ns)
		s->wall = (__s64)(meta->start.realtime_ns - meta->start.mono_ns);
	fd = export__create(out);
	if (fd < 0) {
		*err = fd;
		goto fail;
	}
	s->out = fdopen(fd, "w");
	if (!s->out) {
		*err = -errno;
		close(fd);
		goto fail;
	}
	pickle__init(&s->p, s->out, &s->memo);
	return s;
fail:
	snap_free(s);
	return NULL;
}

/* The unlinked file in OUT's directory (where it has no O_TMPFILE: in TMPDIR): 0 or -errno. */
static int snap_tmp(struct snap *s)
{
	int fd = open(s->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600), err;

	if (fd >= 0) {
		s->tmp = fdopen(fd, "w+");
		if (!s->tmp)
			close(fd);
	} else if (errno == EOPNOTSUPP || errno == EISDIR) {
		s->tmp = tmpfile();
	}
	if (s->tmp)
		return 0;
	err = errno ? -errno : -EIO;
	pr_err("cannot create a temporary file in %s for the device traces: %s\n", s->dir,
	       strerror(-err));
	return err;
}

/* D's buffer closed: its bytes in D->buf, D->size. 0, or -ENOMEM (a write to it failed). */
static int snap_mem_close(struct snap *s, struct snap_dev *d)
{
	int err = d->mem && fclose(d->mem) ? -ENOMEM : 0;

	d->mem = NULL;
	d->p.f = NULL;
	s->held -= d->held;
	d->held = 0;
	return err;
}

/* D's buffer open, for the pickle to write to: a new one after a spill. */
static int snap_mem(struct snap_dev *d)
{
	if (d->mem)
		return 0;
	free(d->buf);
	d->buf = NULL;
	d->mem = open_memstream(&d->buf, &d->size);
	if (!d->mem)
		return -ENOMEM;
	d->p.f = d->mem; /* the stream's memo ids stay: only where its bytes go changes */
	return 0;
}

/* D's closed buffer to the end of the temporary file, a chunk of its trace. */
static int snap_chunk_add(struct snap *s, struct snap_dev *d)
{
	int err;

	if (!s->tmp && (err = snap_tmp(s)))
		return err;
	/* from 16: thousands of processes may each spill a few chunks */
	if (array__grow_from((void **)&d->chunks, d->nchunks, &d->chunks_cap, sizeof(*d->chunks),
			     16))
		return -ENOMEM;
	if (fwrite(d->buf, 1, d->size, s->tmp) != d->size)
		return errno ? -errno : -EIO;
	d->chunks[d->nchunks++] = (struct snap_chunk){ s->tmp_size, d->size };
	s->tmp_size += d->size;
	return 0;
}

/* D's buffer spilled: the memory it held goes back now (a device may write nothing more). */
static int snap_spill(struct snap *s, struct snap_dev *d)
{
	int err = snap_mem_close(s, d);

	if (!err && d->size)
		err = snap_chunk_add(s, d);
	free(d->buf);
	d->buf = NULL;
	d->size = 0;
	return err;
}

/* What D's last writes added to the memory held: past the bounds, buffers spilled. */
static int snap_account(struct snap *s, struct snap_dev *d)
{
	off_t pos = ftello(d->mem);
	int err = 0;

	if (pos < 0)
		return -errno;
	s->held += pos - d->held;
	d->held = pos;
	if (d->held >= SNAP_CHUNK)
		return snap_spill(s, d);
	for (size_t i = 0; s->held >= SNAP_HELD && i < s->n && !err; i++)
		err = snap_spill(s, s->v[i]);
	return err;
}

/* PID's DEVICE into *OUT, made the first time (its trace opened with the first MARK). */
static int snap_dev(struct snap *s, __u32 pid, __s16 device, struct snap_dev **out)
{
	size_t *at = hmap__get(s->devs, (struct hkey){ pid, (__u16)device }, 1);
	struct snap_dev *d;
	int err;

	if (!at)
		return -ENOMEM;
	if (*at) {
		*out = s->v[*at - 1];
		return 0;
	}
	if (array__grow((void **)&s->v, s->n, &s->cap, sizeof(*s->v)))
		return -ENOMEM;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->pid = pid;
	d->device = device;
	d->segs = mem_segs__new();
	d->frames = hmap__new(sizeof(__u32));
	pickle__init(&d->p, NULL, &s->memo);
	err = d->segs && d->frames ? snap_mem(d) : -ENOMEM;
	if (err) {
		snap_dev_free(d);
		return err;
	}
	pickle__op(&d->p, PICKLE_MARK);
	s->v[s->n++] = d;
	*at = s->n;
	*out = d;
	return 0;
}

/* A frame as PyTorch's symbolizer gives it: {'name', 'filename', 'line'}. */
static void frame(struct pickle *p, const struct bs_frame *f, const struct trace_model *m)
{
	char buf[512];

	pickle__op(p, PICKLE_DICT);
	pickle__op(p, PICKLE_MARK);
	pickle__str_memo(p, "name");
	pickle__str_memo(p, stack_frame__func(f, m, buf, sizeof(buf)));
	pickle__str_memo(p, "filename");
	pickle__str_memo(p, stack_frame__file(f, m));
	pickle__str_memo(p, "line");
	pickle__uint(p, f->kind == BS_FRAME_PYTHON ? f->line : 0);
	pickle__op(p, PICKLE_SETITEMS);
}

/*
 * The frames of stack STACK (0: none), innermost first, a truncated one ending with its marker:
 * written once per stream, MEMO's memo id afterwards (the same list object).
 */
static int frames(struct pickle *p, struct hmap *memo, const struct trace_model *m, __u32 stack)
{
	const struct trace_stack *t = stack ? trace_model__stack(m, stack) : NULL;
	__u32 *id;

	if (!t) {
		pickle__op(p, PICKLE_LIST);
		return 0;
	}
	id = hmap__get(memo, (struct hkey){ stack, 0 }, 1);
	if (!id)
		return -ENOMEM;
	if (*id) {
		pickle__get(p, *id - 1);
		return 0;
	}
	pickle__op(p, PICKLE_LIST);
	pickle__op(p, PICKLE_MARK);
	for (__u32 i = 0; i < t->nframes; i++)
		frame(p, &t->frames[i], m);
	if (t->flags & BS_STACK_TRUNCATED)
		frame(p, &stack_frame_truncated, m);
	pickle__op(p, PICKLE_APPENDS);
	*id = pickle__put(p) + 1;
	return 0;
}

/* One entry of D's trace, in batches of PICKLE_BATCH. */
static int entry(struct snap *s, struct snap_dev *d, const struct snap_entry *e)
{
	struct pickle *p = &d->p;
	int err = snap_mem(d);

	if (err)
		return err;
	if (d->entries && !(d->entries % PICKLE_BATCH)) {
		pickle__op(p, PICKLE_APPENDS);
		pickle__op(p, PICKLE_MARK);
	}
	d->entries++;
	pickle__op(p, PICKLE_DICT);
	pickle__op(p, PICKLE_MARK);
	pickle__str_memo(p, "action");
	pickle__str_memo(p, e->action);
	pickle__str_memo(p, strcmp(e->action, "oom") ? "addr" : "device_free");
	pickle__uint(p, e->addr);
	pickle__str_memo(p, "size");
	pickle__uint(p, e->size);
	pickle__str_memo(p, "stream");
	pickle__uint(p, e->stream);
	pickle__str_memo(p, "frames");
	err = frames(p, d->frames, s->m, e->stack);
	pickle__str_memo(p, "time_us");
	pickle__int(p, ((__s64)e->ts + s->wall) / 1000);
	pickle__op(p, PICKLE_SETITEMS);
	if (!err)
		err = pickle__error(p);
	return err ? err : snap_account(s, d);
}

static int entry_or_hold(struct snap *s, struct snap_dev *d, const struct snap_entry *e);

struct seg_ctx {
	struct snap *s;
	struct snap_dev *d;
	__u64 ts;
};

static int seg_event(void *arg, enum mem_seg_event what, const struct mem_seg *g)
{
	struct seg_ctx *c = arg;
	struct snap_entry e = {
		.action = what == MEM_SEG_ALLOC ? "segment_alloc" : "segment_free",
		.addr = g->addr,
		.size = g->size,
		.stream = g->stream,
		.stack = g->stack,
		.ts = c->ts,
	};

	return entry_or_hold(c->s, c->d, &e);
}

/* D's held entries into its trace. */
static int flush_pending(struct snap *s, struct snap_dev *d)
{
	__u32 n = d->npending;
	int err = 0;

	d->npending = 0;
	for (__u32 i = 0; i < n && !err; i++)
		err = entry(s, d, &d->pending[i]);
	return err;
}

/* E into D's trace, or held with the allocation being applied (full: flushed first). */
static int entry_or_hold(struct snap *s, struct snap_dev *d, const struct snap_entry *e)
{
	int err;

	if (!d->holding)
		return entry(s, d, e);
	if (d->npending == SNAP_PENDING && (err = flush_pending(s, d)))
		return err;
	d->pending[d->npending++] = *e;
	return 0;
}

/* The block at R's address: its stream, for its allocation's entry and its segment. */
static int snap_stream(struct snap *s, const struct bs_mem_stream *r)
{
	struct snap_dev *d;
	int err = snap_dev(s, r->h.pid, r->device, &d);

	if (err)
		return err;
	mem_live__stream(s->live, r);
	for (__u32 i = 0; i < d->npending; i++) {
		/* The block's stream, and the segments its allocation made. */
		if (!strcmp(d->pending[i].action, "segment_alloc"))
			mem_segs__stream(d->segs, d->pending[i].addr, r->stream);
		d->pending[i].stream = r->stream;
	}
	return flush_pending(s, d);
}

static int snap_alloc(struct snap *s, const struct bs_mem_alloc *r, const struct event *ev)
{
	int is_free = r->flags & BS_MEM_FREE, err;
	struct mem_block freed = {};
	struct snap_entry e = { .action = "alloc", .addr = r->addr, .ts = r->h.ts };
	struct seg_ctx c = { s, NULL, r->h.ts };
	const struct mem_seg *g;
	struct snap_dev *d;

	err = snap_dev(s, r->h.pid, r->device, &d);
	if (err)
		return err;
	c.d = d;
	err = flush_pending(s, d);
	if (err)
		return err;
	e.stack = !is_free && ev && ev->stack ? ev->stack->id : 0;
	e.size = mem_live__apply(s->live, r, e.stack, &freed);
	if (is_free)
		e.stack = freed.site;
	d->holding = !is_free;
	err = mem_segs__apply(d->segs, r, e.size, e.stack, seg_event, &c);
	d->holding = 0;
	if (err || !e.size)
		return err ? err : flush_pending(s, d); /* no bytes: nothing the allocator holds */
	g = mem_segs__find(d->segs, r->addr);
	/* A free's: its block's (MEM_STREAM); an allocation's: its segment's, until its own. */
	e.stream = is_free ? freed.stream : g ? g->stream : 0;
	if (!is_free) {
		d->holding = 1;
		err = entry_or_hold(s, d, &e);
		d->holding = 0;
		return err;
	}
	e.action = "free_requested";
	err = entry(s, d, &e);
	e.action = "free_completed";
	return err ? err : entry(s, d, &e);
}

static int snap_oom(struct snap *s, const struct bs_mem_oom *o, const struct event *ev)
{
	struct seg_ctx c = { s, NULL, o->h.ts };
	struct snap_entry e = {
		.action = "oom",
		.size = o->bytes,
		.stack = ev && ev->stack ? ev->stack->id : 0,
		.ts = o->h.ts,
	};
	struct snap_dev *d;
	int err = snap_dev(s, o->h.pid, o->device, &d);

	if (err)
		return err;
	c.d = d;
	err = flush_pending(s, d);
	if (err)
		return err;
	/* The allocator empties its cache before it gives up: what the totals show released. */
	err = o->source == BS_MEM_SRC_REPORT
		      ? mem_segs__reserved(d->segs, o->reserved, seg_event, &c)
		      : 0;
	return err ? err : entry(s, d, &e);
}

static int snap_record(void *st, const struct bs_hdr *rec, const struct event *ev,
		       const struct trace_model *m)
{
	struct snap *s = st;
	const struct bs_mem_alloc *a = (const void *)rec;
	const struct bs_mem_oom *o = (const void *)rec;

	s->m = m;
	/* A CUDA device's index is >= 0: the CPU's are left out, other values are no device. */
	if (rec->type == BS_REC_MEM_ALLOC && rec->size >= sizeof(*a)) {
		if (a->device >= 0)
			return snap_alloc(s, a, ev);
		s->cpu_events += a->device == BS_MEM_DEV_CPU;
	} else if (rec->type == BS_REC_MEM_STREAM && rec->size >= sizeof(struct bs_mem_stream)) {
		if (((const struct bs_mem_stream *)rec)->device >= 0)
			return snap_stream(s, (const void *)rec);
	} else if (rec->type == BS_REC_MEM_OOM && rec->size >= sizeof(*o)) {
		if (o->device >= 0)
			return snap_oom(s, o, ev);
		s->cpu_events += o->device == BS_MEM_DEV_CPU;
	}
	return 0;
}

/* The blocks of one device still allocated, by address. */
struct live_blocks {
	struct snap_block {
		__u64 addr, size;
		__u32 stack;
	} * v;
	size_t n, cap;
	int err;
};

static void live_block(void *arg, __u32 pid, __s16 device, __u64 addr, const struct mem_block *b)
{
	struct live_blocks *l = arg;

	if (!l->err && array__grow((void **)&l->v, l->n, &l->cap, sizeof(*l->v)))
		l->err = -ENOMEM;
	if (!l->err)
		l->v[l->n++] = (struct snap_block){ addr, b->bytes, b->site };
}

static int cmp_block(const void *a, const void *b)
{
	const struct snap_block *x = a, *y = b;

	return (x->addr > y->addr) - (x->addr < y->addr);
}

static void kv_uint(struct pickle *p, const char *key, __u64 v)
{
	pickle__str_memo(p, key);
	pickle__uint(p, v);
}

/* One block of a segment: allocated (STACK its allocation's) or a gap. */
static int block(struct snap *s, __u64 addr, __u64 size, int active, __u32 stack)
{
	struct pickle *p = &s->p;
	int err;

	pickle__op(p, PICKLE_DICT);
	pickle__op(p, PICKLE_MARK);
	kv_uint(p, "address", addr);
	kv_uint(p, "size", size);
	kv_uint(p, "requested_size", active ? size : 0);
	pickle__str_memo(p, "state");
	pickle__str_memo(p, active ? "active_allocated" : "inactive");
	pickle__str_memo(p, "frames");
	err = frames(p, s->frames, s->m, active ? stack : 0);
	if (!err && active) { /* torch 1.13's _memory_viz reads a block's frames here */
		pickle__str_memo(p, "history");
		pickle__op(p, PICKLE_LIST);
		pickle__op(p, PICKLE_MARK);
		pickle__op(p, PICKLE_DICT);
		pickle__op(p, PICKLE_MARK);
		kv_uint(p, "addr", addr);
		kv_uint(p, "real_size", size);
		pickle__str_memo(p, "frames");
		err = frames(p, s->frames, s->m, stack);
		pickle__op(p, PICKLE_SETITEMS);
		pickle__op(p, PICKLE_APPENDS);
	}
	pickle__op(p, PICKLE_SETITEMS);
	return err;
}

/* Segment G of D, with the blocks of L inside it (L->v from *AT on, by address). */
static int segment(struct snap *s, const struct snap_dev *d, const struct mem_seg *g,
		   const struct live_blocks *l, size_t *at)
{
	struct pickle *p = &s->p;
	__u64 end = g->addr + g->size, cur = g->addr, used = 0;
	size_t i;
	int err = 0;

	while (*at < l->n && l->v[*at].addr < g->addr)
		(*at)++; /* in no segment: cannot be, the segments hold every block seen */
	for (i = *at; i < l->n && l->v[i].addr < end; i++)
		used += l->v[i].size;
	pickle__op(p, PICKLE_DICT);
	pickle__op(p, PICKLE_MARK);
	kv_uint(p, "device", d->index);
	kv_uint(p, "address", g->addr);
	kv_uint(p, "total_size", g->size);
	kv_uint(p, "allocated_size", used);
	kv_uint(p, "active_size", used);
	kv_uint(p, "requested_size", used);
	kv_uint(p, "stream", g->stream);
	pickle__str_memo(p, "segment_type");
	pickle__str_memo(p, g->small ? "small" : "large");
	pickle__str_memo(p, "segment_pool_id");
	pickle__int(p, 0);
	pickle__int(p, 0);
	pickle__op(p, PICKLE_TUPLE2);
	pickle__str_memo(p, "is_expandable");
	pickle__op(p, PICKLE_FALSE);
	pickle__str_memo(p, "frames");
	err = frames(p, s->frames, s->m, g->stack);
	pickle__str_memo(p, "blocks");
	pickle__op(p, PICKLE_LIST);
	pickle__op(p, PICKLE_MARK);
	/* The blocks tile the segment: gaps between them are free ('inactive'). */
	for (; !err && *at < l->n && l->v[*at].addr < end; (*at)++) {
		const struct snap_block *b = &l->v[*at];
		__u64 size = b->addr + b->size > end ? end - b->addr : b->size;

		if (b->addr < cur)
			continue; /* overlapping a block before it: cannot be, but stay a tiling */
		if (b->addr > cur)
			err = block(s, cur, b->addr - cur, 0, 0);
		if (!err)
			err = block(s, b->addr, size, 1, b->stack);
		cur = b->addr + size;
	}
	if (!err && cur < end)
		err = block(s, cur, end - cur, 0, 0);
	pickle__op(p, PICKLE_APPENDS);
	pickle__op(p, PICKLE_SETITEMS);
	return err;
}

/* Every segment of D, as it was at its process's last record. *COUNT: items in the batch. */
static int segments_of(struct snap *s, const struct snap_dev *d, __u64 *count)
{
	struct live_blocks l = {};
	const struct mem_seg *g;
	size_t at = 0;
	int err = 0;

	mem_live__each(s->live, d->pid, d->device, live_block, &l);
	if (l.err) {
		free(l.v);
		return l.err;
	}
	if (l.n)
		qsort(l.v, l.n, sizeof(*l.v), cmp_block);
	for (size_t i = 0; !err && (g = mem_segs__at(d->segs, i)); i++) {
		if (*count && !(*count % PICKLE_BATCH)) {
			pickle__op(&s->p, PICKLE_APPENDS);
			pickle__op(&s->p, PICKLE_MARK);
		}
		(*count)++;
		err = segment(s, d, g, &l, &at);
	}
	free(l.v);
	return err;
}

/* LEN bytes of the temporary file from OFF, appended to OUT. */
static int copy_chunk(struct snap *s, __u64 off, __u64 len)
{
	char buf[1 << 16];
	ssize_t n;

	for (; len; off += n, len -= n) {
		n = pread(fileno(s->tmp), buf, len < sizeof(buf) ? len : sizeof(buf), off);
		if (n <= 0)
			return n ? -errno : -EIO; /* shorter than what was written to it */
		if (fwrite(buf, 1, n, s->out) != (size_t)n)
			return errno ? -errno : -EIO;
	}
	return 0;
}

/* D's entries, appended to its list in OUT: its chunks, then its buffer. */
static int copy_trace(struct snap *s, struct snap_dev *d)
{
	int err = snap_mem(d);

	if (err)
		return err;
	pickle__op(&d->p, PICKLE_APPENDS);
	err = pickle__error(&d->p);
	if (!err)
		err = snap_mem_close(s, d);
	for (size_t i = 0; i < d->nchunks && !err; i++)
		err = copy_chunk(s, d->chunks[i].off, d->chunks[i].len);
	if (!err && fwrite(d->buf, 1, d->size, s->out) != d->size)
		err = errno ? -errno : -EIO;
	return err;
}

/*
 * Device indexes: the CUDA device's, unless two processes used one; then one per (process,
 * device) in the order they first allocated. Returns how many device_traces has.
 */
static size_t choose_indexes(struct snap *s)
{
	size_t n = 0, i, j;
	int clash = 0;

	for (i = 0; i < s->n && !clash; i++)
		for (j = 0; j < i && !clash; j++)
			clash = s->v[i]->device == s->v[j]->device;
	for (i = 0; i < s->n; i++) {
		s->v[i]->index = clash ? i : (__u32)s->v[i]->device;
		if (s->v[i]->index + 1 > n)
			n = s->v[i]->index + 1;
	}
	/* a line each for the first few: thousands of processes would bury the rest */
	for (i = 0; clash && i < s->n && i < SNAP_SAID; i++)
		pr_info("several processes used one CUDA device: device %u of the snapshot is pid "
			"%u's cuda:%d\n",
			s->v[i]->index, s->v[i]->pid, s->v[i]->device);
	if (clash && s->n > SNAP_SAID)
		pr_info("and %zu more (process, device) pairs: the snapshot's bpfsight_devices lists "
			"every device's\n",
			s->n - SNAP_SAID);
	return n;
}

static struct snap_dev *dev_at(const struct snap *s, size_t index)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i]->index == index)
			return s->v[i];
	return NULL;
}

/* The snapshot dict into OUT, the device traces copied in. */
static int snap_write(struct snap *s)
{
	struct pickle *p = &s->p;
	size_t ntraces = choose_indexes(s);
	struct snap_dev *d;
	char name[16];
	__u64 count = 0;
	int err = 0;

	pickle__proto(p);
	pickle__op(p, PICKLE_DICT);
	pickle__op(p, PICKLE_MARK);
	pickle__str_memo(p, "segments");
	pickle__op(p, PICKLE_LIST);
	pickle__op(p, PICKLE_MARK);
	for (size_t i = 0; i < ntraces && !err; i++)
		if ((d = dev_at(s, i)))
			err = segments_of(s, d, &count);
	pickle__op(p, PICKLE_APPENDS);
	pickle__str_memo(p, "device_traces");
	pickle__op(p, PICKLE_LIST);
	pickle__op(p, PICKLE_MARK);
	if (!err && s->tmp && fflush(s->tmp)) /* the chunks are read back by their descriptor */
		err = errno ? -errno : -EIO;
	for (size_t i = 0; i < ntraces && !err; i++) {
		pickle__op(p, PICKLE_LIST);
		if ((d = dev_at(s, i)))
			err = copy_trace(s, d);
	}
	pickle__op(p, PICKLE_APPENDS);
	/* Which process and device each index is (ours: PyTorch's snapshot is one process's). */
	pickle__str_memo(p, "bpfsight_devices");
	pickle__op(p, PICKLE_LIST);
	pickle__op(p, PICKLE_MARK);
	for (size_t i = 0; i < ntraces && !err; i++) {
		if (!(d = dev_at(s, i))) {
			pickle__op(p, PICKLE_NONE);
			continue;
		}
		pickle__op(p, PICKLE_DICT);
		pickle__op(p, PICKLE_MARK);
		kv_uint(p, "pid", d->pid);
		pickle__str_memo(p, "process");
		pickle__str(p, trace_model__process_name(s->m, d->pid));
		pickle__str_memo(p, "device");
		pickle__str(p, mem_device_name(d->device, name, sizeof(name)));
		pickle__op(p, PICKLE_SETITEMS);
	}
	pickle__op(p, PICKLE_APPENDS);
	pickle__op(p, PICKLE_SETITEMS);
	pickle__op(p, PICKLE_STOP);
	if (!err)
		err = pickle__error(p);
	return err;
}

static int snap_finish(void *st, const struct trace_model *m, const struct trace_status *status)
{
	struct snap *s = st;
	int err = -ENODATA, e;

	s->m = m;
	for (size_t i = 0; i < s->n && err == -ENODATA; i++)
		if ((e = flush_pending(s, s->v[i])))
			err = e;
	if (s->n && err == -ENODATA)
		err = snap_write(s);
	e = fclose(s->out);
	s->out = NULL;
	if (!err && e)
		err = errno ? -errno : -EIO;
	if (!err && s->cpu_events)
		pr_info("left out %llu CPU allocations, frees and OOMs: a CUDA memory snapshot "
			"holds the GPU's\n",
			(unsigned long long)s->cpu_events);
	snap_free(s);
	return err;
}

static void snap_abort(void *st)
{
	snap_free(st);
}

const struct exporter export_memory_snapshot = {
	.format = "memory-snapshot",
	.desc = "the GPU's memory events as PyTorch's memory snapshot (pytorch.org/memory_viz)",
	.suffix = ".snapshot.pickle",
	.open = snap_open,
	.record = snap_record,
	.finish = snap_finish,
	.abort = snap_abort,
	.needs = "GPU memory events (record -t mem a job that allocates CUDA memory; CPU tensors "
		 "are not in a CUDA memory snapshot)",
};
