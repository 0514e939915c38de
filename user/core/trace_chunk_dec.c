// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Chunk records by encoding (trace_chunk_dec.h): the chunk's flags pick the codec. */
#include <errno.h>
#include <stdlib.h>
#include "trace_chunk_dec.h"
#include "trace_codec.h"
#include "trace_columns.h"
#include "trace_format.h"

struct trace_chunk_dec {
	struct trace_codec *varint;
	struct trace_columns_dec *columns;
	int use_columns;
	const __u8 *raw;
	size_t len, pos;
};

struct trace_chunk_dec *trace_chunk_dec__new(void)
{
	struct trace_chunk_dec *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->varint = trace_codec__new();
	d->columns = trace_columns_dec__new();
	if (!d->varint || !d->columns) {
		trace_chunk_dec__free(d);
		return NULL;
	}
	return d;
}

void trace_chunk_dec__version(struct trace_chunk_dec *d, __u32 version)
{
	trace_columns_dec__version(d->columns, version);
}

void trace_chunk_dec__free(struct trace_chunk_dec *d)
{
	if (!d)
		return;
	trace_codec__free(d->varint);
	trace_columns_dec__free(d->columns);
	free(d);
}

int trace_chunk_dec__begin(struct trace_chunk_dec *d, __u32 flags, const __u8 *raw, size_t len,
			   __u32 nrecords)
{
	d->use_columns = !!(flags & BS_CHUNK_COLUMNS);
	d->raw = raw;
	d->len = len;
	d->pos = 0;
	if (d->use_columns)
		return trace_columns_dec__begin(d->columns, raw, len, nrecords);
	trace_codec__reset(d->varint);
	return 0;
}

int trace_chunk_dec__next(struct trace_chunk_dec *d, __u64 *words, __u32 *nwords)
{
	int k;

	if (d->use_columns)
		return trace_columns_dec__next(d->columns, words, nwords);
	k = trace_codec__decode(d->varint, d->raw + d->pos, d->len - d->pos, words, nwords);
	if (k < 0)
		return k;
	d->pos += (size_t)k;
	return 0;
}

int trace_chunk_dec__end(const struct trace_chunk_dec *d)
{
	if (d->use_columns)
		return trace_columns_dec__end(d->columns);
	return d->pos == d->len ? 0 : -EBADMSG;
}
