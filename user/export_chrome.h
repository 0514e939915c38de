/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Inside the Chrome exporter: its state and the writers export_chrome.c (the format, the
 * host-side events), export_chrome_gpu.c (GPU and NVTX events, launch flows) and
 * export_chrome_gil.c (GIL contention counters) share.
 */
#ifndef BPFSIGHT_EXPORT_CHROME_H
#define BPFSIGHT_EXPORT_CHROME_H

#include <stdio.h>
#include <zlib.h>
#include "export.h"
#include "gil_contention.h"
#include "nvtx_proj.h"
#include "stats_math.h"

/* gzip level: 1 keeps a 100 M-event export CPU-bound on JSON formatting, not on deflate. */
#define CHROME_GZ_LEVEL	  1
#define CHROME_BUF_SIZE	  (1 << 16)
#define CHROME_GIL_BIN_NS 10000000ull /* 10 ms, the Perfetto export's bins */

/*
 * How each kind of event is drawn (chrome_kinds[] in export_chrome.c). A family that lands adds
 * its kinds there with Kineto's category where Kineto has one. A kind missing there still
 * exports: its cat is its kind, drawn as X when it has a duration. cuda_api is "cuda_runtime"
 * or "cuda_driver" by name (chrome_cuda_cat); the gpu and nvtx kinds are drawn by
 * export_chrome_gpu.c (GPU events on pid = device, tid = stream; ac2g flows; NVTX ranges).
 */
struct chrome_kind {
	const char *kind; /* struct event.kind, as the decoders name it */
	const char *cat;
	char ph; /* 'X' complete, 'i' instant */
};

/*
 * stdio over OUT's descriptor, through deflate when asked, so the JSON writer streams either
 * way and a failed write keeps its errno (ENOSPC) for the message instead of stdio's bare flag.
 * The header is not part of this stream: it is written (and rewritten) by chrome_put_header.
 */
struct chrome_out {
	int fd;
	int gz;	       /* OUT is one gzip member: stored header, then zs's deflate blocks */
	int zs_live;   /* zs initialized */
	z_stream zs;   /* raw deflate (no wrapper: the gzip header and trailer are ours) */
	__u32 crc;     /* CRC-32 of the bytes deflated so far */
	__u64 len;     /* and their count */
	__u32 hdr_crc; /* CRC-32 of the header's text as last written */
	__u32 hdr_len;
	int err; /* positive errno of the first failed write or close */
	unsigned char zbuf[CHROME_BUF_SIZE];
};

struct chrome {
	FILE *f;
	struct chrome_out out; /* the stream's cookie */
	const char *path;
	char *hdr; /* the header's text, "{" to "traceEvents":[ */
	size_t hdr_len;
	long dist_off;		  /* where distributedInfo's blanks are in hdr; -1 = none */
	struct hmap *threads;	  /* {pid, tid} -> u8: every thread an event was drawn on */
	struct hmap *procs;	  /* {pid, 0} -> u8 */
	struct hmap *ranks;	  /* {pid, 0} -> struct chrome_rank (NCCL traces) */
	struct hmap *gpu_streams; /* {device, stream} -> u8: GPU "threads" drawn on */
	struct nvtx_proj *proj;	  /* NVTX ranges and GPU work (gpu and nvtx traces), or NULL */
	FILE *scratch;		  /* an event's args, when Kineto's keys are added */
	char *scratch_buf;
	size_t scratch_size;
	__u64 lost[BS_LOSS_NR + 1];	/* cumulative per cause, for the "events lost" counter */
	__u64 nevents;			/* objects written into traceEvents */
	struct gil_contention *gil;	/* GIL waiting time per python process and bin */
	__u64 start_mono, bins_origin;	/* recording start; start of the counters' bin 0 */
	char buf[CHROME_BUF_SIZE];	/* stdio's buffer (glibc ignores a size without one) */
	const struct chrome_kind *last; /* kinds come in runs: skip the lookup */
};

/* The common fields of every event object, opened and left open. */
void chrome_begin(struct chrome *c, char ph, const char *cat, const char *name, __u32 pid,
		  __u32 tid);
/* ns as microseconds with the ns fraction. */
void chrome_us(FILE *f, __u64 ns);
void chrome_str(FILE *f, const char *s);
/* The negative errno of the first failed write, once stdio says one failed. */
int chrome_err(const struct chrome *c);
/*
 * ,"args":{ and dump's args of EV, left open for the caller's keys: returns whether something
 * was written inside (a key needs a comma first), or a negative errno.
 */
int chrome_args_open(struct chrome *c, const struct event *ev);
void chrome_meta_event(struct chrome *c, const char *what, __u32 pid, __u32 tid, const char *name,
		       __u64 sort_index);

/* export_chrome_gpu.c */
/* Draw a gpu or nvtx family event: 1 when EV was one (written), 0 when not, or -errno. */
int chrome_gpu__record(struct chrome *c, const struct bs_hdr *rec, const struct event *ev,
		       const struct trace_model *m);
/* The gpu_user_annotation events (NVTX ranges on the GPU), once every record was seen. */
int chrome_gpu__annotations(struct chrome *c);
/* The flow id a cuda call starts when it can put work on the GPU, else 0. */
__u64 chrome_gpu__launch_flow(const struct bs_hdr *rec);
/* An ac2g flow event: 's' at a launch, 'f' (bound to the enclosing slice) at its GPU work. */
void chrome_gpu__flow(struct chrome *c, char ph, __u64 id, __u32 pid, __u32 tid, __u64 ts);
/* "GPU N" and "stream S" names of the GPU events' pid and tid. */
void chrome_gpu__names(struct chrome *c);

/* export_chrome_gil.c */
/* Count a GIL wait towards its process's contention counter (other records: nothing). */
int chrome_gil__record(struct chrome *c, const struct bs_hdr *rec);
/* The "GIL contention" counter events of every process that waited. */
void chrome_gil__counters(struct chrome *c);

#endif /* BPFSIGHT_EXPORT_CHROME_H */
