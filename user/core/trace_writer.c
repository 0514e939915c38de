// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Chunked, checksummed trace writer. Records are split into columns in memory; a
 * full (or 1 s old) chunk is compressed into one zstd frame and reaches the file in a single
 * write() together with its header, so a killed recorder leaves whole chunks plus at most a
 * torn tail that the reader recognizes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>
#include "trace_codec.h"
#include "trace_columns.h"
#include "trace_format.h"
#include "trace_meta_io.h"
#include "trace_writer.h"
#include "mono_clock.h"
#include "sudo_owner.h"

/*
 * Level 3: smaller chunks than level 1, and still many times the records a busy recorder
 * writes on one core (bench/RESULTS.md, "Record encodings", the writer's zstd level).
 */
#define WRITER_ZSTD_LEVEL 3
#define CHUNK_HDR_LEN	  ((size_t)sizeof(struct bs_chunk_hdr))
#define TRAILER_LEN	  16

struct trace_writer {
	int fd;
	/* In-memory writer (trace_writer__open_mem): chunks go to SINK instead of a file. */
	trace_writer_sink_fn sink;
	void *sink_arg;
	__u64 off;		   /* bytes in the file */
	size_t hdr_len;		   /* of its file header */
	__u64 appended;		   /* records accepted by append() */
	__u64 written;		   /* records in chunks that reached the file */
	__u32 seq;		   /* of the next chunk */
	struct trace_codec *codec; /* the footer's */
	struct trace_columns_enc *cols;
	ZSTD_CCtx *cctx;
	size_t chunk_target; /* encoded bytes that close a chunk */

	/* The open chunk: its records are in cols. */
	__u32 nrec;
	__u64 first_ts, last_ts;
	__u64 first_mono; /* CLOCK_MONOTONIC when its first record was appended */

	__u8 *out; /* chunk header + frame */
	size_t out_cap;

	struct bs_chunk_index *idx;
	size_t nidx, idx_cap;
};

static int write_all(struct trace_writer *w, const __u8 *buf, size_t len)
{
	while (len) {
		ssize_t n = write(w->fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		w->off += (__u64)n;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Write BUF at the end of the file. If that fails halfway, cut the torn bytes off again
 * where possible, so a full disk costs the chunk and not a corrupt region.
 */
static int write_unit(struct trace_writer *w, const __u8 *buf, size_t len)
{
	__u64 start = w->off;
	int err;

	err = write_all(w, buf, len);
	if (err && w->off != start && !ftruncate(w->fd, (off_t)start) &&
	    lseek(w->fd, (off_t)start, SEEK_SET) == (off_t)start)
		w->off = start;
	return err;
}

/* Room in w->out for the chunk of RAW_LEN encoded bytes (header, frame, trailer). */
static int out_reserve(struct trace_writer *w, size_t raw_len)
{
	size_t cap = CHUNK_HDR_LEN + ZSTD_compressBound(raw_len) + TRAILER_LEN;
	__u8 *p;

	if (cap <= w->out_cap)
		return 0;
	p = realloc(w->out, cap);
	if (!p)
		return -ENOMEM;
	w->out = p;
	w->out_cap = cap;
	return 0;
}

/*
 * Compress RAW into a chunk at OUT (which has room for ZSTD_compressBound(RAW_LEN) plus
 * the header and, when TRAILER, the trailer) and write it. Returns 0 or a negative errno.
 */
static int write_chunk(struct trace_writer *w, const __u8 *raw, size_t raw_len, __u32 nrec,
		       __u64 first_ts, __u64 last_ts, __u32 flags, __u8 *out, size_t out_cap,
		       int trailer)
{
	size_t comp, len;
	__u64 start = w->off;
	__u8 *h = out;

	comp = ZSTD_compress2(w->cctx, out + CHUNK_HDR_LEN, out_cap - CHUNK_HDR_LEN - TRAILER_LEN,
			      raw, raw_len);
	if (ZSTD_isError(comp))
		return ZSTD_getErrorCode(comp) == ZSTD_error_memory_allocation ? -ENOMEM : -EIO;

	put_le32(h, BS_CHUNK_MAGIC);
	put_le32(h + 4, flags);
	put_le32(h + 8, w->seq);
	put_le32(h + 12, nrec);
	put_le32(h + 16, (__u32)comp);
	put_le32(h + 20, (__u32)raw_len);
	put_le64(h + 24, first_ts);
	put_le64(h + 32, last_ts);
	put_le32(h + 40, (__u32)crc32(0, out + CHUNK_HDR_LEN, (uInt)comp));
	put_le32(h + 44, (__u32)crc32(0, h, 44));
	len = CHUNK_HDR_LEN + comp;
	if (trailer) {
		/* With the footer in the same write(), a clean close is all or nothing. */
		put_le64(out + len, start);
		memcpy(out + len + 8, BS_TRAILER_MAGIC, 8);
		len += TRAILER_LEN;
	}
	if (w->sink) {
		struct trace_chunk_info info = {
			.seq = w->seq, .nrecords = nrec, .first_ts = first_ts, .last_ts = last_ts
		};
		int err = w->sink(w->sink_arg, out, len, &info);

		if (!err)
			w->off += len;
		return err;
	}
	return write_unit(w, out, len);
}

static int index_add(struct trace_writer *w, __u64 off)
{
	struct bs_chunk_index *e;

	if (w->nidx == w->idx_cap) {
		size_t cap = w->idx_cap ? w->idx_cap * 2 : 64;

		e = realloc(w->idx, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		w->idx = e;
		w->idx_cap = cap;
	}
	e = &w->idx[w->nidx++];
	memset(e, 0, sizeof(*e));
	e->type = BS_REC_CHUNK_INDEX;
	e->size = sizeof(*e);
	e->seq = w->seq;
	e->offset = off;
	e->first_ts = w->first_ts;
	e->last_ts = w->last_ts;
	return 0;
}

int trace_writer__flush(struct trace_writer *w)
{
	const __u8 *raw;
	__u64 off = w->off;
	size_t raw_len;
	int err;

	if (!w->nrec)
		return 0;
	err = trace_columns_enc__finish(w->cols, &raw, &raw_len);
	if (!err)
		err = out_reserve(w, raw_len);
	if (!err)
		err = write_chunk(w, raw, raw_len, w->nrec, w->first_ts, w->last_ts,
				  BS_CHUNK_COLUMNS, w->out, w->out_cap, 0);
	/* On error the chunk's records are dropped: retrying a full disk only grows the loss. */
	if (!err) {
		err = index_add(w, off);
		w->written += w->nrec;
		w->seq++;
	}
	w->nrec = 0;
	trace_columns_enc__reset(w->cols);
	return err;
}

int trace_writer__append(struct trace_writer *w, const struct bs_hdr *rec)
{
	int err;

	if (rec->size < sizeof(*rec) || rec->size % 8 || rec->type >= BS_REC_TYPE_MAX ||
	    rec->type == BS_REC_FOOTER || rec->type == BS_REC_CHUNK_INDEX)
		return -EINVAL;
	err = trace_columns_enc__add(w->cols, rec);
	if (err)
		return err;
	if (!w->nrec) {
		w->first_ts = w->last_ts = rec->ts;
		w->first_mono = mono_now_ns();
	} else if (rec->ts < w->first_ts) {
		w->first_ts = rec->ts;
	} else if (rec->ts > w->last_ts) {
		w->last_ts = rec->ts;
	}
	w->nrec++;
	w->appended++;
	if (trace_columns_enc__size(w->cols) >= w->chunk_target)
		return trace_writer__flush(w);
	return 0;
}

int trace_writer__tick(struct trace_writer *w, __u64 now_mono_ns)
{
	if (w->nrec && now_mono_ns >= w->first_mono &&
	    now_mono_ns - w->first_mono >= BS_CHUNK_TARGET_NS)
		return trace_writer__flush(w);
	return 0;
}

int trace_writer__append_chunk(struct trace_writer *w, const __u8 *chunk, size_t len,
			       const struct trace_chunk_info *info)
{
	__u64 off;
	__u8 *copy;
	int err;

	if (len < CHUNK_HDR_LEN || !info->nrecords)
		return -EINVAL;
	/* What is open goes first: file order is the order records were appended. */
	err = trace_writer__flush(w);
	if (err)
		return err;
	copy = malloc(len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, chunk, len);
	/* Renumbered in this file's order; the header's crc covers the number. */
	put_le32(copy + 8, w->seq);
	put_le32(copy + 44, (__u32)crc32(0, copy, 44));
	off = w->off;
	err = write_unit(w, copy, len);
	free(copy);
	if (err) {
		w->appended += info->nrecords; /* counted as dropped with the chunk */
		return err;
	}
	w->first_ts = info->first_ts;
	w->last_ts = info->last_ts;
	err = index_add(w, off);
	w->appended += info->nrecords;
	w->written += info->nrecords;
	w->seq++;
	return err;
}

__u32 trace_writer__seq(const struct trace_writer *w)
{
	return w->seq;
}

__u64 trace_writer__bytes(const struct trace_writer *w)
{
	return w->off;
}

__u64 trace_writer__records(const struct trace_writer *w)
{
	return w->appended;
}

__u64 trace_writer__dropped(const struct trace_writer *w)
{
	return w->appended - w->written - w->nrec;
}

/* Footer chunk: one bs_footer, then the index of every data chunk that reached the file. */
static int write_footer(struct trace_writer *w, const struct trace_clocks *end)
{
	size_t nidx = w->nidx, raw_cap, raw_len = 0, out_cap, i;
	struct bs_footer f = { 0 };
	__u8 *raw = NULL, *out = NULL;
	int n, err;

	/* A footer past what a reader accepts would hide the whole end: drop index entries. */
	if (nidx > BS_CHUNK_MAX_RAW / TRACE_CODEC_ENC_MAX(sizeof(*w->idx) / 8) - 2)
		nidx = BS_CHUNK_MAX_RAW / TRACE_CODEC_ENC_MAX(sizeof(*w->idx) / 8) - 2;
	raw_cap = TRACE_CODEC_ENC_MAX(sizeof(f) / 8) +
		  nidx * TRACE_CODEC_ENC_MAX(sizeof(*w->idx) / 8);
	out_cap = CHUNK_HDR_LEN + ZSTD_compressBound(raw_cap) + TRAILER_LEN;
	raw = malloc(raw_cap);
	out = malloc(out_cap);
	if (!raw || !out) {
		err = -ENOMEM;
		goto cleanup;
	}

	f.type = BS_REC_FOOTER;
	f.size = sizeof(f);
	f.nchunks = (__u32)w->nidx;
	f.nrecords = w->written;
	if (end) {
		f.mono_ns = end->mono_ns;
		f.realtime_ns = end->realtime_ns;
		f.boottime_ns = end->boottime_ns;
	}
	trace_codec__reset(w->codec);
	n = trace_codec__encode(w->codec, (const struct bs_hdr *)&f, raw);
	if (n < 0) {
		err = n;
		goto cleanup;
	}
	raw_len += (size_t)n;
	for (i = 0; i < nidx; i++) {
		n = trace_codec__encode(w->codec, (const struct bs_hdr *)&w->idx[i], raw + raw_len);
		if (n < 0) {
			err = n;
			goto cleanup;
		}
		raw_len += (size_t)n;
	}
	/* Footer records have no timestamp word: first_ts and last_ts are 0. */
	err = write_chunk(w, raw, raw_len, (__u32)(1 + nidx), 0, 0, BS_CHUNK_FOOTER, out, out_cap,
			  1);
cleanup:
	free(raw);
	free(out);
	return err;
}

int trace_writer__close(struct trace_writer *w, const struct trace_clocks *end)
{
	struct trace_clocks now;
	int err;

	if (!w)
		return -EINVAL;
	if (w->sink) { /* no file to end */
		trace_writer__free(w);
		return 0;
	}
	if (!end) {
		trace_clocks__now(&now);
		end = &now;
	}
	/*
	 * A footer says the file is complete. After a failed last flush (a full disk) the
	 * records of that chunk are gone and nothing in the file would count them: no footer
	 * then, and the file reads as not closed cleanly (its complete chunks recovered), as
	 * after a write that fails while recording.
	 */
	err = trace_writer__flush(w);
	if (!err)
		err = write_footer(w, end);
	if (fsync(w->fd) && !err)
		err = -errno;
	if (close(w->fd) && !err)
		err = -errno;
	w->fd = -1;
	trace_writer__free(w);
	return err;
}

void trace_writer__free(struct trace_writer *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	trace_codec__free(w->codec);
	trace_columns_enc__free(w->cols);
	ZSTD_freeCCtx(w->cctx);
	free(w->out);
	free(w->idx);
	free(w);
}

static int create_file(const char *path, __u32 flags)
{
	int oflags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
	struct stat st;
	int fd;

	if (flags & TRACE_WRITER_FORCE) {
		if (!lstat(path, &st)) {
			/* Never follow a link someone planted where root writes its trace. */
			if (S_ISLNK(st.st_mode))
				return -ELOOP;
			if (!S_ISREG(st.st_mode))
				return -EINVAL;
			if (unlink(path) && errno != ENOENT)
				return -errno;
		} else if (errno != ENOENT) {
			return -errno;
		}
	}
	fd = open(path, oflags, 0600);
	if (fd < 0)
		return -errno;
	sudo_owner__give_fd(fd);
	/*
	 * A write lock for as long as the file is open: a reader asks for it (F_GETLK) to tell a
	 * recording in progress, and the recorder's pid, from a file a recorder left unclosed.
	 * Best effort: a filesystem without locks only loses that distinction.
	 */
	fcntl(fd, F_SETLK, &(struct flock){ .l_type = F_WRLCK, .l_whence = SEEK_SET });
	return fd;
}

/* Everything but the file: codec, compressor, the open chunk's buffers. */
static struct trace_writer *writer_new(int *errp)
{
	struct trace_writer *w;
	int err;

	w = calloc(1, sizeof(*w));
	if (!w) {
		err = -ENOMEM;
		goto fail;
	}
	w->fd = -1;
	w->chunk_target = BS_CHUNK_TARGET_RAW;
	w->codec = trace_codec__new();
	w->cols = trace_columns_enc__new();
	w->cctx = ZSTD_createCCtx();
	if (!w->codec || !w->cols || !w->cctx) {
		err = -ENOMEM;
		goto fail;
	}
	if (ZSTD_isError(
		    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, WRITER_ZSTD_LEVEL)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1))) {
		err = -EINVAL;
		goto fail;
	}
	return w;
fail:
	trace_writer__free(w);
	if (errp)
		*errp = err;
	return NULL;
}

struct trace_writer *trace_writer__open_mem(trace_writer_sink_fn sink, void *arg, int *errp)
{
	struct trace_writer *w = writer_new(errp);

	if (w) {
		w->sink = sink;
		w->sink_arg = arg;
	}
	return w;
}

int trace_writer__rewrite_header(struct trace_writer *w, const struct trace_meta *meta)
{
	size_t len, done = 0;
	__u8 *hdr;
	ssize_t n;
	int err;

	if (w->sink)
		return 0; /* no file, no header */
	err = trace_meta__encode_header(meta, &hdr, &len);
	if (err)
		return err;
	if (len != w->hdr_len) {
		free(hdr);
		return -EINVAL;
	}
	while (done < len) {
		n = pwrite(w->fd, hdr + done, len - done, (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			break;
		}
		done += (size_t)n;
	}
	free(hdr);
	return err;
}

struct trace_writer *trace_writer__open(const char *path, const struct trace_meta *meta,
					__u32 flags, int *errp)
{
	struct trace_meta m = { 0 };
	struct trace_writer *w;
	__u8 *hdr = NULL;
	size_t hdr_len;
	int err;

	w = writer_new(errp);
	if (!w)
		return NULL;
	if (flags & TRACE_WRITER_FROM_FILE)
		w->chunk_target = BS_CHUNK_TARGET_FILE;

	if (meta)
		m = *meta;
	/* A caller that did not snapshot the clocks still gets a usable time base. */
	if (!m.start.mono_ns && !m.start.realtime_ns)
		trace_clocks__now(&m.start);
	err = trace_meta__encode_header(&m, &hdr, &hdr_len);
	if (err)
		goto fail;

	err = create_file(path, flags);
	if (err < 0)
		goto fail;
	w->fd = err;
	err = write_all(w, hdr, hdr_len);
	if (err) {
		/* Ours, and useless without a header. */
		unlink(path);
		goto fail;
	}
	w->hdr_len = hdr_len;
	free(hdr);
	return w;

fail:
	free(hdr);
	trace_writer__free(w);
	if (errp)
		*errp = err;
	return NULL;
}
