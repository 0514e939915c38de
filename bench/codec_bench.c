// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Record encodings compared on real traces: for each FILE.bst, its records are read into
 * memory once, then cut into chunks and compressed as the writer does (1 MiB of encoded
 * records, zstd level 3, checksum on) with the varint codec of format 1 and the column codec
 * of format 3. Prints bytes per record (chunk headers included, file header and footer not),
 * encode throughput (codec + zstd, the writer's path), with --types the bytes each record
 * type costs when its records are encoded alone, and with --columns the bytes of each column
 * of the column codec compressed alone (summed over the chunks) and how the first chunk coded
 * it. --chunk BYTES: close chunks at BYTES of encoded records instead of the writer's target.
 * The codecs are made once and reused by every repeat, as a writer keeps them over a file;
 * --fresh makes them anew for each repeat (a one-chunk trace then also measures the heap the
 * previous repeat gave back being faulted in again). --level N: zstd level N instead of the
 * writer's 3 (what another level would give).
 *
 *   codec_bench [--types] [--columns] [--fresh] [--chunk BYTES] [--level N] [--repeat N]
 *               FILE.bst...
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>
#include "trace_codec.h"
#include "trace_columns.h"
#include "trace_format.h"
#include "trace_reader.h"

struct recs {
	__u8 *p;
	size_t len, cap, n;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int load(const char *path, struct recs *r, int only_type)
{
	char err[256];
	struct trace_reader *rd = trace_reader__open(path, err, sizeof(err), NULL);
	const struct bs_hdr *h;

	if (!rd) {
		fprintf(stderr, "codec_bench: %s: %s\n", path, err);
		return -1;
	}
	while (trace_reader__next(rd, &h) == 1) {
		if (only_type >= 0 && h->type != only_type)
			continue;
		if (r->len + h->size > r->cap) {
			r->cap = (r->cap + h->size) * 2;
			r->p = realloc(r->p, r->cap);
			if (!r->p)
				abort();
		}
		memcpy(r->p + r->len, h, h->size);
		r->len += h->size;
		r->n++;
	}
	trace_reader__free(rd);
	return 0;
}

struct result {
	size_t bytes, chunks;
};

static size_t chunk_target = BS_CHUNK_TARGET_RAW;

/* --columns: per type and column (the tail last), compressed bytes and the first coding. */
struct col_stat {
	size_t bytes[TRACE_COLUMNS_MAX + 1];
	char coding[TRACE_COLUMNS_MAX + 1];
	__u32 ncols, flags, key, gapword, seen;
};
static struct col_stat *col_stats; /* BS_REC_TYPE_MAX of them, or NULL */

static size_t compress(ZSTD_CCtx *z, const __u8 *raw, size_t len, __u8 **out, size_t *cap)
{
	size_t bound = ZSTD_compressBound(len), n;

	if (bound > *cap) {
		*cap = bound;
		*out = realloc(*out, bound);
		if (!*out)
			abort();
	}
	n = ZSTD_compress2(z, *out, *cap, raw, len);
	if (ZSTD_isError(n))
		abort();
	return n + sizeof(struct bs_chunk_hdr);
}

/*
 * What a writer keeps for a whole file: the zstd context, the codecs, their buffers. Made
 * once and reused by every repeat (as the recorder does over a file's chunks), or, with
 * --fresh, the codecs are made anew for each repeat (and their memory is given back).
 */
struct coders {
	ZSTD_CCtx *z;
	struct trace_codec *varint;
	struct trace_columns_enc *columns;
	__u8 *raw, *out;
	size_t raw_cap, out_cap;
	int fresh;
};

/* Format 1: one varint-delta record after the other. */
static struct result run_varint(struct coders *k, const struct recs *r)
{
	size_t raw_len = 0, off, need = chunk_target + TRACE_CODEC_ENC_MAX(TRACE_CODEC_MAX_WORDS);
	struct result res = { 0 };

	if (!k->varint || k->fresh) {
		trace_codec__free(k->varint);
		k->varint = trace_codec__new();
	}
	if (k->raw_cap < need) {
		free(k->raw);
		k->raw = malloc(need);
		k->raw_cap = need;
	}
	if (!k->varint || !k->raw)
		abort();
	trace_codec__reset(k->varint);
	for (off = 0; off < r->len;) {
		const struct bs_hdr *h = (const void *)(r->p + off);

		raw_len += (size_t)trace_codec__encode(k->varint, h, k->raw + raw_len);
		off += h->size;
		if (raw_len >= chunk_target || off == r->len) {
			res.bytes += compress(k->z, k->raw, raw_len, &k->out, &k->out_cap);
			res.chunks++;
			raw_len = 0;
			trace_codec__reset(k->varint);
		}
	}
	return res;
}

static __u64 get_varint(const __u8 **p)
{
	__u64 v = 0;

	*p += trace_varint_get(*p, 10, &v);
	return v;
}

/*
 * The coding of column J of a directory entry: d delta, r raw, s per slot, k the key; upper
 * case when the column is in planes.
 */
static char coding_of(__u32 j, __u32 flags, __u64 rawmask, __u64 threadmask, __u64 key,
		      __u64 planes)
{
	char c = threadmask >> j & 1 ? 's' : 'd';

	if ((flags & (TRACE_COLUMNS_THREAD | TRACE_COLUMNS_GAP)) && j == key)
		c = 'k';
	else if (rawmask >> j & 1)
		c = 'r';
	return planes >> j & 1 ? (char)(c - 'a' + 'A') : c;
}

/* --columns: the chunk's directory (docs/FORMAT.md), then each column compressed alone. */
static void count_columns(ZSTD_CCtx *z, const __u8 *flat, size_t len)
{
	/* Static: a directory may name every type (a MiB, too much for a stack). */
	static __u64 lens[BS_REC_TYPE_MAX][TRACE_COLUMNS_MAX + 1];
	static __u32 types[BS_REC_TYPE_MAX], ncols[BS_REC_TYPE_MAX];
	const __u8 *p = flat, *data;
	__u64 ntypes = get_varint(&p), columns = 0;
	__u8 *out = NULL;
	size_t cap = 0;
	__u32 i, j;

	for (i = 0; i < ntypes; i++) {
		__u64 type = get_varint(&p), flags = get_varint(&p), raw = get_varint(&p);
		__u64 thr = 0, gap = 0, key = 0, planes = 0, k, v;
		struct col_stat *c = &col_stats[type];

		if (flags & TRACE_COLUMNS_THREAD)
			thr = get_varint(&p);
		if (flags & TRACE_COLUMNS_GAP)
			gap = get_varint(&p);
		if (flags & (TRACE_COLUMNS_THREAD | TRACE_COLUMNS_GAP))
			key = get_varint(&p);
		if (flags & TRACE_COLUMNS_PLANES)
			planes = get_varint(&p);
		types[i] = (__u32)type;
		ncols[i] = (__u32)get_varint(&p);
		for (j = 0; j <= ncols[i]; j++) { /* a column in planes: its planes together */
			lens[i][j] = 0;
			for (k = 0;
			     k < (j < ncols[i] && planes >> j & 1 ? TRACE_COLUMNS_NPLANES : 1);
			     k++) {
				v = get_varint(&p);
				lens[i][j] += v;
			}
			columns += lens[i][j];
		}
		if (c->seen++)
			continue;
		c->ncols = ncols[i];
		c->flags = (__u32)flags;
		c->key = (__u32)key;
		c->gapword = (__u32)gap;
		for (j = 0; j < ncols[i]; j++)
			c->coding[j] = coding_of(j, c->flags, raw, thr, key, planes);
	}
	/* The types section (a varint per record) lies between the directory and the columns. */
	data = flat + len - columns;
	for (i = 0; i < ntypes; i++)
		for (j = 0; j <= ncols[i]; j++) {
			if (lens[i][j])
				col_stats[types[i]].bytes[j] +=
					compress(z, data, lens[i][j], &out, &cap) -
					sizeof(struct bs_chunk_hdr);
			data += lens[i][j];
		}
	if (data != flat + len)
		fprintf(stderr, "codec_bench: --columns misread a directory\n");
	free(out);
}

static void print_columns(void)
{
	__u32 t, j;

	printf("  columns compressed alone (bytes; d delta, r raw, s per slot, k the slot's key, "
	       "upper case in planes; flags 1 end, 2 slots, 4 gap, 8 chain, 16 planes):\n");
	for (t = 0; t < BS_REC_TYPE_MAX; t++) {
		struct col_stat *c = &col_stats[t];
		size_t sum = 0;

		if (!c->seen)
			continue;
		for (j = 0; j <= c->ncols; j++)
			sum += c->bytes[j];
		printf("  0x%02x flags %u gap word %u: %zu B:", t, c->flags, c->gapword, sum);
		for (j = 0; j < c->ncols; j++)
			if (c->bytes[j] >= 1000)
				printf(" %u%c:%zu", j, c->coding[j], c->bytes[j]);
		printf(" tail:%zu\n", c->bytes[c->ncols]);
	}
}

/* Formats 2 and 3: columns per record type. */
static struct result run_columns(struct coders *k, const struct recs *r)
{
	struct result res = { 0 };
	const __u8 *flat;
	size_t off, len;

	if (!k->columns || k->fresh) {
		trace_columns_enc__free(k->columns);
		k->columns = trace_columns_enc__new();
		if (!k->columns)
			abort();
	}
	trace_columns_enc__restart(k->columns);
	for (off = 0; off < r->len;) {
		const struct bs_hdr *h = (const void *)(r->p + off);

		if (trace_columns_enc__add(k->columns, h))
			abort();
		off += h->size;
		if (trace_columns_enc__size(k->columns) >= chunk_target || off == r->len) {
			if (trace_columns_enc__finish(k->columns, &flat, &len))
				abort();
			res.bytes += compress(k->z, flat, len, &k->out, &k->out_cap);
			if (col_stats)
				count_columns(k->z, flat, len);
			res.chunks++;
			trace_columns_enc__reset(k->columns);
		}
	}
	return res;
}

typedef struct result (*run_fn)(struct coders *k, const struct recs *r);

/*
 * Best of REPEAT runs, in this thread's CPU time: the machine is shared, and the fastest run
 * is the least disturbed.
 */
static struct result timed(run_fn fn, struct coders *k, const struct recs *r, int repeat,
			   double *secs)
{
	struct result res = { 0 };
	int i;

	*secs = 1e30;
	for (i = 0; i < repeat; i++) {
		double t0 = now_s(), dt;

		res = fn(k, r);
		dt = now_s() - t0;
		if (dt < *secs)
			*secs = dt;
	}
	return res;
}

static void report(const char *name, const struct recs *r, struct result res, double secs)
{
	printf("  %-8s %10zu B  %5.2f B/record  %4zu chunks  %7.1f MB/s  %6.2f M records/s\n", name,
	       res.bytes, (double)res.bytes / r->n, res.chunks, r->len / secs / 1e6,
	       r->n / secs / 1e6);
}

/* Bytes each u32 field of type T costs, its delta-varint column compressed alone. */
static void by_field(ZSTD_CCtx *z, const struct recs *r)
{
	__u8 *col = malloc(r->n * TRACE_VARINT_MAX), *out = NULL;
	size_t cap = 0, j, off, len;

	for (j = 0; j < TRACE_COLUMNS_MAX; j++) {
		__u32 prev = 0, v, d;

		len = 0;
		for (off = 0; off < r->len; off += ((const struct bs_hdr *)(r->p + off))->size) {
			if (((const struct bs_hdr *)(r->p + off))->size <= 4 * j)
				continue;
			memcpy(&v, r->p + off + 4 * j, 4);
			d = v - prev;
			prev = v;
			len += trace_varint_put(col + len, (d << 1) ^ (__u32)((__s32)d >> 31));
		}
		if (!len)
			break;
		printf("%s%zu:%zu", j ? " " : "         fields ", j,
		       compress(z, col, len, &out, &cap) - sizeof(struct bs_chunk_hdr));
	}
	printf("\n");
	free(col);
	free(out);
}

static void by_type(struct coders *k, const char *path, size_t total)
{
	int t;

	printf("  %-6s %8s %9s %9s %9s %9s\n", "type", "records", "varint B", "B/rec", "column B",
	       "B/rec");
	for (t = 0; t < BS_REC_TYPE_MAX; t++) {
		struct recs r = { 0 };
		struct result a, b;

		if (load(path, &r, t) || !r.n)
			goto next;
		a = run_varint(k, &r);
		b = run_columns(k, &r);
		printf("  0x%02x   %8zu %9zu %9.2f %9zu %9.2f\n", t, r.n, a.bytes,
		       (double)a.bytes / r.n, b.bytes, (double)b.bytes / r.n);
		if (b.bytes > total / 2)
			by_field(k->z, &r);
next:
		free(r.p);
	}
	printf("  (types alone; all records: %zu)\n", total);
}

int main(int argc, char **argv)
{
	ZSTD_CCtx *z = ZSTD_createCCtx();
	struct coders k = { .z = z };
	int i, types = 0, columns = 0, repeat = 3;

	ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel, 3);
	ZSTD_CCtx_setParameter(z, ZSTD_c_checksumFlag, 1);
	for (i = 1; i < argc; i++) {
		struct recs r = { 0 };
		struct result res;
		double secs;

		if (!strcmp(argv[i], "--types")) {
			types = 1;
			continue;
		}
		if (!strcmp(argv[i], "--columns")) {
			columns = 1;
			continue;
		}
		if (!strcmp(argv[i], "--fresh")) {
			k.fresh = 1;
			continue;
		}
		if (!strcmp(argv[i], "--chunk") && i + 1 < argc) {
			chunk_target = strtoul(argv[++i], NULL, 0);
			chunk_target = chunk_target < 4096 ? 4096 : chunk_target;
			continue;
		}
		if (!strcmp(argv[i], "--level") && i + 1 < argc) {
			ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel, atoi(argv[++i]));
			continue;
		}
		if (!strcmp(argv[i], "--repeat") && i + 1 < argc) {
			repeat = atoi(argv[++i]);
			repeat = repeat < 1 ? 1 : repeat;
			continue;
		}
		if (load(argv[i], &r, -1))
			return 1;
		printf("%s: %zu records, %zu bytes of records\n", argv[i], r.n, r.len);
		res = timed(run_varint, &k, &r, repeat, &secs);
		report("varint", &r, res, secs);
		res = timed(run_columns, &k, &r, repeat, &secs);
		report("columns", &r, res, secs);
		if (types)
			by_type(&k, argv[i], r.n);
		if (columns) {
			col_stats = calloc(BS_REC_TYPE_MAX, sizeof(*col_stats));
			if (!col_stats)
				abort();
			run_columns(&k, &r);
			print_columns();
			free(col_stats);
			col_stats = NULL;
		}
		free(r.p);
	}
	trace_codec__free(k.varint);
	trace_columns_enc__free(k.columns);
	free(k.raw);
	free(k.out);
	ZSTD_freeCCtx(z);
	return 0;
}
