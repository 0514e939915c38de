/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Inside the Chrome exporter: its state and the writers export_chrome.c (the format, every
 * event drawn by its kind's style) shares with export_chrome_model.c (the export model's
 * items, in the PyTorch profiler's view) and export_chrome_stack.c (stacks).
 */
#ifndef BPFSIGHT_EXPORT_CHROME_H
#define BPFSIGHT_EXPORT_CHROME_H

#include <stdio.h>
#include <zlib.h>
#include "export.h"
#include "export_model.h"
#include "hmap.h"

/* gzip level: 1 keeps a 100 M-event export CPU-bound on JSON formatting, not on deflate. */
#define CHROME_GZ_LEVEL 1
#define CHROME_BUF_SIZE (1 << 16)

struct chrome;

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
	struct ex_sink sink; /* first: the model's calls come with it (EX_PROFILER) */
	FILE *f;
	struct chrome_out out; /* the stream's cookie */
	const char *path;
	char *hdr; /* the header's text, "{" to "traceEvents":[ */
	size_t hdr_len;
	long *hdr_off;	      /* per family: where its header key's blanks are in hdr; -1 = none */
	struct hmap *threads; /* {pid, tid} -> u8: every thread an event was drawn on */
	struct hmap *procs;   /* {pid, 0} -> u8 */
	FILE *scratch;	      /* an event's args, when Kineto's keys are added */
	char *scratch_buf;
	size_t scratch_size;
	__u64 nevents;	  /* objects written into traceEvents */
	__u64 start_mono; /* recording start (0: unknown) */
	int nfam;
	struct hmap *streams; /* {device, stream} -> u8: the GPU "threads" drawn on */
	__u64 devices[4];     /* bit per GPU (< 256) drawn on as a process (EX_DEVICE) */
	/* The rank a family said (ex_rank), for Kineto's distributedInfo. */
	const char *backend;
	__s32 rank, nranks;
	struct chrome_stacks *stacks;	 /* export_chrome_stack.c */
	const struct trace_model *model; /* the record's being drawn */
	/* Records come in runs of one type: skip the decoder's lookup. */
	const struct rec_decoder *last;
	int last_fam;
	char buf[CHROME_BUF_SIZE]; /* stdio's buffer (glibc ignores a size without one) */
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

/*
 * Draw EV by its kind's style: its category CAT (NULL: the style's), dump's args, Kineto's
 * grid/block, and the flow a family starts from it (struct family_export.flows).
 */
int chrome_event(struct chrome *c, const struct bs_hdr *rec, const struct event *ev,
		 const char *cat);
/* A complete event ("ph":"X"), left open for its args. */
void chrome_complete(struct chrome *c, const char *cat, const char *name, __u32 pid, __u32 tid,
		     __u64 ts, __u64 dur);
/* ,"args": and dump's args of EV, closed. */
void chrome_plain_args(struct chrome *c, const struct event *ev);
/* Note thread TID of PID as drawn on (its name events at the end). */
int chrome_thread(struct chrome *c, __u32 pid, __u32 tid);
/* The first family's external_id for a launch at TS on (PID, TID); 0 when none knows one. */
__u64 chrome_external_id(struct chrome *c, __u32 pid, __u32 tid, __u64 ts);
/* An ac2g flow event: 's' at a launch, 'f' (bound to the enclosing slice) at its GPU work. */
void chrome_flow(struct chrome *c, char ph, __u64 id, __u32 pid, __u32 tid, __u64 ts);

/*
 * The model's items (export_chrome_model.c): the sink's calls, the flows of a record (OUT, IN:
 * either may be NULL), Kineto's distributedInfo of the rank a family said into BUF (SPACE + 1
 * bytes): its length, 0 for none.
 */
#define CHROME_DIST_RESERVE 128 /* bytes kept for distributedInfo (it needs at most 87) */
extern const struct ex_sink_ops chrome_sink_ops;
void chrome_ex_flows(struct chrome *c, const struct bs_hdr *rec, __u64 *out, __u64 *in);
int chrome_rank_key(struct chrome *c, char *buf, size_t space);
/* Kineto's names of the GPUs drawn on, after the threads'. */
void chrome_gpu_names(struct chrome *c);

/* Stacks (export_chrome_stack.c): their state in C, made and freed with it. */
int chrome_stacks__new(struct chrome *c);
void chrome_stacks__free(struct chrome *c);
/*
 * EV's "Call stack" (and a GIL wait's "Holder call stack") into its open args object, after a
 * comma when NONEMPTY. 0 or a negative errno.
 */
int chrome_stack_args(struct chrome *c, const struct event *ev, const struct trace_model *m,
		      int nonempty);
/* The "stackFrames" node of a sample's stack into *SF (0: it has none). 0 or -ENOMEM. */
int chrome_sample_frame(struct chrome *c, const struct event *ev, __u64 *sf);
/* "stackFrames":{...}, every node the samples made. */
void chrome_stack_frames(struct chrome *c, const struct trace_model *m);

#endif /* BPFSIGHT_EXPORT_CHROME_H */
