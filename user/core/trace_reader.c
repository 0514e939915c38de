// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Streaming trace reader. The file is read through one sliding buffer that holds at most the
 * chunk being checked; a chunk is verified whole (header crc, frame crc, zstd checksum, every
 * record decoded) before its first record is handed out, then decoded again lazily, one record
 * per next(), so memory stays at one raw chunk however big the file is.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>
#include "trace_chunk_dec.h"
#include "trace_codec.h"
#include "trace_format.h"
#include "trace_meta_io.h"
#include "trace_reader.h"
#include "trace_renumber.h"

#define CHUNK_HDR_LEN ((size_t)sizeof(struct bs_chunk_hdr))
#define TRAILER_LEN   16
#define READ_BLOCK    (64u << 10)
#define ZSTD_MAGIC    0xfd2fb528u
#define PROGRESS_STEP (1ull << 30) /* a damaged region this long gets a progress line */
#define MIN_REC_BYTES 5		   /* type, nwords and three one-byte words */

struct trace_reader {
	FILE *f;
	struct trace_meta meta;
	struct trace_status st;
	int done;
	int ioerr; /* errno of a failed read, 0 if none */

	/* Sliding window over the file: bytes [pos, end) of buf are file offset base + pos... */
	__u8 *buf;
	size_t cap, pos, end;
	__u64 base;
	int eof;

	ZSTD_DCtx *dctx;
	struct trace_chunk_dec *dec;
	__u8 *raw; /* the decompressed chunk being returned */
	size_t raw_cap;
	__u32 left;	     /* records of it not decoded yet */
	__u64 *words;	     /* the record last returned */
	__u64 progress_next; /* resync: bytes skipped before the next progress line */
	int progress_shown;
};

static __u64 cur_off(const struct trace_reader *r)
{
	return r->base + r->pos;
}

/*
 * Make N bytes available at pos. The buffer grows only while it is full of data actually
 * read, so a header that lies about a huge chunk costs at most twice the bytes the file has.
 * Returns 0, -ENODATA at end of file (fewer than N bytes left) or -ENOMEM.
 */
static int fill(struct trace_reader *r, size_t n)
{
	while (r->end - r->pos < n) {
		size_t got;

		if (r->eof)
			return -ENODATA;
		if (r->end == r->cap) {
			if (r->pos) {
				memmove(r->buf, r->buf + r->pos, r->end - r->pos);
				r->base += r->pos;
				r->end -= r->pos;
				r->pos = 0;
			} else {
				size_t cap = r->cap ? r->cap * 2 : READ_BLOCK;
				__u8 *b;

				if (cap > n && n > READ_BLOCK)
					cap = n;
				b = realloc(r->buf, cap);
				if (!b)
					return -ENOMEM;
				r->buf = b;
				r->cap = cap;
			}
		}
		got = fread(r->buf + r->end, 1, r->cap - r->end, r->f);
		r->end += got;
		if (!got) {
			if (ferror(r->f))
				r->ioerr = errno ? errno : EIO;
			r->eof = 1;
		}
	}
	return 0;
}

struct chunk {
	__u32 flags, seq, nrecords, comp_len, raw_len, data_crc;
	__u64 first_ts, last_ts;
};

/* Is P the header of a chunk this reader could accept? Fills C if so. */
static int chunk_hdr_ok(const __u8 *p, struct chunk *c)
{
	if (get_le32(p) != BS_CHUNK_MAGIC || get_le32(p + 44) != (__u32)crc32(0, p, 44))
		return 0;
	c->flags = get_le32(p + 4);
	c->seq = get_le32(p + 8);
	c->nrecords = get_le32(p + 12);
	c->comp_len = get_le32(p + 16);
	c->raw_len = get_le32(p + 20);
	c->first_ts = get_le64(p + 24);
	c->last_ts = get_le64(p + 32);
	c->data_crc = get_le32(p + 40);
	return c->raw_len <= BS_CHUNK_MAX_RAW && c->nrecords &&
	       c->nrecords <= c->raw_len / MIN_REC_BYTES && c->comp_len > 5 &&
	       c->comp_len <= ZSTD_COMPRESSBOUND(c->raw_len);
}

/*
 * Resync reads on from the end of the window: where that is inside a hole of a sparse file
 * (a trace whose writer was cut off, then the file extended), jump to the next data. No
 * chunk magic can span into a hole (its bytes are not zero), so the kept prefix can go.
 */
static void skip_hole(struct trace_reader *r)
{
	__u64 at = r->base + r->end;
	off_t next;

	if (r->eof || !r->f || ftello(r->f) != (off_t)at)
		return; /* not seekable (a pipe), or stdio's position is not ours */
	next = lseek(fileno(r->f), (off_t)at, SEEK_DATA);
	if (next < 0) {
		if (errno == ENXIO) /* only a hole up to the end of the file */
			next = lseek(fileno(r->f), 0, SEEK_END);
		if (next < 0)
			return;
	}
	if ((__u64)next <= at + READ_BLOCK || fseeko(r->f, next, SEEK_SET))
		return; /* no hole worth a seek; or cannot seek: read on */
	r->base = (__u64)next;
	r->pos = r->end = 0;
}

/* A long scan over damaged bytes says how far it got, on a terminal. */
static void scan_progress(struct trace_reader *r, __u64 start)
{
	__u64 done = cur_off(r) - start;

	if (done < r->progress_next || !isatty(STDERR_FILENO))
		return;
	fprintf(stderr,
		"\rbpfsight: looking for readable data after a damaged region: "
		"%.1f GiB skipped",
		done / 1073741824.0);
	r->progress_next = done + PROGRESS_STEP;
	r->progress_shown = 1;
}

static void scan_progress_end(struct trace_reader *r)
{
	if (r->progress_shown)
		fputc('\n', stderr);
	r->progress_shown = 0;
	r->progress_next = PROGRESS_STEP;
}

/*
 * The chunk at pos failed a check: look for the next header that passes, byte by byte.
 * Returns 0 with pos at that header, or -ENODATA with the rest of the file skipped.
 */
static int resync(struct trace_reader *r)
{
	static const __u8 magic[4] = { BS_CHUNK_MAGIC & 0xff, (BS_CHUNK_MAGIC >> 8) & 0xff,
				       (BS_CHUNK_MAGIC >> 16) & 0xff, BS_CHUNK_MAGIC >> 24 };
	__u64 start = cur_off(r);
	struct chunk c;
	__u8 *p;

	r->pos++;
	for (;;) {
		p = memmem(r->buf + r->pos, r->end - r->pos, magic, sizeof(magic));
		if (p) {
			r->pos = (size_t)(p - r->buf);
			if (fill(r, CHUNK_HDR_LEN))
				break; /* a header cut by the end of file */
			if (chunk_hdr_ok(r->buf + r->pos, &c)) {
				r->st.skipped_bytes += cur_off(r) - start;
				return 0;
			}
			r->pos++;
			continue;
		}
		/* Keep a possible magic prefix across the refill. */
		if (r->end - r->pos > sizeof(magic) - 1)
			r->pos = r->end - (sizeof(magic) - 1);
		skip_hole(r);
		scan_progress(r, start);
		if (fill(r, r->end - r->pos + 1))
			break;
	}
	scan_progress_end(r);
	r->pos = r->end;
	r->st.skipped_bytes += cur_off(r) - start;
	return -ENODATA;
}

static int take_footer(struct trace_reader *r, const __u64 *w, __u32 nwords)
{
	if (nwords * 8 < sizeof(struct bs_footer))
		return 0;
	r->st.has_end = 1;
	r->st.end.mono_ns = le64toh(w[2]);
	r->st.end.realtime_ns = le64toh(w[3]);
	r->st.end.boottime_ns = le64toh(w[4]);
	return 1;
}

/* Decompress the frame at FRAME and decode every record. Returns 0 if the chunk is sound. */
static int check_chunk(struct trace_reader *r, const struct chunk *c, const __u8 *frame)
{
	int footer = !!(c->flags & BS_CHUNK_FOOTER), have_footer = 0;
	__u64 lo = ~0ull, hi = 0, ts;
	__u32 i, nwords;
	size_t n;
	int k;

	if ((__u32)crc32(0, frame, c->comp_len) != c->data_crc)
		return -EBADMSG;
	/* Exactly one zstd frame, content size and checksum declared, as the writer makes it. */
	if (get_le32(frame) != ZSTD_MAGIC || !(frame[4] & 0x04) ||
	    ZSTD_getFrameContentSize(frame, c->comp_len) != c->raw_len ||
	    ZSTD_findFrameCompressedSize(frame, c->comp_len) != c->comp_len)
		return -EBADMSG;
	if (c->raw_len > r->raw_cap) {
		__u8 *b = realloc(r->raw, c->raw_len);

		if (!b)
			return -ENOMEM;
		r->raw = b;
		r->raw_cap = c->raw_len;
	}
	n = ZSTD_decompressDCtx(r->dctx, r->raw, c->raw_len, frame, c->comp_len);
	if (ZSTD_isError(n) || n != c->raw_len)
		return -EBADMSG;

	k = trace_chunk_dec__begin(r->dec, c->flags, r->raw, c->raw_len, c->nrecords);
	for (i = 0; !k && i < c->nrecords; i++) {
		k = trace_chunk_dec__next(r->dec, r->words, &nwords);
		if (k < 0)
			return k;
		/* Types took a byte before format 4. */
		if ((le64toh(r->words[0]) & 0xffff) >= TRACE_RENUMBER_BYTE_TYPES &&
		    r->meta.version < TRACE_RENUMBER_VERSION)
			return -EBADMSG;
		if (footer) {
			if ((le64toh(r->words[0]) & 0xffff) == BS_REC_FOOTER)
				have_footer |= take_footer(r, r->words, nwords);
			continue;
		}
		ts = le64toh(r->words[2]);
		lo = ts < lo ? ts : lo;
		hi = ts > hi ? ts : hi;
	}
	if (k || trace_chunk_dec__end(r->dec))
		return -EBADMSG;
	if (footer)
		return have_footer ? 0 : -EBADMSG;
	return lo == c->first_ts && hi == c->last_ts ? 0 : -EBADMSG;
}

/* After a footer chunk: is the rest of the file exactly a trailer pointing back at it? */
static void check_trailer(struct trace_reader *r, __u64 footer_off)
{
	const __u8 *p;

	if (!fill(r, TRAILER_LEN + 1) || r->end - r->pos != TRAILER_LEN)
		return; /* more follows, or a cut trailer: the main loop sees to it */
	p = r->buf + r->pos;
	if (!memcmp(p + 8, BS_TRAILER_MAGIC, 8) && get_le64(p) == footer_off) {
		r->st.clean_close = 1;
	} else {
		/* A whole trailer that is wrong is damage, not a crash. */
		r->st.corrupt_chunks++;
		r->st.skipped_bytes += TRAILER_LEN;
	}
	r->pos = r->end;
}

/* Find the next sound data chunk and prepare to return its records. 1 = one, 0 = end. */
static int load_chunk(struct trace_reader *r)
{
	struct chunk c;
	__u64 off;
	int err;

	while (!r->done) {
		if (fill(r, CHUNK_HDR_LEN)) {
			/* Nothing left, or the start of a chunk the writer never finished. */
			r->done = 1;
			break;
		}
		if (!chunk_hdr_ok(r->buf + r->pos, &c)) {
			r->st.corrupt_chunks++;
			if (resync(r))
				r->done = 1;
			continue;
		}
		if (fill(r, CHUNK_HDR_LEN + c.comp_len)) {
			/* The header checks out: the frame was cut short by a crash. */
			r->done = 1;
			break;
		}
		err = check_chunk(r, &c, r->buf + r->pos + CHUNK_HDR_LEN);
		if (err == -ENOMEM) {
			r->ioerr = ENOMEM;
			r->done = 1;
			break;
		}
		if (err) {
			r->st.corrupt_chunks++;
			if (resync(r))
				r->done = 1;
			continue;
		}
		off = cur_off(r);
		r->pos += CHUNK_HDR_LEN + c.comp_len;
		if (c.flags & BS_CHUNK_FOOTER) {
			check_trailer(r, off);
			continue;
		}
		/* check_chunk decoded it whole: this cannot fail. */
		trace_chunk_dec__begin(r->dec, c.flags, r->raw, c.raw_len, c.nrecords);
		r->left = c.nrecords;
		r->st.chunks++;
		return 1;
	}
	r->st.truncated = !r->st.clean_close;
	return 0;
}

int trace_reader__next(struct trace_reader *r, const struct bs_hdr **rec)
{
	const struct bs_hdr *h;
	__u32 nwords, type;
	__u64 ts;
	int k;

	for (;;) {
		while (r->left) {
			k = trace_chunk_dec__next(r->dec, r->words, &nwords);
			if (k < 0) {
				/* check_chunk decoded the same bytes: only memory can fail here. */
				r->left = 0;
				break;
			}
			r->left--;
			h = (const struct bs_hdr *)r->words;
			type = le16toh(h->type);
			if (type == BS_REC_FOOTER || type == BS_REC_CHUNK_INDEX)
				continue;
			trace_renumber__record(r->meta.version, r->words, nwords);
			ts = le64toh(r->words[2]);
			if (!r->st.records || ts < r->st.first_ts)
				r->st.first_ts = ts;
			if (!r->st.records || ts > r->st.last_ts)
				r->st.last_ts = ts;
			r->st.records++;
			*rec = h;
			return 1;
		}
		if (!load_chunk(r))
			return 0;
	}
}

const struct trace_status *trace_reader__status(const struct trace_reader *r)
{
	return &r->st;
}

const struct trace_meta *trace_reader__meta(const struct trace_reader *r)
{
	return &r->meta;
}

void trace_reader__free(struct trace_reader *r)
{
	if (!r)
		return;
	if (r->f)
		fclose(r->f);
	trace_meta__clear(&r->meta);
	ZSTD_freeDCtx(r->dctx);
	trace_chunk_dec__free(r->dec);
	free(r->buf);
	free(r->raw);
	free(r->words);
	free(r);
}

static int read_header(struct trace_reader *r, char *err, size_t errlen)
{
	size_t avail, total;
	__u32 version, meta_len;
	const __u8 *p;

	if (fill(r, BS_FILE_HDR_FIXED) == -ENOMEM) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	avail = r->end - r->pos;
	if (!avail && r->ioerr) {
		snprintf(err, errlen, "read error: %s", strerror(r->ioerr));
		return -r->ioerr;
	}
	if (!avail) {
		snprintf(err, errlen, "empty file");
		return -ENODATA;
	}
	p = r->buf + r->pos;
	if (memcmp(p, BS_FILE_MAGIC, avail < 8 ? avail : 8)) {
		snprintf(err, errlen, "not a bpfsight trace (bad magic)");
		return -EINVAL;
	}
	if (avail < BS_FILE_HDR_FIXED) {
		snprintf(err, errlen, "truncated file header (%zu bytes)", avail);
		return -EBADMSG;
	}
	version = get_le32(p + 8);
	if (version < BS_FILE_VERSION_MIN || version > BS_FILE_VERSION) {
		snprintf(err, errlen,
			 "unsupported format version %u (this bpfsight reads %u to %u)", version,
			 BS_FILE_VERSION_MIN, BS_FILE_VERSION);
		return -EPROTONOSUPPORT;
	}
	meta_len = get_le32(p + 12);
	if (meta_len > BS_META_MAX) {
		snprintf(err, errlen, "corrupt file header (%u bytes of metadata, limit %u)",
			 meta_len, BS_META_MAX);
		return -EBADMSG;
	}
	total = BS_FILE_HDR_FIXED + meta_len + 4;
	if (fill(r, total)) {
		snprintf(err, errlen, "truncated file header (%zu of %zu bytes)", r->end - r->pos,
			 total);
		return r->ioerr ? -r->ioerr : -EBADMSG;
	}
	p = r->buf + r->pos;
	if (get_le32(p + total - 4) != (__u32)crc32(0, p, (uInt)(total - 4))) {
		snprintf(err, errlen, "corrupt file header (checksum mismatch)");
		return -EBADMSG;
	}
	r->meta.version = version;
	trace_chunk_dec__version(r->dec, version);
	r->pos += total;
	return trace_meta__decode_tlvs(&r->meta, p + BS_FILE_HDR_FIXED, meta_len, err, errlen);
}

long long trace_reader__offset(const struct trace_reader *r)
{
	return r && r->f ? ftello(r->f) : -1;
}

struct trace_reader *trace_reader__open_file(FILE *f, char *err, size_t errlen, int *errp)
{
	struct trace_reader *r;
	char dummy[1];
	int e;

	if (!err) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		if (f)
			fclose(f);
		snprintf(err, errlen, "out of memory");
		e = -ENOMEM;
		goto fail;
	}
	r->f = f;
	r->progress_next = PROGRESS_STEP;
	r->dctx = ZSTD_createDCtx();
	r->dec = trace_chunk_dec__new();
	r->words = malloc(TRACE_CODEC_MAX_WORDS * sizeof(*r->words));
	if (!f || !r->dctx || !r->dec || !r->words) {
		snprintf(err, errlen, f ? "out of memory" : "no input stream");
		e = f ? -ENOMEM : -EINVAL;
		goto fail;
	}
	e = read_header(r, err, errlen);
	if (e)
		goto fail;
	return r;

fail:
	trace_reader__free(r);
	if (errp)
		*errp = e;
	return NULL;
}

/* The pid holding the writer's lock on FD (trace_writer.c's create_file), 0 when none. */
static __u32 lock_holder(int fd)
{
	struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET };

	if (fcntl(fd, F_GETLK, &fl) || fl.l_type == F_UNLCK)
		return 0;
	return fl.l_pid > 0 ? (__u32)fl.l_pid : 1; /* another pid namespace's: still a writer */
}

struct trace_reader *trace_reader__open(const char *path, char *err, size_t errlen, int *errp)
{
	FILE *f = fopen(path, "rbe");
	int e = -errno;
	struct trace_reader *r;
	__u32 writer;

	if (!f) {
		if (err)
			snprintf(err, errlen, "cannot open %s: %s", path, strerror(-e));
		if (errp)
			*errp = e;
		return NULL;
	}
	/* Asked before anything is read: the recorder may close the file meanwhile. */
	writer = lock_holder(fileno(f));
	r = trace_reader__open_file(f, err, errlen, errp);
	if (r)
		r->st.writer_pid = writer;
	return r;
}
