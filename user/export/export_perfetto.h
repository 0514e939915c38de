/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Inside the Perfetto exporter: its state, the protobuf field numbers, the packet writers
 * export_perfetto.c (the format, the tracks of threads and kinds) shares with
 * export_perfetto_model.c (the export model's items, in bpfsight's own view) and
 * export_perfetto_stack.c (stacks).
 */
#ifndef BPFSIGHT_EXPORT_PERFETTO_H
#define BPFSIGHT_EXPORT_PERFETTO_H

#include <zlib.h>
#include "export.h"
#include "export_model.h"
#include "family.h"
#include "pb.h"
#include "hmap.h"
#include "string_pool.h"

/* Field numbers, from perfetto_trace.proto. */
#define TRACE_PACKET 1

#define PKT_TIMESTAMP		    8
#define PKT_CLOCK_SNAPSHOT	    6
#define PKT_SEQ_ID		    10 /* trusted_packet_sequence_id */
#define PKT_TRACK_EVENT		    11
#define PKT_INTERNED_DATA	    12
#define PKT_SEQUENCE_FLAGS	    13
#define PKT_DEFAULTS		    59 /* trace_packet_defaults */
#define PKT_TRACK_DESCRIPTOR	    60
#define DEFAULTS_TIMESTAMP_CLOCK_ID 58

#define SEQ_INCREMENTAL_STATE_CLEARED 1
#define SEQ_NEEDS_INCREMENTAL_STATE   2

#define CLOCKS_CLOCK		1
#define CLOCKS_PRIMARY_CLOCK	2
#define CLOCK_ID		1
#define CLOCK_TIMESTAMP		2
#define BUILTIN_CLOCK_REALTIME	1
#define BUILTIN_CLOCK_MONOTONIC 3
#define BUILTIN_CLOCK_BOOTTIME	6

#define TD_UUID		1
#define TD_NAME		2
#define TD_PROCESS	3
#define TD_THREAD	4
#define TD_PARENT_UUID	5
#define TD_COUNTER	8
#define TD_DESCRIPTION	14
#define PD_PID		1
#define PD_CMDLINE	2
#define PD_PROCESS_NAME 6
#define THD_PID		1
#define THD_TID		2
#define THD_THREAD_NAME 5
#define CD_UNIT		3
#define CD_UNIT_COUNT	2
#define CD_UNIT_BYTES	3 /* UNIT_SIZE_BYTES */

#define TE_CATEGORY_IIDS     3
#define TE_DEBUG_ANNOTATIONS 4
#define TE_TYPE		     9
#define TE_NAME_IID	     10
#define TE_TRACK_UUID	     11
#define TE_COUNTER_VALUE     30
#define TE_DOUBLE_COUNTER    44
#define TE_FLOW_IDS	     47
#define TE_TERMINATING_FLOWS 48
#define TE_CALLSTACK_IID     56
#define TE_TYPE_SLICE_BEGIN  1
#define TE_TYPE_SLICE_END    2
#define TE_TYPE_INSTANT	     3
#define TE_TYPE_COUNTER	     4

#define DA_NAME_IID	 1
#define DA_BOOL_VALUE	 2
#define DA_UINT_VALUE	 3
#define DA_INT_VALUE	 4
#define DA_STRING_VALUE	 6
#define DA_STRING_IID	 17
#define DA_DOUBLE_VALUE	 5
#define DA_POINTER_VALUE 7
#define DA_ARRAY_VALUES	 12

#define ID_EVENT_CATEGORIES	  1
#define ID_EVENT_NAMES		  2
#define ID_DEBUG_ANNOTATION_NAMES 3
#define INTERNED_IID		  1
#define INTERNED_NAME		  2

/* One writer, one sequence: any non-zero id does. */
#define PF_SEQ_ID 1
/* Write out once this much is buffered. */
#define PF_FLUSH_BYTES (256 * 1024)
#define PF_MAX_KINDS   256

struct pf_kind {
	const char *kind; /* the decoder's string: stable for the whole export */
	const struct export_style *style;
};

struct pf_proc {
	__u64 uuid;
	const char *name; /* model strings as last described: interned, so compared by address */
	const char *cmdline;
};

struct pf_thread {
	__u64 uuid;
	const char *name;
};

struct pf_intern {
	__u32 field; /* InternedData field */
	__u32 iid;
	const char *str;
};

struct pf {
	struct ex_sink sink; /* first: the model's calls come with it (EX_OWN) */
	int fd;
	gzFile gz;
	struct pb pb;
	struct string_pool *names, *cats, *keys;
	struct hmap *procs;    /* {pid} -> pf_proc */
	struct hmap *threads;  /* {pid << 32 | tid} -> pf_thread */
	struct hmap *children; /* {pid << 32 | tid, kind index + 1} -> track uuid */
	struct pf_kind kinds[PF_MAX_KINDS];
	__u32 nkinds;
	__u64 next_uuid;
	__u64 start_mono;
	int nfam;
	/* The model's tracks (export_perfetto_model.c): named ones of a thread or process, GPUs,
	 * their streams, devices, counters by track and name (CTR_NAMES: the names' ids). */
	struct hmap *subs, *sub_lanes, *gpus, *gpu_lanes, *devices, *ctrs;
	struct string_pool *ctr_names;
	const struct trace_model *model; /* the record's being written */
	/* Interned stacks (export_perfetto_stack.c): functions, path parts, mappings, source
	 * files, {frame} -> frame iid, {stack id, kernel} -> callstack iid. */
	struct string_pool *funcs, *paths, *maps, *srcs, *annos;
	struct hmap *frames, *stacks;
	/* Interned strings first used by the packet being written. */
	struct pf_intern fresh[EVENT_MAX_ARGS + 2];
	__u32 nfresh;
};

void pf__packet_begin(struct pf *pf, __u64 ts, __u32 flags);
/* Close a packet; write the buffer out once it is big enough. */
int pf__packet_end(struct pf *pf);
/* The track of process PID, described the first time (and when renamed). */
int pf__process_track(struct pf *pf, __u32 pid, __u64 ts, const struct trace_model *m, __u64 *uuid);
/* The process and thread tracks of EV; the thread's uuid in *UUID. */
int pf__thread_track(struct pf *pf, const struct event *ev, const struct trace_model *m,
		     __u64 *uuid);
/* The same for thread TID of PID, described at TS the first time. */
int pf__thread_track_at(struct pf *pf, __u32 pid, __u32 tid, __u64 ts, const struct trace_model *m,
			__u64 *uuid);
/* EV of REC drawn by its kind's style: a sample, or a slice or instant on its thread's or kind's. */
int pf__draw(struct pf *pf, const struct bs_hdr *rec, const struct event *ev,
	     const struct trace_model *m);
/* The flows REC starts and ends, as the families tie them (a launch to its GPU work). */
void pf__flows(struct pf *pf, const struct bs_hdr *rec, __u64 *out, __u64 *in);

/* The model's items (export_perfetto_model.c): the sink's calls, its state made and freed. */
extern const struct ex_sink_ops pf_sink_ops;
int pf_model__init(struct pf *pf);
void pf_model__free(struct pf *pf);
/* A named track UUID under PARENT (0: root), with an optional description. */
int pf__describe_named(struct pf *pf, __u64 ts, __u64 uuid, __u64 parent, const char *name,
		       const char *desc);
/*
 * A BEGIN (dur > 0) or INSTANT packet with EV's name, kind and arguments, on TRACK; FLOW_OUT
 * (flow_ids) and FLOW_IN (terminating_flow_ids) tie it to other events, 0 = none.
 */
int pf__event_start(struct pf *pf, const struct event *ev, __u64 track, __u64 flow_out,
		    __u64 flow_in);
int pf__event_end(struct pf *pf, __u64 ts, __u64 track);
/*
 * A counter track UUID named NAME under PARENT (0: a root track), with a description and a
 * unit (CD_UNIT_*, 0: none), for the values pf__counter writes on it.
 */
int pf__describe_counter(struct pf *pf, __u64 ts, __u64 uuid, __u64 parent, const char *name,
			 const char *desc, __u32 unit);
/* A counter's value: V, or *D when D is given (double_counter_value). */
int pf__counter(struct pf *pf, __u64 ts, __u64 track, __s64 v, const double *d);
/* Stacks (export_perfetto_stack.c): their state in PF, made and freed with it. */
int pf_stacks__init(struct pf *pf);
void pf_stacks__free(struct pf *pf);
/*
 * The callstack iid of S (NULL: none) ending in a "[kernel]" leaf when KERNEL, 0 when neither;
 * a new one is written first, as a packet of interned data at TS.
 */
int pf__callstack(struct pf *pf, const struct trace_stack *s, int kernel, __u64 ts,
		  const struct trace_model *m, __u64 *iid);
/*
 * The frames of S as interned annotation strings ("FILE(LINE): FUNC", a truncated stack's
 * marker last) into IIDS (nframes + 1 entries); new ones written first, as a packet at TS.
 */
int pf__stack_strings(struct pf *pf, const struct trace_stack *s, __u64 ts,
		      const struct trace_model *m, __u64 *iids);
/* EV, a sample of its thread's stack (export_style.sample), as a PerfSample packet. */
int pf__sample(struct pf *pf, const struct bs_hdr *rec, const struct event *ev,
	       const struct trace_model *m);

#define PF_MAX_LANES 32

/*
 * Sibling tracks of one name (Perfetto shows them as one track) for slices that may overlap
 * (concurrent GPU work, NVTX start/end ranges): slices of one track must nest.
 */
struct pf_lanes {
	__u64 uuid[PF_MAX_LANES];
	__u64 end[PF_MAX_LANES]; /* the latest end of a slice on the lane */
	__u32 n;
};

/*
 * The lane of a slice [START, END) in L: the first whose slices all end by START, a new one
 * (described as NAME under PARENT) when none does, the last one past PF_MAX_LANES (where a
 * slice may be drawn misnested).
 */
int pf__lanes_pick(struct pf *pf, struct pf_lanes *l, __u64 start, __u64 end, __u64 parent,
		   const char *name, const char *desc, __u64 *uuid);

#endif /* BPFSIGHT_EXPORT_PERFETTO_H */
