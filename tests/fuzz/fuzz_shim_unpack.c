// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for the cupti-shim batch unpacker (user/shim_channel/shim_unpack.c, and the
 * families' hooks it calls: user/families/gpu/shim_join.c, nvtx_unpack.c): the
 * bytes of a batch come from the traced application's memory, so they are untrusted input.
 * `make fuzz`, or
 *   build/tests/fuzz_shim_unpack -runs=100000 CORPUS_DIR tests/fuzz/seeds-shim_unpack
 *
 * Input: one options byte, then frames: u8 op, u8 pid, u16 len, LEN bytes (fewer at the end).
 *   options: bits 0-1 the families unpacked (WANT_GPU | WANT_NVTX, 0 = those and
 *            WANT_TORCH), bit 5 torch too;
 *            bit 2 --capture-range=nvtx:middle, bits 3-4 its domain form (none, "@*",
 *            "@bpfsight.test", a bare "@"); bit 6 (without bit 2) the torch family's
 *            listener counting steps, with --capture-range=steps:1+2.
 *   op & 7: 0 a SHIM_BATCH ring record whose payload is the bytes, as bpf/shim.bpf.c builds
 *             it (len cut at a batch's maximum with BS_SHIM_BATCH_CLAMP, padding zeroed);
 *           1 the same after a failed read (BS_SHIM_BATCH_FAULT, header only);
 *           2 a ring record with the bytes' first 8 as its len and flags (one BPF never
 *             makes: the unpacker still must not trust it);
 *           3 a CUDA_CALL record (the launch join's other input): u32 tid, u64 ts, then
 *             the bytes over the fields after the header (dur, ret, out, fn, depth, ...);
 *           4 EXEC, 5 EXIT (group_dead = first byte), of the frame's process;
 *           6 a housekeeping tick at the time in the first 8 bytes;
 *           7 more families join: the WANT_* bits of the first byte.
 *   pid: the process is 1000 + (pid & 15).
 * A BPFSIGHT_SHIM_DUMP file (the batches a shim sent) becomes a seed with
 * tests/fuzz/shim_seed.py.
 *
 * The unpacker writes into a real trace file (tmpfs) that is read back after
 * shim_unpack__finish: every record in it must be one the shim channel writes, of its
 * decoder's size, of a process the input named, and decode.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "capture_gate.h"
#include "event.h"
#include "family.h"
#include "recorder.h"
#include "shim_unpack.h"
#include "string_pool.h"
#include "trace_model.h"
#include "trace_reader.h"
#include "trace_writer.h"
#include "gpu_records.h"
#include "nvtx_records.h"
#include "cuda_records.h"
#include "gpu.h"
#include "nvtx.h"
#include "torch.h"

#define BATCH_BYTES (sizeof(struct bs_shim_batch_hdr) + BS_SHIM_BATCH_MAX)
#define WANT_GPU    0x1
#define WANT_NVTX   0x2
#define WANT_TORCH  0x8
#define FRAME_HDR   4
#define PID_BASE    1000
#define NPIDS	    16
/* The largest ring record a u16 size allows, less its header. */
#define RAW_MAX (0xfff8 - sizeof(struct bs_shim_batch))

static const struct trace_meta meta = {
	.version = 1,
	.hostname = "fuzz",
	.families = "proc,gpu,nvtx",
	.tool_version = "fuzz",
	.start = { 1000000000, 1700000000000000000ull, 1000000500 },
};
static const char *const cap_forms[] = { "middle", "middle@*", "middle@bpfsight.test", "middle@" };
static char path[64];
static __u64 ring[0x10000 / 8];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *v = getenv("BPFSIGHT_FUZZ_VERBOSE");
	const char *dir = access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm";

	snprintf(path, sizeof(path), "%s/fuzz_shim_unpack.%d", dir, (int)getpid());
	if (!v || strcmp(v, "1"))
		stderr = fopen("/dev/null", "w"); /* sanitizers and libFuzzer keep their own fd */
	if (!stderr)
		abort();
	return 0;
}

static void hdr(struct bs_hdr *h, __u16 type, __u32 size, __u32 pid)
{
	static __u64 ts = 1000000000;

	memset(h, 0, sizeof(*h));
	h->type = type;
	h->size = size;
	h->pid = pid;
	h->tid = pid;
	h->ts = ts += 1000;
}

/* A SHIM_BATCH ring record around P[0..N) as op OP makes it. */
static struct bs_hdr *batch(__u8 op, __u32 pid, const __u8 *p, size_t n)
{
	struct bs_shim_batch *b = (void *)ring;
	__u32 len = n, flags = 0;

	if (op == 2) {
		/* Ring fields BPF never writes: len and flags from the bytes, any size. */
		if (n < 8)
			return batch(0, pid, p, n);
		len = n - 8 > RAW_MAX ? RAW_MAX : n - 8;
		memset(ring, 0, sizeof(*b) + ((len + 7) & ~7u));
		hdr(&b->h, BS_REC_SHIM_BATCH, sizeof(*b) + ((len + 7) & ~7u), pid);
		memcpy(&b->len, p, 4);
		memcpy(&b->flags, p + 4, 4);
		memcpy(b + 1, p + 8, len);
		return &b->h;
	}
	if (op == 1) {
		flags = BS_SHIM_BATCH_FAULT;
		len = n >= sizeof(struct bs_shim_batch_hdr) ? sizeof(struct bs_shim_batch_hdr) : 0;
	} else if (len > BATCH_BYTES) {
		flags = BS_SHIM_BATCH_CLAMP;
		len = BATCH_BYTES;
	}
	memset(ring, 0, sizeof(*b) + ((len + 7) & ~7u));
	hdr(&b->h, BS_REC_SHIM_BATCH, sizeof(*b) + ((len + 7) & ~7u), pid);
	memcpy(b + 1, p, len);
	b->len = len;
	b->flags = flags;
	return &b->h;
}

/* The families of the WANT_* bits unpacked from now on. */
static void want(struct shim_unpack *u, __u64 bits)
{
	if (((bits & WANT_GPU) && shim_unpack__want(u, &family_gpu)) ||
	    ((bits & WANT_NVTX) && shim_unpack__want(u, &family_nvtx)) ||
	    ((bits & WANT_TORCH) && shim_unpack__want(u, &family_torch)))
		abort();
}

static void other(struct shim_unpack *u, __u8 op, __u32 pid, const __u8 *p, size_t n)
{
	union {
		struct bs_hdr h;
		struct bs_ucall c;
		struct bs_exit x;
		__u64 v;
		__u8 b[256];
	} r;
	__u64 v = 0;

	memset(&r, 0, sizeof(r));
	memcpy(&v, p, n < 8 ? n : 8);
	switch (op) {
	case 3:
		hdr(&r.h, BS_REC_CUDA_CALL, sizeof(r.c), pid);
		if (n < 12)
			break;
		memcpy(&r.h.tid, p, 4);
		memcpy(&r.h.ts, p + 4, 8);
		n -= 12;
		memcpy(&r.c.dur, p + 12,
		       n < sizeof(r.c) - sizeof(r.h) ? n : sizeof(r.c) - sizeof(r.h));
		break;
	case 4:
		hdr(&r.h, BS_REC_EXEC, sizeof(struct bs_exec), pid);
		break;
	case 5:
		hdr(&r.h, BS_REC_EXIT, sizeof(r.x), pid);
		r.x.group_dead = n ? p[0] : 1;
		break;
	case 6:
		shim_unpack__tick(u, v);
		return;
	default:
		want(u, v);
		return;
	}
	if (shim_unpack__record(u, &r.h))
		abort(); /* only batches are consumed */
}

/* What the unpacker wrote: records the shim channel writes, well-formed, decodable. */
static void check_trace(__u64 written)
{
	const struct rec_decoder *dec;
	const struct bs_hdr *h;
	struct trace_reader *r;
	struct trace_model *m;
	char err[256];
	struct event ev;
	__u64 n = 0;
	int e = 0;

	r = trace_reader__open(path, err, sizeof(err), &e);
	m = trace_model__new();
	if (!r || !m)
		abort();
	while (trace_reader__next(r, &h) == 1) {
		n++;
		switch (h->type) {
		case BS_REC_STRING:
			if (h->pid)
				abort(); /* the file's strings are the recorder's own */
			break;
		case BS_REC_SHIM_STATUS:
		case BS_REC_GPU_KERNEL:
		case BS_REC_GPU_MEMCPY:
		case BS_REC_GPU_MEMSET:
		case BS_REC_GPU_API:
		case BS_REC_NVTX_RANGE:
		case BS_REC_NVTX_MARK:
		case BS_REC_NVTX_NAME:
		case BS_REC_NVTX_BEGIN:
		case BS_REC_TORCH_OP:
			if (h->pid < PID_BASE || h->pid >= PID_BASE + NPIDS || h->cpu)
				abort(); /* the pid BPF saw, cpu 0 */
			break;
		case BS_REC_TORCH_STEP: /* the torch family's steps (bit 6) */
			if (h->pid < PID_BASE || h->pid >= PID_BASE + NPIDS)
				abort();
			break;
		default:
			abort();
		}
		dec = family__decoder(h->type);
		if (!dec || h->size < dec->min_size)
			abort();
		trace_model__observe(m, h);
		if (family__decode(h, m, &ev) < 0)
			abort();
	}
	if (n != written || trace_reader__status(r)->corrupt_chunks)
		abort();
	trace_model__free(m);
	trace_reader__free(r);
}

/* The torch family's listener: steps counted from the ops as they are written. */
static void listen(void *arg, const struct bs_hdr *rec, const char *text)
{
	if (rec->type == BS_REC_TORCH_OP)
		torch_steps__op(arg, (const void *)rec, text);
}

/* Where the unpacked records go: the trace file check_trace reads back. */
static int to_file(void *arg, const struct bs_hdr *rec)
{
	return trace_writer__append(arg, rec);
}

int LLVMFuzzerTestOneInput(const __u8 *data, size_t size)
{
	struct record_opts o = {};
	/* Live from the first instant: a capture counts every step scope (torch_steps.c). */
	struct record_ctx ctx = { .opts = &o, .self_pid = 1, .live_ns = 1 };
	struct torch_steps *steps = NULL;
	struct trace_writer *w;
	struct shim_unpack *u;
	size_t off, n;
	__u32 wanted;
	int err = 0;

	if (!size)
		return 0;
	wanted = data[0] & 3 ? data[0] & 3 : WANT_GPU | WANT_NVTX | WANT_TORCH;
	if (data[0] & 0x20)
		wanted |= WANT_TORCH;
	if (data[0] & 4) {
		o.capture = &family_nvtx;
		o.capture_arg = cap_forms[(data[0] >> 3) & 3];
		ctx.gate = capture_gate__new();
	} else if (data[0] & 0x40) {
		o.capture = &family_torch;
		o.capture_arg = "1+2";
		ctx.gate = capture_gate__new();
	}
	ctx.strings = string_pool__new();
	w = trace_writer__open(path, &meta, TRACE_WRITER_FORCE, &err);
	ctx.out = (struct record_out){ to_file, w };
	u = w && ctx.strings ? shim_unpack__new(&ctx, -1) : NULL;
	if (!u || (o.capture && !ctx.gate))
		abort();
	want(u, wanted);
	if (data[0] & 0x40) {
		steps = torch_steps__new(&ctx, o.capture == &family_torch ? o.capture_arg : NULL);
		if (!steps)
			abort();
		shim_unpack__listen(u, &family_torch, listen, steps);
	}

	for (off = 1; off + FRAME_HDR <= size; off += FRAME_HDR + n) {
		__u8 op = data[off] & 7;
		__u32 pid = PID_BASE + (data[off + 1] & (NPIDS - 1));
		const __u8 *p = data + off + FRAME_HDR;

		n = data[off + 2] | data[off + 3] << 8;
		if (n > size - off - FRAME_HDR)
			n = size - off - FRAME_HDR;
		if (op <= 2) {
			if (!shim_unpack__record(u, batch(op, pid, p, n)))
				abort(); /* a batch is always consumed */
		} else {
			other(u, op, pid, p, n);
		}
	}
	shim_unpack__finish(u);
	shim_unpack__free(u);
	torch_steps__free(steps);
	if (ctx.write_err || trace_writer__flush(w))
		abort();
	check_trace(trace_writer__records(w));
	trace_writer__free(w);
	unlink(path);
	string_pool__free(ctx.strings);
	capture_gate__free(ctx.gate);
	return 0;
}
