// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Regenerates the committed fuzz seeds (each well under 4 KiB):
 *   cc -O2 -D_GNU_SOURCE -Iuser/core -Ibpf tests/fuzz/make_seeds.c user/core/trace_writer.c \
 *      user/core/trace_reader.c user/core/trace_codec.c user/core/trace_columns_enc.c \
 *      user/core/trace_columns_dec.c user/core/trace_columns_plan.c user/core/trace_chunk_dec.c \
 *      user/core/trace_meta.c user/core/trace_renumber.c user/lib/sudo_owner.c -Iuser/lib \
 *      -lzstd -lz -o /tmp/make_seeds
 *   /tmp/make_seeds tests/fuzz/seeds
 * Files of format 4: seed-v4-*, with a record of a type wider than a byte; for the harness,
 * seed-synth-chunk (varint records), seed-synth-columns (a column chunk of plain codings) and
 * seed-synth-slots (format 3's codings: slots, the gap, the chain, planes), in format 4.
 * seed-v3-* (format 3) were written by the writer of format 3, seed-v2-* by format 2's,
 * seed-clean, seed-truncated and seed-corrupt-chunk (format 1) by the one before it: keep them
 * (readers still read them all), they cannot be made again.
 * The seeds are not named *.bst: .gitignore keeps traces out of the tree.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "osrt_records.h"
#include "sched_records.h"
#include "trace_codec.h"
#include "trace_columns.h"
#include "trace_format.h"
#include "trace_writer.h"

static const struct trace_meta meta = {
	.hostname = "seed",
	.kernel = "6.18.0",
	.families = "osrt,sched",
	.target = "system-wide",
	.tool_version = "seed",
	.start = { 1000000000, 1700000000000000000ull, 1000000500 },
};

/* Three chunks holding one record of most types; returns the chunk end offsets. */
static int write_trace(const char *path, long *ends)
{
	struct trace_clocks end = { 2000000000, 1700000001000000000ull, 2000000500 };
	struct trace_writer *w;
	__u64 ts = 1000001000;
	int err = 0, c;

	unlink(path);
	w = trace_writer__open(path, &meta, 0, &err);
	if (!w)
		return err;
	for (c = 0; c < 3; c++) {
		struct bs_syscall sc = { .h = { BS_REC_SYSCALL, sizeof(sc), 1, 100, 101, ts++ },
					 .dur = 300,
					 .ret = -11,
					 .nr = 7 };
		struct bs_offcpu oc = { .h = { BS_REC_OFFCPU, sizeof(oc), 2, 100, 102, ts++ },
					.dur = 5000,
					.runnable_ns = 100,
					.oncpu_ns = 700,
					.state = 1,
					.waker_tid = 101 };
		struct bs_fork fk = { .h = { BS_REC_FORK, sizeof(fk), 0, 100, 101, ts++ },
				      .child_pid = 100,
				      .child_tid = 103,
				      .comm = "worker" };
		struct bs_loss ls = { .h = { BS_REC_LOSS, sizeof(ls), 0, 0, 0, ts++ },
				      .cause = BS_LOSS_RINGBUF_FULL,
				      .count = 3 };
		struct bs_syscall_agg ag = { .h = { BS_REC_SYSCALL_AGG, sizeof(ag), 0, 100, 101,
						    ts++ },
					     .nr = 0,
					     .count = 10,
					     .total_ns = 900,
					     .min_ns = 50,
					     .max_ns = 200 };
		/* A type past a byte (format 4): unknown to the readers, handed on as it is. */
		struct bs_comm wide = { .h = { 0x123, sizeof(wide), 0, 100, 101, ts++ },
					.comm = "wide" };
		const struct bs_hdr *recs[] = { &sc.h, &oc.h, &fk.h, &ls.h, &ag.h, &wide.h, &sc.h };
		unsigned int i;

		for (i = 0; i < sizeof(recs) / sizeof(recs[0]); i++) {
			err = trace_writer__append(w, recs[i]);
			if (err)
				goto fail;
		}
		err = trace_writer__flush(w);
		if (err)
			goto fail;
		ends[c] = (long)trace_writer__bytes(w);
	}
	return trace_writer__close(w, &end);
fail:
	trace_writer__free(w);
	return err;
}

static int save(const char *dir, const char *name, const void *data, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f)) {
		fprintf(stderr, "cannot write %s\n", path);
		return -EIO;
	}
	printf("%s: %zu bytes\n", path, len);
	return 0;
}

/* The synthetic-chunk input's head: 0xfe, chunk flags, nrecords, first_ts, last_ts. */
static size_t synth_head(__u8 *buf, __u32 flags, __u32 nrec, __u64 lo, __u64 hi)
{
	buf[0] = 0xfe;
	memcpy(buf + 1, &flags, 4);
	memcpy(buf + 5, &nrec, 4);
	memcpy(buf + 9, &lo, 8);
	memcpy(buf + 17, &hi, 8);
	return 25;
}

/* A column chunk: three types, a tail (a string past 128 bytes), an interval's end. */
static int synth_columns_seed(const char *dir)
{
	struct bs_exit ex = { .h = { BS_REC_EXIT, sizeof(ex), 0, 5, 6, 900 }, .exit_code = 256 };
	struct bs_string st = { .h = { BS_REC_STRING, 168, 0, 5, 6, 950 }, .id = 1, .len = 130 };
	struct bs_syscall sc = { .h = { BS_REC_SYSCALL, sizeof(sc), 1, 5, 6, 920 }, .dur = 20 };
	struct bs_comm wide = { .h = { 0xfff, sizeof(wide), 0, 5, 6, 930 }, .comm = "wide" };
	struct trace_columns_enc *e = trace_columns_enc__new();
	__u8 buf[512], str[168] = { 0 };
	const __u8 *out;
	size_t n, len;
	int err;

	if (!e)
		return -ENOMEM;
	memcpy(str, &st, sizeof(st));
	memset(str + sizeof(st), 'k', 130); /* a kernel's name, as long as CUDA's get */
	err = trace_columns_enc__add(e, &ex.h) ?: trace_columns_enc__add(e, &sc.h) ?:
	      trace_columns_enc__add(e, (const struct bs_hdr *)str) ?:
	      trace_columns_enc__add(e, &sc.h) ?: trace_columns_enc__add(e, &wide.h) ?:
	      trace_columns_enc__finish(e, &out, &len);
	if (!err && len > sizeof(buf) - 25)
		err = -E2BIG;
	if (!err) {
		n = synth_head(buf, BS_CHUNK_COLUMNS, 5, 900, 950);
		memcpy(buf + n, out, len);
		err = save(dir, "seed-synth-columns", buf, n + len);
	}
	trace_columns_enc__free(e);
	return err;
}

/*
 * Off-CPU intervals of 5 threads as sched writes them (oncpu_ns the time since the thread's
 * previous interval ended), in two chunks: the second, whose intervals are in the chain, its
 * oncpu_ns coded by the gap, its cpu per thread and its times in planes, is the seed.
 */
static int synth_slots_seed(const char *dir)
{
	struct trace_columns_enc *e = trace_columns_enc__new();
	__u64 end[5] = { 0 }, now = 1000000, lo = 0;
	const __u8 *out = NULL;
	__u8 buf[4096];
	size_t n, len = 0;
	int err = 0, chunk, i;

	if (!e)
		return -ENOMEM;
	for (chunk = 0; chunk < 2 && !err; chunk++) {
		trace_columns_enc__reset(e);
		for (i = 0; i < 100 && !err; i++) {
			__u32 k = (__u32)(i * 7 + chunk) % 5;
			struct bs_offcpu oc = { .h = { BS_REC_OFFCPU, sizeof(oc), k, 40,
						       100 + k } };

			now += 3000 + (__u64)(i * 7919) % 50000;
			oc.dur = end[k] ? (now - end[k]) / 2 + (__u64)i : 700;
			oc.h.ts = now - oc.dur;
			oc.runnable_ns = oc.dur / 3;
			oc.oncpu_ns = end[k] ? oc.h.ts - end[k] : 5000;
			oc.state = 1;
			oc.waker_tid = 100 + (k + 1) % 5;
			end[k] = now;
			lo = i ? lo : oc.h.ts;
			err = trace_columns_enc__add(e, &oc.h);
		}
		err = err ?: trace_columns_enc__finish(e, &out, &len);
	}
	if (!err && len > sizeof(buf) - 25)
		err = -E2BIG;
	if (!err) {
		n = synth_head(buf, BS_CHUNK_COLUMNS, 100, lo, now);
		memcpy(buf + n, out, len);
		err = save(dir, "seed-synth-slots", buf, n + len);
	}
	trace_columns_enc__free(e);
	return err;
}

/* The fuzzer's synthetic-chunk input: 0xfe, chunk fields, then encoded records. */
static int synth_seed(const char *dir)
{
	struct bs_exit ex = { .h = { BS_REC_EXIT, sizeof(ex), 0, 5, 6, 900 }, .exit_code = 256 };
	struct bs_comm cm = { .h = { 0x123, sizeof(cm), 0, 5, 6, 950 }, .comm = "pt_main" };
	struct trace_codec *c = trace_codec__new();
	__u8 buf[512];
	__u32 flags = 0, nrec = 3;
	__u64 lo = 900, hi = 950;
	size_t n = 0;
	int k;

	if (!c)
		return -ENOMEM;
	n = synth_head(buf, flags, nrec, lo, hi);
	k = trace_codec__encode(c, &ex.h, buf + n);
	n += (size_t)k;
	k = trace_codec__encode(c, &cm.h, buf + n);
	n += (size_t)k;
	k = trace_codec__encode(c, &ex.h, buf + n);
	n += (size_t)k;
	trace_codec__free(c);
	return save(dir, "seed-synth-chunk", buf, n);
}

int main(int argc, char **argv)
{
	char tmp[] = "/tmp/bs-seeds-XXXXXX", path[64];
	long ends[3], len;
	__u8 *data = NULL;
	FILE *f;
	int err;

	if (argc != 2) {
		fprintf(stderr, "usage: %s SEED_DIR\n", argv[0]);
		return 1;
	}
	if (!mkdtemp(tmp))
		return 1;
	snprintf(path, sizeof(path), "%s/t.bst", tmp);
	err = write_trace(path, ends);
	if (err) {
		fprintf(stderr, "write_trace: %s\n", strerror(-err));
		return 1;
	}
	f = fopen(path, "rb");
	if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET))
		return 1;
	data = malloc((size_t)len);
	if (!data || fread(data, 1, (size_t)len, f) != (size_t)len)
		return 1;
	fclose(f);
	unlink(path);
	rmdir(tmp);

	err = save(argv[1], "seed-v4-clean", data, (size_t)len);
	/* A recorder killed while writing chunk 3. */
	err = err ?: save(argv[1], "seed-v4-truncated", data, (size_t)(ends[1] + ends[2]) / 2);
	/* One flipped byte inside chunk 2's frame. */
	data[ends[1] - 5] ^= 0x20;
	err = err ?: save(argv[1], "seed-v4-corrupt-chunk", data, (size_t)len);
	err = err ?: synth_seed(argv[1]);
	err = err ?: synth_columns_seed(argv[1]);
	err = err ?: synth_slots_seed(argv[1]);
	free(data);
	return err ? 1 : 0;
}
