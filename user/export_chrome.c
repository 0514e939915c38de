// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Chrome trace JSON with Kineto's conventions, so chrome://tracing, Perfetto's JSON importer
 * and Holistic Trace Analysis (HTA) open it like a torch.profiler trace: metadata keys before
 * "traceEvents", complete events ("ph":"X") and instants ("ph":"i") with ts/dur in
 * microseconds carrying the nanoseconds as three decimals, a "cat" per kind following Kineto's
 * names where Kineto has one, process/thread names as "ph":"M" events.
 *
 * GPU and NVTX events follow Kineto too (export_chrome_gpu.c: pid = device, tid = stream,
 * ac2g flows from launches). GIL waits and holds are "X" events of cat "gil", with a "GIL
 * contention" counter per python process (export_chrome_gil.c). Streamed: every event is
 * written as it comes; memory holds only the set of processes and threads seen (for their
 * name events at the end), the (device, stream) pairs, for NCCL traces a rank per process,
 * for GIL traces the contention bins (8 bytes per 10 ms per python process that waited), and
 * for traces of both gpu and nvtx every closed range and linked GPU operation: the one use
 * that grows with events, since Kineto's gpu_user_annotation needs them all (written last).
 * OUT ending in ".gz" is gzip-compressed on the fly.
 *
 * distributedInfo (Kineto's {"backend": "nccl", "rank": R, "world_size": W}) must come before
 * traceEvents (HTA reads the metadata by scanning the text up to them), but the NCCL calls
 * that tell the rank come later in the trace, and only the whole trace says whether exactly
 * one process has one. So the write is deferred: when the trace recorded nccl, the header
 * reserves CHROME_DIST_RESERVE bytes of blanks (valid JSON whitespace) where the key goes,
 * and finish() writes the key over them in place. The .gz output is one gzip member made by
 * hand so that this works there too: the header is stored uncompressed (stored deflate
 * blocks, at a known offset), the events follow as ordinary deflate blocks, and the trailer's
 * CRC-32 is combined from the header's final bytes and the events' (crc32_combine). A first
 * pass over FILE would read it twice, and the exporter is only given OUT.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "export_chrome.h"
#include "json.h"
#include "nccl.h"

#define CHROME_DIST_RESERVE 128 /* bytes kept for distributedInfo (it needs at most 87) */
#define CHROME_GZ_HDR_LEN   10
#define CHROME_STORED_MAX   65535 /* bytes of one stored deflate block */

static const struct chrome_kind chrome_kinds[] = {
	{ "syscall", "os_runtime", 'X' },
	{ "offcpu", "sched", 'X' },
	{ "fork", "process", 'i' },
	{ "exec", "process", 'i' },
	{ "exit", "process", 'i' },
	{ "comm", "process", 'i' },
	{ "process", "process", 'i' },
	{ "thread", "process", 'i' },
	{ "loss", "loss", 'i' },
	{ "cuda_api", "cuda_runtime", 'X' }, /* "cuda_driver" for cu* calls */
	/* Kineto has no host-side NCCL category (torch records its own ops as cpu_op; HTA reads
	 * collectives from the GPU's ncclDevKernel_* kernels): the calls get their own. */
	{ "nccl_api", "nccl", 'X' },
	/* The gpu and nvtx families' instants; their intervals are export_chrome_gpu.c's. */
	{ "nvtx_mark", "user_annotation", 'i' },
	{ "nvtx_name", "nvtx", 'i' },
	{ "shim_status", "shim", 'i' },
	/* Kineto has no GIL category (torch.profiler does not see the GIL): the gil family's. */
	{ "gil_wait", "gil", 'X' },
	{ "gil_hold", "gil", 'X' },
	{ "gil_python", "gil", 'i' },
	{ NULL },
};

/* The rank a process showed in its largest NCCL communicator (its world, in torch terms). */
struct chrome_rank {
	__s32 rank;
	__s32 nranks; /* -1 = unknown (only ncclCommUserRank was seen) */
	__u32 have;
	__u32 ambiguous; /* two communicators of that size gave different ranks */
};

static int write_all(int fd, const void *buf, size_t n, int *errp)
{
	const char *p = buf;
	ssize_t w;

	while (n) {
		w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			*errp = w < 0 ? errno : EIO;
			return -1;
		}
		p += w;
		n -= w;
	}
	return 0;
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
	o->fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
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

/* Did the recording ask for FAMILY ("proc,cuda,nccl")? */
static int has_family(const char *families, const char *family)
{
	size_t n = strlen(family);

	for (const char *p = families; p && *p; p += strcspn(p, ",") + !!p[strcspn(p, ",")])
		if (strcspn(p, ",") == n && !strncmp(p, family, n))
			return 1;
	return 0;
}

/*
 * The header, "{" up to "traceEvents":[, into c->hdr. When nccl was recorded, distributedInfo
 * gets CHROME_DIST_RESERVE blanks at c->dist_off, filled in by chrome_distributed_info.
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
	c->dist_off = -1;
	if (has_family(meta->families, "nccl")) {
		fflush(m);
		c->dist_off = ftell(m);
		fprintf(m, "%*s", CHROME_DIST_RESERVE, "");
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
 * A communicator an NCCL call used, as the nccl walk knows it now (the init that made it, or
 * ncclCommUserRank/ncclCommCount): the rank of the call's process, kept from its largest
 * communicator. A failed init's rank argument is only a request and never counts.
 */
static int chrome_note_rank(struct chrome *c, const struct event *ev, const struct trace_model *m)
{
	const struct nccl_walk *w = trace_model__walk(m, &family_nccl);
	const struct nccl_comm *cm = NULL;
	struct chrome_rank *r;

	for (__u32 i = 0; i < ev->nargs && i < EVENT_MAX_ARGS; i++)
		if (ev->args[i].kind == EVENT_ARG_HEX && !strcmp(ev->args[i].key, "comm"))
			cm = nccl_walk__comm(w, ev->pid, ev->args[i].u);
	if (!cm || cm->rank < 0)
		return 0;
	r = hmap__get(c->ranks, (struct hkey){ ev->pid, 0 }, 1);
	if (!r)
		return -ENOMEM;
	if (!r->have || cm->nranks > r->nranks) {
		*r = (struct chrome_rank){ cm->rank, cm->nranks, 1, 0 };
	} else if (cm->nranks == r->nranks && cm->rank != r->rank) {
		r->ambiguous = 1;
	}
	return 0;
}

/*
 * Kineto's distributedInfo, written over the blanks the header kept: only when exactly one
 * process of the trace has a known rank, and one rank in its largest communicator. Kineto's
 * spacing ("rank": R), which tools matching the text expect.
 */
static void chrome_distributed_info(struct chrome *c)
{
	const struct chrome_rank *r, *one = NULL;
	char buf[CHROME_DIST_RESERVE + 1];
	size_t it = 0, n = 0;
	int len;

	if (c->dist_off < 0)
		return;
	while ((r = hmap__next(c->ranks, &it, NULL))) {
		one = r;
		n++;
	}
	if (n != 1 || one->ambiguous)
		return;
	if (one->nranks >= 0)
		len = snprintf(buf, sizeof(buf),
			       ",\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %d, "
			       "\"world_size\": %d}",
			       one->rank, one->nranks);
	else
		len = snprintf(buf, sizeof(buf),
			       ",\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %d}",
			       one->rank);
	if (len > 0 && len <= CHROME_DIST_RESERVE)
		memcpy(c->hdr + c->dist_off, buf, len);
}

static void chrome_free(struct chrome *c)
{
	hmap__free(c->threads);
	hmap__free(c->procs);
	hmap__free(c->ranks);
	hmap__free(c->gpu_streams);
	nvtx_proj__free(c->proj);
	gil_contention__free(c->gil);
	if (c->scratch)
		fclose(c->scratch);
	free(c->scratch_buf);
	free(c->hdr);
	free(c);
}

static void *chrome__open(const char *out, const struct trace_meta *meta, int *err)
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
	c->ranks = hmap__new(sizeof(struct chrome_rank));
	c->gpu_streams = hmap__new(1);
	c->gil = gil_contention__new(CHROME_GIL_BIN_NS);
	/* Only traces that can project ranges onto the GPU hold them until the end. */
	if (has_family(meta->families, "gpu") && has_family(meta->families, "nvtx") &&
	    !(c->proj = nvtx_proj__new())) {
		*err = -ENOMEM;
		goto err_free;
	}
	c->start_mono = meta->start.mono_ns;
	c->scratch = open_memstream(&c->scratch_buf, &c->scratch_size);
	if (!c->threads || !c->procs || !c->ranks || !c->gpu_streams || !c->gil || !c->scratch) {
		*err = -ENOMEM;
		goto err_free;
	}
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

static const struct chrome_kind *chrome_kind_of(struct chrome *c, const char *kind)
{
	const struct chrome_kind *k;

	if (c->last && c->last->kind == kind)
		return c->last;
	for (k = chrome_kinds; k->kind; k++) {
		if (!strcmp(k->kind, kind)) {
			c->last = k;
			return k;
		}
	}
	return NULL;
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
	int dims, nonempty;
	__u64 d[6];
	struct json j;

	dims = chrome_dims(ev, d);
	if (!dims && !flow) {
		fputs(",\"args\":", c->f);
		json__init(&j, c->f, 0);
		event__json_args(ev, &j);
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
	if (flow)
		fprintf(c->f, "%s\"correlation\":%llu", nonempty ? "," : "",
			(unsigned long long)flow);
	fputc('}', c->f);
	return 0;
}

/* Kineto's category of a CUDA call: the driver API is cu*, the runtime cuda* and __cuda*. */
static const char *chrome_cuda_cat(const char *name)
{
	return name && !strncmp(name, "cu", 2) && strncmp(name, "cuda", 4) ? "cuda_driver"
									   : "cuda_runtime";
}

/* A cumulative counter per cause beside each loss instant: the UI draws loss over time. */
static void chrome_loss_counter(struct chrome *c, const struct bs_hdr *rec, const struct event *ev)
{
	const struct bs_loss *l = (const void *)rec;
	__u32 slot;

	if (rec->size < sizeof(*l))
		return;
	slot = l->cause < BS_LOSS_NR ? l->cause : BS_LOSS_NR;
	c->lost[slot] += l->count;
	chrome_begin(c, 'C', "loss", "events lost", ev->pid, ev->tid);
	fputs(",\"ts\":", c->f);
	chrome_us(c->f, ev->ts);
	fputs(",\"args\":{", c->f);
	chrome_str(c->f, ev->name);
	fprintf(c->f, ":%llu}}", (unsigned long long)c->lost[slot]);
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

static int chrome__record(void *st, const struct bs_hdr *rec, const struct event *ev,
			  const struct trace_model *m)
{
	const struct chrome_kind *k;
	struct chrome *c = st;
	__u64 flow = 0;
	const char *cat;
	char ph;
	int err;

	err = chrome_seen(c, rec->pid, rec->tid);
	if (!err)
		err = chrome_gil__record(c, rec);
	if (err)
		return err;
	if (!ev)
		return 0;
	err = chrome_gpu__record(c, rec, ev, m);
	if (err)
		return err < 0 ? err : ferror(c->f) ? chrome_err(c) : 0;
	k = chrome_kind_of(c, ev->kind);
	cat = k ? k->cat : ev->kind;
	ph = k ? k->ph : ev->dur ? 'X' : 'i';
	if (rec->type == BS_REC_CUDA_CALL) {
		cat = chrome_cuda_cat(ev->name);
		flow = chrome_gpu__launch_flow(rec);
	}
	if (rec->type == BS_REC_NCCL_CALL && c->dist_off >= 0) {
		err = chrome_note_rank(c, ev, m);
		if (err)
			return err;
	}

	chrome_begin(c, ph, cat, ev->name ? ev->name : ev->kind, ev->pid, ev->tid);
	fputs(",\"ts\":", c->f);
	chrome_us(c->f, ev->ts);
	if (ph == 'X') {
		fputs(",\"dur\":", c->f);
		chrome_us(c->f, ev->dur);
	} else {
		fputs(",\"s\":\"t\"", c->f);
	}
	err = chrome_args(c, ev, flow);
	if (err)
		return err;
	fputc('}', c->f);
	if (flow)
		chrome_gpu__flow(c, 's', flow, ev->pid, ev->tid, ev->ts);
	if (rec->type == BS_REC_LOSS)
		chrome_loss_counter(c, rec, ev);
	return ferror(c->f) ? chrome_err(c) : 0;
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
	chrome_gpu__names(c);
}

static int chrome__finish(void *st, const struct trace_model *m, const struct trace_status *status)
{
	struct chrome *c = st;
	int err = 0;

	chrome_gil__counters(c);
	err = chrome_gpu__annotations(c);
	if (!err)
		chrome_names(c, m);
	fputs("\n]}\n", c->f);
	if (!err && (fflush(c->f) || ferror(c->f)))
		err = chrome_err(c);
	/* Before the stream closes: a .gz trailer's CRC covers the final header. */
	if (!err && c->dist_off >= 0) {
		chrome_distributed_info(c);
		err = chrome_put_header(c, 0);
	}
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
	.open = chrome__open,
	.record = chrome__record,
	.finish = chrome__finish,
	.abort = chrome__abort,
};
