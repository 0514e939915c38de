// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Chrome trace JSON with Kineto's conventions, so chrome://tracing, Perfetto's JSON importer
 * and Holistic Trace Analysis (HTA) open it like a torch.profiler trace: metadata keys before
 * "traceEvents", complete events ("ph":"X") and instants ("ph":"i") with ts/dur in
 * microseconds carrying the nanoseconds as three decimals, a "cat" per kind following Kineto's
 * names where Kineto has one, process/thread names as "ph":"M" events.
 *
 * Streamed: every event is written as it comes; memory holds only the set of processes and
 * threads seen (for their name events at the end). OUT ending in ".gz" is gzip-compressed on
 * the fly.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "export.h"
#include "json.h"
#include "stats_math.h"

/* gzip level: 1 keeps a 100 M-event export CPU-bound on JSON formatting, not on deflate. */
#define CHROME_GZ_MODE	"wb1"
#define CHROME_BUF_SIZE (1 << 16)

/*
 * How each kind of event is drawn. A family that lands adds its kinds here with Kineto's
 * category: cuda -> "cuda_runtime" / "cuda_driver", gpu -> "kernel" / "gpu_memcpy" /
 * "gpu_memset" (pid = device, tid = stream), nvtx -> "user_annotation", gil -> "python_function".
 * Their "correlation" arg is written like any other arg; the "ac2g" flow events that tie a
 * launch to its kernel go next to the event in chrome__record. A kind missing here still
 * exports: its cat is its kind, drawn as X when it has a duration.
 */
struct chrome_kind {
	const char *kind; /* struct event.kind, as the decoders name it */
	const char *cat;
	char ph; /* 'X' complete, 'i' instant */
};

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
	{ NULL },
};

/*
 * stdio over OUT's descriptor, through gzip when asked, so the JSON writer streams either way
 * and a failed write keeps its errno (ENOSPC) for the message instead of stdio's bare flag.
 */
struct chrome_out {
	int fd;
	gzFile gz; /* NULL: plain */
	int err;   /* positive errno of the first failed write or close */
};

struct chrome {
	FILE *f;
	struct chrome_out out; /* the stream's cookie */
	const char *path;
	struct hmap *threads;		/* {pid, tid} -> u8: every thread an event was drawn on */
	struct hmap *procs;		/* {pid, 0} -> u8 */
	__u64 lost[BS_LOSS_NR + 1];	/* cumulative per cause, for the "events lost" counter */
	__u64 nevents;			/* objects written into traceEvents */
	char buf[CHROME_BUF_SIZE];	/* stdio's buffer (glibc ignores a size without one) */
	const struct chrome_kind *last; /* kinds come in runs: skip the lookup */
};

static ssize_t chrome_out_write(void *cookie, const char *buf, size_t n)
{
	struct chrome_out *o = cookie;
	unsigned int chunk;
	ssize_t w;
	int zerr;

	if (!n)
		return 0;
	if (o->gz) {
		chunk = n > (1u << 30) ? 1u << 30 : (unsigned int)n;
		w = gzwrite(o->gz, buf, chunk);
		if (w <= 0) {
			gzerror(o->gz, &zerr);
			o->err = zerr == Z_ERRNO && errno ? errno : EIO;
		}
	} else {
		/* glibc flags a short count from a cookie as an error: write it all. */
		size_t done = 0;

		w = 0;
		while (done < n) {
			w = write(o->fd, buf + done, n - done);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				o->err = w < 0 ? errno : EIO;
				break;
			}
			done += w;
		}
		if (done == n)
			return n;
	}
	if (w <= 0) {
		errno = o->err ? o->err : EIO;
		return -1;
	}
	return w;
}

static int chrome_out_close(void *cookie)
{
	struct chrome_out *o = cookie;
	int ret = o->gz ? (gzclose(o->gz) == Z_OK ? 0 : -1) : close(o->fd);

	if (ret && !o->err)
		o->err = o->gz || !errno ? EIO : errno;
	return ret ? -1 : 0;
}

static int has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/* OUT must be new: O_EXCL and O_NOFOLLOW so a planted symlink is never written through. */
static FILE *chrome_create(const char *out, struct chrome_out *o, int *err)
{
	static const cookie_io_functions_t io = {
		.write = chrome_out_write,
		.close = chrome_out_close,
	};
	FILE *f;

	o->fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (o->fd < 0) {
		*err = -errno;
		return NULL;
	}
	if (has_suffix(out, ".gz")) {
		o->gz = gzdopen(o->fd, CHROME_GZ_MODE);
		if (!o->gz) {
			*err = -ENOMEM;
			close(o->fd);
			return NULL;
		}
		gzbuffer(o->gz, CHROME_BUF_SIZE);
	}
	f = fopencookie(o, "w", io);
	if (!f) {
		*err = -errno;
		chrome_out_close(o);
	}
	return f;
}

/* The negative errno of the first failed write, once stdio says one failed. */
static int chrome_err(const struct chrome *c)
{
	return -(c->out.err ? c->out.err : EIO);
}

/* ns as microseconds with the ns fraction: exact, where a double would round late timestamps. */
static void chrome_us(FILE *f, __u64 ns)
{
	fprintf(f, "%llu.%03llu", (unsigned long long)(ns / 1000), (unsigned long long)(ns % 1000));
}

static void chrome_str(FILE *f, const char *s)
{
	json_write_string(f, s ? s : "", s ? strlen(s) : 0);
}

/*
 * distributedInfo must precede traceEvents (HTA reads the metadata by scanning up to them),
 * but the NCCL communicator init that knows the rank comes later in the trace. When the nccl
 * family lands, the rank has to reach open(): from a first pass over its init records, or a
 * header key the recorder writes. Nothing records it yet, so nothing is written.
 */
static void chrome_distributed_info(struct json *j, const struct trace_meta *meta)
{
}

static void chrome_header(struct chrome *c, const struct trace_meta *meta)
{
	struct json j;

	json__init(&j, c->f, 1);
	json__begin_object(&j);
	json__kv_u64(&j, "schemaVersion", 1);
	json__key(&j, "deviceProperties");
	json__begin_array(&j);
	json__end_array(&j);
	chrome_distributed_info(&j, meta);
	json__kv_str(&j, "traceName", c->path);
	json__kv_str(&j, "displayTimeUnit", "ns");
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
	fputc('[', c->f);
}

static void *chrome__open(const char *out, const struct trace_meta *meta, int *err)
{
	struct chrome *c = calloc(1, sizeof(*c));

	if (!c) {
		*err = -ENOMEM;
		return NULL;
	}
	c->path = out;
	c->threads = hmap__new(1);
	c->procs = hmap__new(1);
	if (!c->threads || !c->procs) {
		*err = -ENOMEM;
		goto err_free;
	}
	c->f = chrome_create(out, &c->out, err);
	if (!c->f)
		goto err_free;
	setvbuf(c->f, c->buf, _IOFBF, sizeof(c->buf));
	chrome_header(c, meta);
	if (fflush(c->f) || ferror(c->f)) {
		*err = chrome_err(c);
		fclose(c->f);
		goto err_free;
	}
	return c;

err_free:
	hmap__free(c->threads);
	hmap__free(c->procs);
	free(c);
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
static void chrome_begin(struct chrome *c, char ph, const char *cat, const char *name, __u32 pid,
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

static void chrome_args(FILE *f, const struct event *ev)
{
	struct json j;

	fputs(",\"args\":", f);
	json__init(&j, f, 0);
	event__json_args(ev, &j);
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
	const char *cat;
	char ph;
	int err;

	err = chrome_seen(c, rec->pid, rec->tid);
	if (err)
		return err;
	if (!ev)
		return 0;
	k = chrome_kind_of(c, ev->kind);
	cat = k ? k->cat : ev->kind;
	ph = k ? k->ph : ev->dur ? 'X' : 'i';

	chrome_begin(c, ph, cat, ev->name ? ev->name : ev->kind, ev->pid, ev->tid);
	fputs(",\"ts\":", c->f);
	chrome_us(c->f, ev->ts);
	if (ph == 'X') {
		fputs(",\"dur\":", c->f);
		chrome_us(c->f, ev->dur);
	} else {
		fputs(",\"s\":\"t\"", c->f);
	}
	chrome_args(c->f, ev);
	fputc('}', c->f);
	if (rec->type == BS_REC_LOSS)
		chrome_loss_counter(c, rec, ev);
	return ferror(c->f) ? chrome_err(c) : 0;
}

static void chrome_meta_event(struct chrome *c, const char *what, __u32 pid, __u32 tid,
			      const char *name, __u64 sort_index)
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
}

static void chrome_free(struct chrome *c)
{
	hmap__free(c->threads);
	hmap__free(c->procs);
	free(c);
}

static int chrome__finish(void *st, const struct trace_model *m, const struct trace_status *status)
{
	struct chrome *c = st;
	int err = 0;

	chrome_names(c, m);
	fputs("\n]}\n", c->f);
	if (fflush(c->f) || ferror(c->f))
		err = chrome_err(c);
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
