/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the trace-format unit tests share (test_format.c, test_format_damage.c): a temporary
 * directory, seeded random records kept for comparison, a small file made by the real writer,
 * and a reader's whole pass over a file checked against the records written.
 */
#ifndef BPFSIGHT_TEST_FORMAT_FILES_H
#define BPFSIGHT_TEST_FORMAT_FILES_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "unit.h"
#include "records.h"
#include "trace_codec.h"
#include "trace_format.h"
#include "trace_reader.h"
#include "trace_writer.h"
#include "osrt_records.h"
#include "sched_records.h"

static char tmpdir[64];
static int tmpseq;

static inline void tmp_path(char *buf, size_t len, const char *what)
{
	snprintf(buf, len, "%s/%s-%d.bst", tmpdir, what, tmpseq++);
}

/* xorshift64*: fixed seeds make every run test the same inputs. */
static __u64 rng_state;

static inline void rng_seed(__u64 s)
{
	rng_state = s ? s : 1;
}

static inline __u64 rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

static inline __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* Records as written, kept for comparison with what the reader returns. */
struct recs {
	__u8 *data;
	size_t len, cap;
	size_t *off;
	size_t n, ncap;
};

static inline int recs_add(struct recs *rs, const struct bs_hdr *h)
{
	if (rs->len + h->size > rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 1 << 16;
		__u8 *d;

		while (cap < rs->len + h->size)
			cap *= 2;
		d = realloc(rs->data, cap);
		if (!d)
			return -ENOMEM;
		rs->data = d;
		rs->cap = cap;
	}
	if (rs->n == rs->ncap) {
		size_t ncap = rs->ncap ? rs->ncap * 2 : 256;
		size_t *o = realloc(rs->off, ncap * sizeof(*o));

		if (!o)
			return -ENOMEM;
		rs->off = o;
		rs->ncap = ncap;
	}
	rs->off[rs->n++] = rs->len;
	memcpy(rs->data + rs->len, h, h->size);
	rs->len += h->size;
	return 0;
}

static const struct bs_hdr *recs_get(const struct recs *rs, size_t i)
{
	return (const struct bs_hdr *)(rs->data + rs->off[i]);
}

static inline void recs_free(struct recs *rs)
{
	free(rs->data);
	free(rs->off);
	memset(rs, 0, sizeof(*rs));
}

static const __u64 extremes[] = {
	0,
	1,
	~0ull,
	1ull << 63,
	(1ull << 63) - 1,
	0x8000000000000001ull,
	0xffffffffull,
	0x100000000ull,
	0x7f,
	0x80,
	0x3fff,
	0x4000,
};

static inline __u64 pick_word(void)
{
	switch (rng() % 4) {
	case 0:
		return extremes[rng() % (sizeof(extremes) / sizeof(extremes[0]))];
	case 1:
		return rng();
	case 2:
		return rng() % 1000;
	default:
		return -(rng() % 1000);
	}
}

/* A record of TYPE and SIZE with mixed small, random and extreme words. */
static inline void make_rec(__u64 *w, __u16 type, __u16 size, __u64 ts)
{
	struct bs_hdr *h = (struct bs_hdr *)w;
	unsigned int i;

	for (i = 1; i < size / 8u; i++)
		w[i] = pick_word();
	h->type = type;
	h->size = size;
	h->cpu = rng() % 3 ? (__u32)(rng() % 8) : (__u32)pick_word();
	h->ts = ts;
}

struct test_file {
	char path[128];
	__u8 *data;
	size_t len;
	size_t hdr_len;
	size_t chunk_end[8]; /* file offset after each data chunk */
	size_t chunk_nrec[8];
	int nchunks;
	struct recs recs;
};

static inline int read_whole(const char *path, __u8 **data, size_t *len)
{
	FILE *f = fopen(path, "rb");
	long n;
	int err = -EIO;

	*data = NULL;
	if (!f)
		return -errno;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		goto out;
	*data = malloc((size_t)n + 1);
	if (!*data || fread(*data, 1, (size_t)n, f) != (size_t)n)
		goto out;
	*len = (size_t)n;
	err = 0;
out:
	fclose(f);
	return err;
}

static inline int write_whole(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	int err = 0;

	if (!f)
		return -errno;
	if (len && fwrite(data, 1, len, f) != len)
		err = -EIO;
	if (fclose(f) && !err)
		err = -EIO;
	return err;
}

static const struct trace_meta small_meta = {
	.hostname = "host",
	.families = "osrt",
	.target = "system-wide",
	.start = { 1000, 2000, 3000 },
};

/* A small file of three data chunks (3, 2 and 4 records), closed cleanly. */
static inline int make_small_file(struct test_file *tf)
{
	static const int per_chunk[3] = { 3, 2, 4 };
	struct trace_clocks end = { 5000, 6000, 7000 };
	struct trace_writer *w;
	__u64 buf[8];
	int err = 0, c, i;

	memset(tf, 0, sizeof(*tf));
	tmp_path(tf->path, sizeof(tf->path), "small");
	w = trace_writer__open(tf->path, &small_meta, 0, &err);
	if (!w)
		return err;
	tf->hdr_len = trace_writer__bytes(w);
	for (c = 0; c < 3; c++) {
		for (i = 0; i < per_chunk[c]; i++) {
			struct bs_syscall *s = (struct bs_syscall *)buf;

			memset(buf, 0, sizeof(buf));
			s->h.type = BS_REC_SYSCALL;
			s->h.size = sizeof(*s);
			s->h.pid = s->h.tid = 42;
			s->h.ts = 1000000 + 1000 * (__u64)(c * 10 + i);
			s->dur = 300 + i;
			s->nr = (__u32)c;
			err = trace_writer__append(w, &s->h);
			if (!err)
				err = recs_add(&tf->recs, &s->h);
			if (err)
				goto fail;
		}
		err = trace_writer__flush(w);
		if (err)
			goto fail;
		tf->chunk_end[c] = trace_writer__bytes(w);
		tf->chunk_nrec[c] = per_chunk[c];
	}
	tf->nchunks = 3;
	err = trace_writer__close(w, &end);
	if (err)
		return err;
	return read_whole(tf->path, &tf->data, &tf->len);
fail:
	trace_writer__free(w);
	return err;
}

static inline void free_test_file(struct test_file *tf)
{
	unlink(tf->path);
	free(tf->data);
	recs_free(&tf->recs);
}

struct read_result {
	int open_err;
	char err[256];
	size_t n;
	int mismatch; /* a returned record differs from the expected one at its position */
	int bad_invariant;
	struct trace_status st;
};

/*
 * Read PATH and compare every record with EXPECT (indices of tf->recs, EXPECT_N of them).
 */
static inline void read_check(const char *path, const struct recs *rs, const size_t *expect,
			      size_t expect_n, struct read_result *res)
{
	const struct bs_hdr *h;
	struct trace_reader *r;

	memset(res, 0, sizeof(*res));
	r = trace_reader__open(path, res->err, sizeof(res->err), &res->open_err);
	if (!r) {
		if (!res->open_err)
			res->bad_invariant = 1;
		return;
	}
	while (trace_reader__next(r, &h) == 1) {
		if (h->size < sizeof(*h) || h->size % 8 || h->type >= BS_REC_TYPE_MAX)
			res->bad_invariant = 1;
		if (res->n >= expect_n ||
		    memcmp(h, recs_get(rs, expect[res->n]), recs_get(rs, expect[res->n])->size))
			res->mismatch = 1;
		res->n++;
	}
	res->st = *trace_reader__status(r);
	if (res->st.records != res->n)
		res->bad_invariant = 1;
	trace_reader__free(r);
}

static inline int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(p);
}

/* The temporary directory the tests' files go in (removed with everything in it). */
static inline int format_tmpdir_make(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/bs-test-format-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return -1;
	}
	return 0;
}

static inline void format_tmpdir_remove(void)
{
	nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

#endif /* BPFSIGHT_TEST_FORMAT_FILES_H */
