// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for the trace reader: `make fuzz`, or
 *   build/tests/fuzz_reader -runs=200000 CORPUS_DIR tests/fuzz/seeds
 *
 * Two input shapes:
 *  - anything else: the bytes are the file (header checks, resync, truncation);
 *  - 0xfe | u32 flags | u32 nrecords | u64 first_ts | u64 last_ts | encoded records: the
 *    harness wraps the records in a valid header and a chunk with correct crcs and zstd
 *    checksum (plus a trailer when flags has BS_CHUNK_FOOTER), so mutations reach the record
 *    decoder and footer parsing instead of dying at the first crc.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>
#include "trace_format.h"
#include "trace_reader.h"

#define SYNTH_TAG     0xfe
#define SYNTH_HDR_LEN 25

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4); /* little-endian hosts only, like the rest of bpfsight */
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* Build a one-chunk file around the encoded records in DATA. Returns its length or 0. */
static size_t synth_file(const uint8_t *data, size_t size, uint8_t **out)
{
	const uint8_t *raw = data + SYNTH_HDR_LEN;
	size_t raw_len = size - SYNTH_HDR_LEN, bound = ZSTD_compressBound(raw_len), comp, n;
	uint32_t flags = get32(data + 1);
	ZSTD_CCtx *cc;
	uint8_t *f;

	f = malloc(20 + 48 + bound + 16);
	cc = ZSTD_createCCtx();
	if (!f || !cc)
		goto fail;
	memcpy(f, BS_FILE_MAGIC, 8);
	put32(f + 8, BS_FILE_VERSION);
	put32(f + 12, 0);
	put32(f + 16, (uint32_t)crc32(0, f, 16));
	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	comp = ZSTD_compress2(cc, f + 20 + 48, bound, raw, raw_len);
	if (ZSTD_isError(comp))
		goto fail;
	put32(f + 20, BS_CHUNK_MAGIC);
	put32(f + 24, flags);
	put32(f + 28, 0);
	memcpy(f + 32, data + 5, 4); /* nrecords */
	put32(f + 36, (uint32_t)comp);
	put32(f + 40, (uint32_t)raw_len);
	memcpy(f + 44, data + 9, 16); /* first_ts, last_ts */
	put32(f + 60, (uint32_t)crc32(0, f + 68, (uInt)comp));
	put32(f + 64, (uint32_t)crc32(0, f + 20, 44));
	n = 68 + comp;
	if (flags & BS_CHUNK_FOOTER) {
		put64(f + n, 20);
		memcpy(f + n + 8, BS_TRAILER_MAGIC, 8);
		n += 16;
	}
	ZSTD_freeCCtx(cc);
	*out = f;
	return n;
fail:
	ZSTD_freeCCtx(cc);
	free(f);
	return 0;
}

static void touch(const char *s)
{
	volatile size_t n;

	if (s)
		n = strlen(s);
	(void)n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct trace_status *st;
	const struct trace_meta *m;
	const struct bs_hdr *h;
	struct trace_reader *r;
	uint8_t *synth = NULL;
	volatile uint8_t sink = 0;
	uint64_t n = 0, lo = ~0ull, hi = 0;
	char err[256];
	FILE *f;
	int e = 0;

	if (size > SYNTH_HDR_LEN && data[0] == SYNTH_TAG) {
		size = synth_file(data, size, &synth);
		if (!size)
			return 0;
		data = synth;
	}
	if (!size)
		return 0; /* fmemopen refuses an empty buffer; test_format covers empty files */
	f = fmemopen((void *)data, size, "rb");
	if (!f) {
		free(synth);
		return 0;
	}
	err[0] = 0;
	r = trace_reader__open_file(f, err, sizeof(err), &e);
	if (!r) {
		if (e >= 0 || !err[0])
			abort(); /* a failure must say why */
		free(synth);
		return 0;
	}
	m = trace_reader__meta(r);
	touch(m->hostname);
	touch(m->kernel);
	touch(m->boot_id);
	touch(m->cmdline);
	touch(m->families);
	touch(m->target);
	touch(m->options);
	touch(m->tool_version);
	while (trace_reader__next(r, &h) == 1) {
		size_t i;

		if (h->size < sizeof(*h) || h->size % 8 || h->type >= BS_REC_TYPE_MAX ||
		    h->type == BS_REC_FOOTER || h->type == BS_REC_CHUNK_INDEX)
			abort();
		for (i = 0; i < h->size; i++)
			sink ^= ((const uint8_t *)h)[i];
		lo = h->ts < lo ? h->ts : lo;
		hi = h->ts > hi ? h->ts : hi;
		n++;
	}
	st = trace_reader__status(r);
	if (st->records != n || (n && (st->first_ts != lo || st->last_ts != hi)))
		abort();
	if (st->clean_close == st->truncated || (st->clean_close && !st->has_end))
		abort();
	if (n && !st->chunks)
		abort();
	trace_reader__free(r);
	free(synth);
	return 0;
}
