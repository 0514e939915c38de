// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Chrome trace JSON with Kineto's conventions, so chrome://tracing, Perfetto's JSON importer
 * and Holistic Trace Analysis (HTA) open it like a torch.profiler trace: metadata keys before
 * "traceEvents", complete events ("ph":"X") and instants ("ph":"i") with ts/dur in
 * microseconds carrying the nanoseconds as three decimals, a "cat" per kind following Kineto's
 * names where Kineto has one, process/thread names as "ph":"M" events.
 *
 * Nothing here knows a family: each kind is drawn by its decoder's style (struct
 * export_style: category, phase), and what a family shows beyond that is its description in the
 * export model (export_model.h), drawn in the PyTorch profiler's view by export_chrome_model.c:
 * GPU work as Kineto draws it (pid = device, tid = stream, ac2g flows from launches), NVTX
 * ranges, counters, NCCL's distributedInfo. Streamed: every event is written as it comes;
 * memory holds only the set of processes and threads seen (for their name events at the end)
 * and what the families keep (bounded by processes, streams and time bins, except NVTX's
 * projection onto the GPU in traces of both gpu and nvtx: every closed range and linked GPU
 * operation, since Kineto's gpu_user_annotation needs them all). OUT ending in ".gz" is
 * gzip-compressed on the fly. Stacks (export_chrome_stack.c): Kineto's "Call stack" in an
 * event's args, and for samples (a style's `sample`) a "stackFrames" node.
 *
 * Some metadata keys (Kineto's distributedInfo) must come before traceEvents (HTA reads the
 * metadata by scanning the text up to them), but only the whole trace tells them. So the
 * write is deferred: the header keeps the family's blanks (valid JSON whitespace) where the
 * key goes, and finish() writes the key over them in place. The .gz output is one gzip
 * member made by hand so that this works there too: the header is stored uncompressed
 * (stored deflate blocks, at a known offset), the events follow as ordinary deflate blocks,
 * and the trailer's CRC-32 is combined from the header's final bytes and the events'
 * (crc32_combine). A first pass over FILE would read it twice, and the exporter is only given
 * OUT.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "bpfsight_version.h"
#include "export_chrome.h"
#include "fd_write.h"
#include "family.h"
#include "json.h"
#include "hmap.h"

#define CHROME_GZ_HDR_LEN 10
#define CHROME_STORED_MAX 65535 /* bytes of one stored deflate block */

static int write_all(int fd, const void *buf, size_t n, int *errp)
{
	int err = fd__write_all(fd, buf, n);

	if (err)
		*errp = -err;
	return err ? -1 : 0;
}

/* Deflate N bytes (Z_NO_FLUSH) or finish the stream (Z_FINISH), writing what comes out. */
static int chrome_deflate(struct chrome_out *o, const char *buf, size_t n, int flush)
{
	int ret;

	o->zs.next_in = (Bytef *)buf;
	o->zs.avail_in = (uInt)n;
	do {
		o->zs.next_out = o->zbuf;
		o->zs.avail_out = sizeof(o->zbuf);
		ret = deflate(&o->zs, flush);
		if (ret == Z_STREAM_ERROR) {
			o->err = EIO;
			return -1;
		}
		if (write_all(o->fd, o->zbuf, sizeof(o->zbuf) - o->zs.avail_out, &o->err))
			return -1;
	} while (o->zs.avail_out == 0 || (flush == Z_FINISH && ret != Z_STREAM_END));
	return 0;
}

static ssize_t chrome_out_write(void *cookie, const char *buf, size_t n)
{
	struct chrome_out *o = cookie;
	size_t done = 0, part;

	if (o->err) {
		errno = o->err;
		return -1;
	}
	if (!o->gz) {
		/* glibc flags a short count from a cookie as an error: write it all. */
		if (write_all(o->fd, buf, n, &o->err)) {
			errno = o->err;
			return -1;
		}
		return n;
	}
	while (done < n) {
		part = n - done > (1u << 30) ? 1u << 30 : n - done;
		o->crc = (__u32)crc32(o->crc, (const Bytef *)buf + done, (uInt)part);
		o->len += part;
		if (chrome_deflate(o, buf + done, part, Z_NO_FLUSH)) {
			errno = o->err;
			return -1;
		}
		done += part;
	}
	return n;
}

static void put_le32(unsigned char *p, __u32 v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* gzip's trailer: CRC-32 and length (mod 2^32) of the header and the events together. */
static int chrome_gz_finish(struct chrome_out *o)
{
	unsigned char t[8];
	__u32 crc = (__u32)crc32_combine(o->hdr_crc, o->crc, (z_off_t)o->len);

	if (chrome_deflate(o, NULL, 0, Z_FINISH))
		return -1;
	put_le32(t, crc);
	put_le32(t + 4, (__u32)(o->hdr_len + o->len));
	return write_all(o->fd, t, sizeof(t), &o->err);
}

static int chrome_out_close(void *cookie)
{
	struct chrome_out *o = cookie;
	int ret = 0;

	if (o->gz && !o->err && chrome_gz_finish(o))
		ret = -1;
	if (o->zs_live)
		deflateEnd(&o->zs);
	o->zs_live = 0;
	if (close(o->fd) && !ret) {
		if (!o->err)
			o->err = errno ? errno : EIO;
		ret = -1;
	}
	if (o->err)
		ret = -1;
	return ret;
}

static int has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/* OUT must be new: O_EXCL and O_NOFOLLOW so a planted symlink is never written through. */
static int chrome_create(const char *out, struct chrome_out *o)
{
	o->fd = export__create(out);
	if (o->fd < 0)
		return -errno;
	if (!has_suffix(out, ".gz"))
		return 0;
	o->gz = 1;
	/* Raw deflate (-15): the gzip header, the stored header text and the trailer are ours. */
	if (deflateInit2(&o->zs, CHROME_GZ_LEVEL, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		close(o->fd);
		return -ENOMEM;
	}
	o->zs_live = 1;
	o->crc = (__u32)crc32(0, Z_NULL, 0);
	return 0;
}

/*
 * The header's bytes as they go at the start of OUT: its text, or for .gz the gzip header
 * (no name, no mtime, OS Unix, as gzip -n writes it) and the text in stored deflate blocks,
 * verbatim. Same length however the text changes (it keeps its length), so the final
 * version overwrites the first in place. Malloc'ed; NULL when out of memory.
 */
static unsigned char *chrome_header_bytes(const struct chrome *c, size_t *lenp)
{
	static const unsigned char gz_hdr[CHROME_GZ_HDR_LEN] = {
		0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3
	};
	size_t nblocks, n, at = 0, left, part;
	const char *p = c->hdr;
	unsigned char *b;

	if (!c->out.gz) {
		b = malloc(c->hdr_len ? c->hdr_len : 1);
		if (b)
			memcpy(b, c->hdr, c->hdr_len);
		*lenp = c->hdr_len;
		return b;
	}
	nblocks = (c->hdr_len + CHROME_STORED_MAX - 1) / CHROME_STORED_MAX;
	n = CHROME_GZ_HDR_LEN + 5 * nblocks + c->hdr_len;
	b = malloc(n);
	if (!b)
		return NULL;
	memcpy(b, gz_hdr, sizeof(gz_hdr));
	at = sizeof(gz_hdr);
	for (left = c->hdr_len; left; left -= part, p += part) {
		part = left > CHROME_STORED_MAX ? CHROME_STORED_MAX : left;
		/* BFINAL 0, BTYPE 00 (stored), padded to the byte; LEN, NLEN little-endian. */
		b[at++] = 0;
		b[at++] = (unsigned char)part;
		b[at++] = (unsigned char)(part >> 8);
		b[at++] = (unsigned char)~part;
		b[at++] = (unsigned char)(~part >> 8);
		memcpy(b + at, p, part);
		at += part;
	}
	*lenp = n;
	return b;
}

/* Write the header at the start of OUT (FIRST: where the stream begins; else over itself). */
static int chrome_put_header(struct chrome *c, int first)
{
	unsigned char *b;
	size_t n, done = 0;
	ssize_t w;
	int err = 0;

	b = chrome_header_bytes(c, &n);
	if (!b)
		return -ENOMEM;
	if (first) {
		if (write_all(c->out.fd, b, n, &err))
			err = -err;
	} else {
		while (!err && done < n) {
			w = pwrite(c->out.fd, b + done, n - done, (off_t)done);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				err = w < 0 ? -errno : -EIO;
			else
				done += w;
		}
	}
	free(b);
	if (!err) {
		c->out.hdr_crc = (__u32)crc32(0, (const Bytef *)c->hdr, (uInt)c->hdr_len);
		c->out.hdr_len = (__u32)c->hdr_len;
	}
	return err;
}

static FILE *chrome_stream(struct chrome_out *o, int *err)
{
	static const cookie_io_functions_t io = {
		.write = chrome_out_write,
		.close = chrome_out_close,
	};
	FILE *f = fopencookie(o, "w", io);

	if (!f)
		*err = -errno;
	return f;
}

/* The negative errno of the first failed write, once stdio says one failed. */
int chrome_err(const struct chrome *c)
{
	return -(c->out.err ? c->out.err : EIO);
}

/* ns as microseconds with the ns fraction: exact, where a double would round late timestamps. */
void chrome_us(FILE *f, __u64 ns)
{
	fprintf(f, "%llu.%03llu", (unsigned long long)(ns / 1000), (unsigned long long)(ns % 1000));
}

void chrome_str(FILE *f, const char *s)
{
	json_write_string(f, s ? s : "", s ? strlen(s) : 0);
}

/* The blanks family I's header key may need (0: it has none): the trace's rank it may say. */
static size_t chrome_header_space(int i)
{
	const struct family_export *x = families[i]->export;

	return x && x->says & EX_SAYS_RANK ? CHROME_DIST_RESERVE : 0;
}

/*
 * The header, "{" up to "traceEvents":[, into c->hdr. A family recorded with a key told at the
 * end gets its blanks at c->hdr_off[family], filled in by chrome_header_keys.
 */
static int chrome_header(struct chrome *c, const struct trace_meta *meta)
{
	FILE *m = open_memstream(&c->hdr, &c->hdr_len);
	struct json j;

	if (!m)
		return -ENOMEM;
	json__init(&j, m, 1);
	json__begin_object(&j);
	json__kv_u64(&j, "schemaVersion", 1);
	json__key(&j, "deviceProperties");
	json__begin_array(&j);
	json__end_array(&j);
	for (int i = 0; i < c->nfam; i++) {
		size_t space = chrome_header_space(i);

		c->hdr_off[i] = -1;
		if (!space || !ex_recorded(meta, families[i]->name))
			continue;
		fflush(m);
		c->hdr_off[i] = ftell(m);
		fprintf(m, "%*s", (int)space, "");
	}
	json__kv_str(&j, "traceName", c->path);
	json__kv_str(&j, "displayTimeUnit", "ns");
	/* Kineto's: ts + this = wall-clock (ns since the epoch): REALTIME - MONOTONIC at start. */
	if (meta->start.realtime_ns > meta->start.mono_ns)
		json__kv_u64(&j, "baseTimeNanoseconds",
			     meta->start.realtime_ns - meta->start.mono_ns);
	/* Ours: where the trace comes from, and the clocks to turn ts into wall time. */
	json__key(&j, "bpfsight");
	json__begin_object(&j);
	json__kv_str(&j, "hostname", meta->hostname);
	json__kv_str(&j, "kernel", meta->kernel);
	json__kv_str(&j, "target", meta->target);
	json__kv_str(&j, "families", meta->families);
	json__kv_str(&j, "recorder_version", meta->tool_version);
	json__kv_str(&j, "exporter_version", BPFSIGHT_VERSION);
	json__kv_str(&j, "clock", "CLOCK_MONOTONIC");
	json__kv_u64(&j, "start_monotonic_ns", meta->start.mono_ns);
	json__kv_u64(&j, "start_realtime_ns", meta->start.realtime_ns);
	json__kv_u64(&j, "start_boottime_ns", meta->start.boottime_ns);
	json__end_object(&j);
	json__key(&j, "traceEvents");
	/* The array is closed by chrome__finish: events go in raw, one per line. */
	fputc('[', m);
	/* open_memstream only fails for memory. */
	return fclose(m) ? -ENOMEM : 0;
}

/*
 * The families' keys, written over the blanks the header kept: 1 when there were blanks (the
 * header must be written again), 0 when none, -ENOMEM.
 */
static int chrome_header_keys(struct chrome *c)
{
	size_t space;
	int any = 0, len;
	char *buf;

	for (int i = 0; i < c->nfam; i++) {
		if (c->hdr_off[i] < 0)
			continue;
		any = 1;
		space = chrome_header_space(i);
		buf = malloc(space + 1);
		if (!buf)
			return -ENOMEM;
		len = chrome_rank_key(c, buf, space);
		if (len > 0 && (size_t)len <= space)
			memcpy(c->hdr + c->hdr_off[i], buf, len);
		free(buf);
	}
	return any;
}

static void chrome_free(struct chrome *c)
{
	ex_sink__fini(&c->sink);
	hmap__free(c->streams);
	free(c->hdr_off);
	hmap__free(c->threads);
	hmap__free(c->procs);
	chrome_stacks__free(c);
	if (c->scratch)
		fclose(c->scratch);
	free(c->scratch_buf);
	free(c->hdr);
	free(c);
}

static void *chrome__open(const char *out, const struct trace_meta *meta,
			  const struct export_opts *opts, int *err)
{
	struct chrome *c = calloc(1, sizeof(*c));

	if (!c) {
		*err = -ENOMEM;
		return NULL;
	}
	c->path = out;
	c->out.fd = -1;
	c->threads = hmap__new(1);
	c->procs = hmap__new(1);
	c->start_mono = meta->start.mono_ns;
	c->last_fam = -1;
	c->streams = hmap__new(1);
	*err = ex_sink__init(&c->sink, &chrome_sink_ops, meta, EX_PROFILER);
	c->nfam = c->sink.nfam;
	c->hdr_off = calloc(c->nfam + 1, sizeof(*c->hdr_off));
	c->scratch = open_memstream(&c->scratch_buf, &c->scratch_size);
	if (*err || !c->threads || !c->procs || !c->streams || !c->hdr_off || !c->scratch ||
	    chrome_stacks__new(c)) {
		*err = -ENOMEM;
		goto err_free;
	}
	for (int i = 0; i < c->nfam && !*err; i++)
		*err = ex_sink__open_one(&c->sink, i);
	if (*err)
		goto err_free;
	*err = chrome_header(c, meta);
	if (*err)
		goto err_free;
	*err = chrome_create(out, &c->out);
	if (*err)
		goto err_free;
	*err = chrome_put_header(c, 1);
	if (!*err)
		c->f = chrome_stream(&c->out, err);
	if (!c->f) {
		if (c->out.zs_live)
			deflateEnd(&c->out.zs);
		close(c->out.fd);
		goto err_free;
	}
	setvbuf(c->f, c->buf, _IOFBF, sizeof(c->buf));
	return c;

err_free:
	chrome_free(c);
	return NULL;
}

/* The decoder of TYPE and its family's index (-1: none). */
static const struct rec_decoder *chrome_decoder(struct chrome *c, __u16 type, int *fam)
{
	if (!c->last || c->last->type != type)
		c->last = family__decoder_at(type, &c->last_fam);
	*fam = c->last_fam;
	return c->last;
}

/* The common fields of every event object, opened and left open. */
void chrome_begin(struct chrome *c, char ph, const char *cat, const char *name, __u32 pid,
		  __u32 tid)
{
	FILE *f = c->f;

	fputs(c->nevents++ ? ",\n{\"ph\":\"" : "\n{\"ph\":\"", f);
	fputc(ph, f);
	fputs("\",\"cat\":", f);
	chrome_str(f, cat);
	fputs(",\"name\":", f);
	chrome_str(f, name);
	fprintf(f, ",\"pid\":%u,\"tid\":%u", pid, tid);
}

void chrome_complete(struct chrome *c, const char *cat, const char *name, __u32 pid, __u32 tid,
		     __u64 ts, __u64 dur)
{
	chrome_begin(c, 'X', cat, name, pid, tid);
	fputs(",\"ts\":", c->f);
	chrome_us(c->f, ts);
	fputs(",\"dur\":", c->f);
	chrome_us(c->f, dur);
}

void chrome_plain_args(struct chrome *c, const struct event *ev)
{
	struct json j;

	fputs(",\"args\":", c->f);
	json__init(&j, c->f, 0);
	event__json_args(ev, &j);
}

/* EV's u64 argument KEY into *V; 0 when it has none. */
static int chrome_arg_u64(const struct event *ev, const char *key, __u64 *v)
{
	for (__u32 i = 0; i < ev->nargs && i < EVENT_MAX_ARGS; i++) {
		if (ev->args[i].kind == EVENT_ARG_U64 && !strcmp(ev->args[i].key, key)) {
			*v = ev->args[i].u;
			return 1;
		}
	}
	return 0;
}

/* A kernel launch's shape, as Kineto writes it on kernels: grid and block as [x, y, z]. */
static int chrome_dims(const struct event *ev, __u64 dims[6])
{
	static const char *const keys[6] = { "grid_x",	"grid_y",  "grid_z",
					     "block_x", "block_y", "block_z" };

	for (int i = 0; i < 6; i++)
		if (!chrome_arg_u64(ev, keys[i], &dims[i]))
			return 0;
	return 1;
}

int chrome_args_open(struct chrome *c, const struct event *ev)
{
	struct json j;
	long len;

	fputs(",\"args\":", c->f);
	if (fseek(c->scratch, 0, SEEK_SET))
		return -EIO;
	json__init(&j, c->scratch, 0);
	event__json_args(ev, &j);
	if (fflush(c->scratch) || (len = ftell(c->scratch)) < 2)
		return -ENOMEM;
	fwrite(c->scratch_buf, 1, len - 1, c->f);
	return c->scratch_buf[len - 2] != '{';
}

/*
 * dump's args, as dump writes them (event__json_args), plus Kineto's "grid" and "block" on
 * launches and the "correlation" that ties a launching call to its GPU work (FLOW, 0 = none).
 * Such an object is written to the scratch stream first, its closing brace left out; the
 * other events go straight to the output.
 */
static int chrome_args(struct chrome *c, const struct event *ev, __u64 flow)
{
	int dims, nonempty, err;
	__u64 d[6];

	dims = chrome_dims(ev, d);
	if (!dims && !flow && !ev->stack && !ev->holder_stack) {
		chrome_plain_args(c, ev);
		return 0;
	}
	nonempty = chrome_args_open(c, ev);
	if (nonempty < 0)
		return nonempty;
	if (dims) {
		fprintf(c->f, "%s\"grid\":[%llu,%llu,%llu],\"block\":[%llu,%llu,%llu]",
			nonempty ? "," : "", (unsigned long long)d[0], (unsigned long long)d[1],
			(unsigned long long)d[2], (unsigned long long)d[3],
			(unsigned long long)d[4], (unsigned long long)d[5]);
		nonempty = 1;
	}
	if (flow) {
		__u64 ext = chrome_external_id(c, ev->pid, ev->tid, ev->ts);

		fprintf(c->f, "%s\"correlation\":%llu", nonempty ? "," : "",
			(unsigned long long)flow);
		if (ext)
			fprintf(c->f, ",\"External id\":%llu", (unsigned long long)ext);
		nonempty = 1;
	}
	err = chrome_stack_args(c, ev, c->model, nonempty);
	fputc('}', c->f);
	return err;
}

int chrome_thread(struct chrome *c, __u32 pid, __u32 tid)
{
	return hmap__get(c->threads, (struct hkey){ pid, tid }, 1) ? 0 : -ENOMEM;
}

static int chrome_seen(struct chrome *c, __u32 pid, __u32 tid)
{
	/* pid 0 / tid 0: records of the recorder itself (strings, loss), not a thread. */
	if (!pid && !tid)
		return 0;
	if (!hmap__get(c->threads, (struct hkey){ pid, tid }, 1) ||
	    !hmap__get(c->procs, (struct hkey){ pid, 0 }, 1))
		return -ENOMEM;
	return 0;
}

__u64 chrome_external_id(struct chrome *c, __u32 pid, __u32 tid, __u64 ts)
{
	return ex_op_at(&c->sink, pid, tid, ts);
}

void chrome_flow(struct chrome *c, char ph, __u64 id, __u32 pid, __u32 tid, __u64 ts)
{
	chrome_begin(c, ph, "ac2g", "ac2g", pid, tid);
	fprintf(c->f, ",\"id\":%llu,\"ts\":", (unsigned long long)id);
	chrome_us(c->f, ts);
	if (ph == 'f')
		fputs(",\"bp\":\"e\"", c->f); /* bind to the slice that encloses ts: the kernel */
	fputc('}', c->f);
}

int chrome_event(struct chrome *c, const struct bs_hdr *rec, const struct event *ev,
		 const char *cat)
{
	const struct export_style *k;
	const struct rec_decoder *d;
	__u64 flow = 0;
	int err, fam;
	char ph;

	d = chrome_decoder(c, rec->type, &fam);
	k = d ? d->style : NULL;
	if (!cat)
		cat = k && k->cat ? k->cat : ev->kind;
	ph = k && k->ph ? k->ph : ev->dur ? 'X' : 'i';
	chrome_ex_flows(c, rec, &flow, NULL);

	chrome_begin(c, ph, cat, ev->name ? ev->name : ev->kind, ev->pid, ev->tid);
	fputs(",\"ts\":", c->f);
	chrome_us(c->f, ev->ts);
	if (ph == 'X') {
		fputs(",\"dur\":", c->f);
		chrome_us(c->f, ev->dur);
	} else {
		fputs(",\"s\":\"t\"", c->f);
	}
	if (k && k->sample) {
		/* A sample: its stack as a "stackFrames" node, as chrome://tracing reads them. */
		__u64 sf;

		err = chrome_sample_frame(c, ev, &sf);
		if (err)
			return err;
		if (sf)
			fprintf(c->f, ",\"sf\":%llu", (unsigned long long)sf);
	}
	err = chrome_args(c, ev, flow);
	if (err)
		return err;
	fputc('}', c->f);
	if (flow)
		chrome_flow(c, 's', flow, ev->pid, ev->tid, ev->ts);
	return 0;
}

static int chrome__record(void *st, const struct bs_hdr *rec, const struct event *ev,
			  const struct trace_model *m)
{
	struct chrome *c = st;
	int err, fam;

	c->model = m;
	c->sink.model = m;
	err = chrome_seen(c, rec->pid, rec->tid);
	if (!err)
		err = ex_sink__observe(&c->sink, rec);
	if (err)
		return err;
	chrome_decoder(c, rec->type, &fam);
	err = ex_sink__record(&c->sink, fam, rec, ev);
	if (!err && ev)
		err = chrome_event(c, rec, ev, NULL);
	return err < 0 ? err : ferror(c->f) ? chrome_err(c) : 0;
}

void chrome_meta_event(struct chrome *c, const char *what, __u32 pid, __u32 tid, const char *name,
		       __u64 sort_index)
{
	FILE *f = c->f;

	fputs(c->nevents++ ? ",\n{\"ph\":\"M\",\"name\":" : "\n{\"ph\":\"M\",\"name\":", f);
	chrome_str(f, what);
	fprintf(f, ",\"pid\":%u,\"tid\":%u,\"args\":{", pid, tid);
	if (name) {
		fputs("\"name\":", f);
		chrome_str(f, name);
	} else {
		fprintf(f, "\"sort_index\":%llu", (unsigned long long)sort_index);
	}
	fputs("}}", f);
}

/*
 * Names last: the model learns them as the trace goes (a thread renames itself after it
 * starts), and the viewer applies M events wherever they sit in the array.
 */
static void chrome_names(struct chrome *c, const struct trace_model *m)
{
	struct hkey key;
	const char *name;
	size_t it = 0;

	while (hmap__next(c->procs, &it, &key)) {
		name = trace_model__process_name(m, (__u32)key.a);
		if (name)
			chrome_meta_event(c, "process_name", key.a, 0, name, 0);
		chrome_meta_event(c, "process_sort_index", key.a, 0, NULL, key.a);
	}
	it = 0;
	while (hmap__next(c->threads, &it, &key)) {
		name = trace_model__thread_name(m, (__u32)key.b);
		if (name)
			chrome_meta_event(c, "thread_name", key.a, key.b, name, 0);
		chrome_meta_event(c, "thread_sort_index", key.a, key.b, NULL, key.b);
	}
	chrome_gpu_names(c);
}

static int chrome__finish(void *st, const struct trace_model *m, const struct trace_status *status)
{
	struct chrome *c = st;
	int err = 0;

	c->model = m;
	c->sink.model = m;
	/*
	 * In registry order, unlike the other exporters' teardown: these write events, and the
	 * array keeps the order it has always had (GIL's counters, then NVTX's GPU annotations).
	 */
	for (int i = 0; !err && i < c->nfam; i++)
		err = ex_sink__finish_one(&c->sink, i);
	if (!err)
		chrome_names(c, m);
	fputs("\n],\n", c->f);
	chrome_stack_frames(c, m);
	fputs("}\n", c->f);
	if (!err && (fflush(c->f) || ferror(c->f)))
		err = chrome_err(c);
	/* Before the stream closes: a .gz trailer's CRC covers the final header. */
	if (!err)
		err = chrome_header_keys(c);
	if (err > 0)
		err = chrome_put_header(c, 0);
	if (fclose(c->f) && !err)
		err = chrome_err(c);
	chrome_free(c);
	return err;
}

static void chrome__abort(void *st)
{
	struct chrome *c = st;

	if (!c)
		return;
	fclose(c->f);
	chrome_free(c);
}

const struct exporter export_chrome = {
	.format = "chrome",
	.desc = "Chrome trace JSON with Kineto's conventions (chrome://tracing, Perfetto, HTA)",
	.suffix = ".json",
	.open = chrome__open,
	.record = chrome__record,
	.finish = chrome__finish,
	.abort = chrome__abort,
	.per_rank = 1,
};
