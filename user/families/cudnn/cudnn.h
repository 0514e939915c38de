/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * cudnn family: cuDNN 9's API calls (every function libcudnn.so.9 exports that returns a
 * cudnnStatus_t, wherever it is mapped: the dispatcher libcudnn and the sub-libraries
 * libcudnn_graph/_ops/_cnn/_adv that define them again), with duration and status, and what a
 * cudnnBackendExecute ran: its plan's operation graph, read from the backend descriptors it
 * was built from. Record side in cudnn.c, the API table in cudnn_api.c, the decoder and the
 * descriptor walk in cudnn_decode.c. docs/BLAS.md for users.
 */
#ifndef BPFSIGHT_CUDNN_H
#define BPFSIGHT_CUDNN_H

#include "family.h"
#include "cudnn_records.h"
#include "hmap.h"
#include "ucall_api.h"

/* ucall_api.group of a cudnn API. */
enum cudnn_group {
	CUDNN_GRP_OTHER = 0, /* descriptors, queries */
	CUDNN_GRP_HANDLE,    /* cudnnCreate, cudnnDestroy, streams */
	CUDNN_GRP_CALL,	     /* a legacy function given a handle: runs or plans work */
	CUDNN_GRP_BACKEND,   /* the backend (graph) API's descriptors */
	CUDNN_GRP_EXECUTE,   /* cudnnBackendExecute */
};

/* ucall_api.flags of a cudnn API: what the walk learns from it. */
#define CUDNN_F_SET_STREAM 0x0001
#define CUDNN_F_CREATE	   0x0002 /* cudnnBackendCreateDescriptor: type *desc */
#define CUDNN_F_DESTROY	   0x0004
#define CUDNN_F_SET_ATTR   0x0008 /* cudnnBackendSetAttribute: desc attr atype count &elems */
#define CUDNN_F_EXECUTE	   0x0010 /* handle plan pack */
#define CUDNN_F_SET_SHAPE  0x0020 /* a legacy 4-d tensor or filter, a convolution's groups */
#define CUDNN_F_CONV	   0x0040 /* a legacy convolution: xdesc wdesc ydesc conv */
#define CUDNN_F_GET_ATTR   0x0080 /* cudnnBackendGetAttribute: desc attr atype */
#define CUDNN_F_FINALIZE   0x0100 /* cudnnBackendFinalize: desc */

#define CUDNN_STATUS_SUCCESS 0

/* The keys of cudnn specs (cudnn_keys, cudnn_api.c). */
enum cudnn_key {
	CUDNN_K_HANDLE,
	CUDNN_K_STREAM,
	CUDNN_K_TYPE,
	CUDNN_K_DESC,
	CUDNN_K_ATTR,
	CUDNN_K_ATYPE,
	CUDNN_K_COUNT,
	CUDNN_K_ELEMS,
	CUDNN_K_PLAN,
	CUDNN_K_PACK,
	CUDNN_K_XDESC,
	CUDNN_K_WDESC,
	CUDNN_K_YDESC,
	CUDNN_K_CONV,
	CUDNN_K_ALGO,
	CUDNN_K_BYTES,
	CUDNN_K_DTYPE,
	CUDNN_K_FORMAT,
	CUDNN_K_N,
	CUDNN_K_C,
	CUDNN_K_H,
	CUDNN_K_W,
	CUDNN_K_GROUPS,
	CUDNN_K_NR
};

extern const struct ucall_key cudnn_keys[CUDNN_K_NR];
extern const struct ucall_table cudnn_table; /* cudnn_api.c */
extern const struct rec_decoder cudnn_decoders[];
extern const struct family_export cudnn_export;	   /* cudnn_export.c */
extern const struct report *const cudnn_reports[]; /* cudnn_report.c */
struct report;
extern const struct family family_cudnn; /* cudnn.c */

/* One call, its spec applied to its record. */
struct cudnn_call {
	const struct bs_ucall *r;
	const struct ucall_api *api; /* NULL: a function of a newer table */
	__s32 ret;		     /* cudnnStatus_t */
	__u64 have;		     /* 1ull << CUDNN_K_* */
	__u64 v[CUDNN_K_NR];
	const __u8 *elems; /* the copy of a SetAttribute's elements, NULL: none */
	__u32 elems_len;
};

void cudnn_call__parse(const struct bs_hdr *rec, struct cudnn_call *c);

#define CUDNN_GRAPH_OPS 8

/* A legacy convolution's shapes, as the walk read them from its descriptors. */
struct cudnn_conv {
	__s32 x[4], w[4], y[4]; /* n c h w; the filter's k c r s */
	__s32 groups;
	__u64 flops; /* 2 numel(y) numel(w) / k; 0: a shape unknown */
};

/* What a cudnnBackendExecute ran, as the walk read it from its plan's descriptors. */
struct cudnn_exec {
	__u32 nops;			 /* 0: the graph was not seen */
	__s32 op_types[CUDNN_GRAPH_OPS]; /* cudnnBackendDescriptorType_t, -1 unknown */
	__u64 batch, m, n, k; /* its first matmul's, when its tensors' dimensions were seen */
	__u64 flops;	      /* its matmuls' and convolutions' whose tensors were seen */
};

/*
 * Backend descriptors per process, as their Create, SetAttribute and Destroy calls made them;
 * a process's go when it exits or execs (its addresses may be another's later).
 */
struct cudnn_walk {
	struct hmap *procs; /* {pid, 0} -> struct hmap *: {desc, 0} -> struct cudnn_desc */
	int err;
	int have_last;
	__u64 last_ts;
	__u32 last_pid, last_tid;
	struct cudnn_exec last;	     /* the record observed last, when an execute */
	struct cudnn_conv last_conv; /* ... when a legacy convolution */
	int last_is_conv;
};

/* The family's walk hooks (struct family.walk_*), over a struct cudnn_walk. */
void *cudnn_walk__new(void);
void cudnn_walk__free(void *w);
void cudnn_walk__observe(void *w, const struct bs_hdr *rec);
/* How many descriptors the walk keeps, of every process. */
size_t cudnn_walk__count(const struct cudnn_walk *w);
/* What REC (an execute the walk observed last) ran: 1 and *E, else 0. */
int cudnn__exec(const struct cudnn_walk *w, const struct bs_hdr *rec, struct cudnn_exec *e);
/* REC's shapes (a legacy convolution the walk observed last): 1 and *C, else 0. */
int cudnn__conv(const struct cudnn_walk *w, const struct bs_hdr *rec, struct cudnn_conv *c);

/* Names: cudnnStatus_t, and a backend descriptor type without its CUDNN_BACKEND_ and
 * _DESCRIPTOR ("OPERATION_MATMUL"); NULL when unknown. */
const char *cudnn__status_name(__s32 s);
const char *cudnn__desc_type_name(__s32 t);

struct family_ledger;
extern const struct family_ledger cudnn_ledger; /* cudnn_ledger.c: the ledger's feed */
#endif						/* BPFSIGHT_CUDNN_H */
