// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The nccl family's API table: which libnccl functions are probed, and for each its argument
 * spec (args): what the BPF side captures and how the decoder reads the arguments. An entry's
 * index is bs_ucall.fn in trace files: APPEND ONLY, never reorder or remove.
 *
 * Symbols are the ncclX ones libnccl exports (nm -D, NCCL 2.28). NCCL also exports a pncclX
 * profiling alias of each at the same address, so probing ncclX sees calls made through
 * either name; an interposing profiler's own ncclX is a different function and is probed
 * wherever it is mapped, like any other. ncclBcast calls ncclBroadcast through the PLT: that
 * broadcast is recorded too, at depth 1 (reports count depth 0 only). Functions a library
 * does not define (older NCCL has no ncclAlltoAll/Gather/Scatter, ncclCommShrink or
 * ncclCommInitRankScalable) are simply not probed there.
 *
 * args: the argument spec (the grammar is ucall_spec.h's, shared with cuda), in nccl_keys:
 *   sendbuff recvbuff buff count datatype op root peer comm stream rank nranks ndev devlist
 *   color key config exclude nexclude nid flags size handle device newcomm unique_id comms.
 *   Integer keys (datatype op root peer rank nranks ndev color key nexclude nid flags device)
 *   are C ints, type s32: only the low 32 bits of their word are defined. unique_id and
 *   comms are type mem, the copy: a ncclUniqueId (by pointer, &unique_id, or by value,
 *   unique_id!16: 128 bytes of memory class, 16 stack words and no register, so the rank of
 *   ncclCommInitRank is still in rdx) and ncclCommInitAll's comms[ndev] (the first 24).
 *   count is the element count the function takes (ncclAllGather's sendcount,
 *   ncclReduceScatter's recvcount, per peer for ncclAlltoAll); bytes = count x type size.
 *   An out value (*comm) or a written copy (&*unique_id) is shown only when the call
 *   succeeded: ncclSuccess, or ncclInProgress for a nonblocking communicator.
 * torch.distributed's gloo backend has no NCCL in it: its collectives are seen through
 * c10d::ProcessGroupGloo::nextTag and their works' constructor and finish (NCCL_F_GLOO, at
 * the end), probed in libtorch_cpu as NCCL's are in libnccl, writing the same records so the
 * straggler reports and merge read both (docs/NCCL.md, "gloo").
 * Every spec is compiled and checked (nccl_api__check) when bpfsight is built
 * (tools/check_specs.c); tests/unit/test_nccl_report.c checks every symbol against
 * libnccl.so (gloo's against libtorch_cpu.so) and the enum values against nccl.h.
 */
#include <errno.h>
#include <stdio.h>
#include "nccl_decode.h"

/* The table is aligned by hand: one function a line, its spec beside it. */
// clang-format off
#define A(n, grp, fl, a) { .name = n, .group = grp, .flags = (fl), .args = a }
#define G(n, shown_as, grp, fl, a)                                                          \
	{ .name = n, .group = grp, .flags = (fl), .args = a, .shown = shown_as }
#define PGG "_ZN4c10d16ProcessGroupGloo" /* c10d::ProcessGroupGloo:: */

static const struct ucall_api nccl_apis[] = {
	/* Communicator creation. */
	A("ncclGetUniqueId", NCCL_GRP_OTHER, 0, "&*unique_id"),
	A("ncclCommInitRank", NCCL_GRP_INIT, 0, "*comm nranks unique_id!16 rank"),
	A("ncclCommInitRankConfig", NCCL_GRP_INIT, 0, "*comm nranks unique_id!16 rank config"),
	/* comms[ndev]: the copy holds the first 24 handles (comms[i] is rank i of ndev). */
	A("ncclCommInitAll", NCCL_GRP_INIT, 0, "&*comms ndev devlist"),
	/* commIds[nid]: the copy starts with the first id, the one hashed. */
	A("ncclCommInitRankScalable", NCCL_GRP_INIT, 0, "*comm nranks rank nid &unique_id config"),
	A("ncclCommSplit", NCCL_GRP_INIT, 0, "comm color key *newcomm config"),
	A("ncclCommShrink", NCCL_GRP_INIT, 0, "comm exclude nexclude *newcomm config flags"),
	/* Teardown. */
	A("ncclCommFinalize", NCCL_GRP_COMM, 0, "comm"),
	A("ncclCommDestroy", NCCL_GRP_COMM, 0, "comm"),
	A("ncclCommAbort", NCCL_GRP_COMM, 0, "comm"),
	/* Queries: how a recording that began after the init learns rank and nranks. */
	A("ncclCommCount", NCCL_GRP_COMM, 0, "comm *nranks"),
	A("ncclCommUserRank", NCCL_GRP_COMM, 0, "comm *rank"),
	A("ncclCommCuDevice", NCCL_GRP_COMM, 0, "comm *device"),
	/* User buffer registration. */
	A("ncclCommRegister", NCCL_GRP_COMM, 0, "comm buff size *handle"),
	A("ncclCommDeregister", NCCL_GRP_COMM, 0, "comm handle"),
	/* Groups: the calls between them are queued, and launched by the outermost End. */
	A("ncclGroupStart", NCCL_GRP_GROUP, NCCL_F_GROUP_START, ""),
	A("ncclGroupEnd", NCCL_GRP_GROUP, NCCL_F_GROUP_END, ""),
	/* Collectives: the stream of the 7-argument ones is the first stack word. */
	A("ncclAllReduce", NCCL_GRP_COLL, 0, "sendbuff recvbuff count datatype op comm stream"),
	A("ncclBroadcast", NCCL_GRP_COLL, 0, "sendbuff recvbuff count datatype root comm stream"),
	A("ncclBcast", NCCL_GRP_COLL, 0, "buff count datatype root comm stream"),
	A("ncclReduce", NCCL_GRP_COLL, 0, "sendbuff recvbuff count datatype op root comm stream"),
	A("ncclAllGather", NCCL_GRP_COLL, 0, "sendbuff recvbuff count datatype comm stream"),
	A("ncclReduceScatter", NCCL_GRP_COLL, 0,
	  "sendbuff recvbuff count datatype op comm stream"),
	A("ncclAlltoAll", NCCL_GRP_COLL, 0, "sendbuff recvbuff count datatype comm stream"),
	A("ncclGather", NCCL_GRP_COLL, 0, "sendbuff recvbuff count datatype root comm stream"),
	A("ncclScatter", NCCL_GRP_COLL, 0, "sendbuff recvbuff count datatype root comm stream"),
	/* Point-to-point. */
	A("ncclSend", NCCL_GRP_P2P, 0, "sendbuff count datatype peer comm stream"),
	A("ncclRecv", NCCL_GRP_P2P, 0, "recvbuff count datatype peer comm stream"),
	/*
	 * torch.distributed's gloo backend (docs/NCCL.md, "gloo"): c10d::ProcessGroupGloo in
	 * libtorch_cpu. Every collective that exchanges data takes its gloo tag from nextTag()
	 * (through the PLT) once its arguments are checked: the tag is its sequence number, the
	 * same on every rank, and nextTag's entry is the rank's arrival. nextTag(this): `this`
	 * (rdi) is the process group, shown as comm; its rank_ and size_ are the first members
	 * after the intrusive_ptr_target (vtable, two counts), in 1.13's c10d::ProcessGroup as in
	 * 2.x's c10d::Backend. The collectives themselves are not probed: they throw C++
	 * exceptions (a bad argument), and one thrown through a frame whose return a uretprobe
	 * took is no frame the unwinder knows: the process terminates, even where it would have
	 * caught it (torch 1.13's allreduce([]) under a return probe). nextTag cannot throw.
	 */
	G(PGG "7nextTagEv", "gloo collective", NCCL_GRP_COLL, NCCL_F_GLOO | NCCL_F_GLOO_TAG,
	  "&comm rank@24 nranks@28"),
	/*
	 * Its end (NCCL_F_GLOO_WORK, NCCL_F_GLOO_DONE): the collective's AsyncWork, made by the
	 * collective's thread after nextTag (the base constructor, `this` the work), is run by a
	 * worker thread of the process group, which enters finishWorkGloo(this) when run() returned
	 * (a tail call of AsyncWork::execute): that entry is the rank's end. Neither throws where a
	 * caller would catch it: the constructor allocates (std::bad_alloc), an exception out of
	 * finishWorkGloo ends the worker's thread, and the process, with or without the probe.
	 */
	G(PGG "9AsyncWorkC2ESt6vectorIS2_IN2at6TensorESaIS4_EESaIS6_EEPKcRKN3c108optionalIS6_EE",
	  "gloo work", NCCL_GRP_OTHER, NCCL_F_GLOO | NCCL_F_GLOO_WORK, "work"),
	G(PGG "9AsyncWork14finishWorkGlooEv", "gloo work done", NCCL_GRP_OTHER,
	  NCCL_F_GLOO | NCCL_F_GLOO_DONE, "work"),
};
// clang-format on

#define U64 1u << UCALL_T_U64, UCALL_T_U64
#define INT 1u << UCALL_T_S32, UCALL_T_S32
#define MEM 1u << UCALL_T_MEM, UCALL_T_MEM
/* What nccl specs may name, each with the one type its C parameter has. */
const struct ucall_key nccl_keys[K_NR] = {
	[K_SENDBUFF] = { "sendbuff", U64 },
	[K_RECVBUFF] = { "recvbuff", U64 },
	[K_BUFF] = { "buff", U64 },
	[K_COUNT] = { "count", U64 }, /* size_t */
	[K_DATATYPE] = { "datatype", INT },
	[K_OP] = { "op", INT },
	[K_ROOT] = { "root", INT },
	[K_PEER] = { "peer", INT },
	[K_COMM] = { "comm", U64 },
	[K_NEWCOMM] = { "newcomm", U64 },
	[K_STREAM] = { "stream", U64 },
	[K_RANK] = { "rank", INT },
	[K_NRANKS] = { "nranks", INT },
	[K_NDEV] = { "ndev", INT },
	[K_DEVLIST] = { "devlist", U64 },
	[K_COLOR] = { "color", INT },
	[K_KEY] = { "key", INT },
	[K_CONFIG] = { "config", U64 },
	[K_EXCLUDE] = { "exclude", U64 },
	[K_NEXCLUDE] = { "nexclude", INT },
	[K_NID] = { "nid", INT },
	[K_FLAGS] = { "flags", INT },
	[K_SIZE] = { "size", U64 }, /* size_t */
	[K_HANDLE] = { "handle", U64 },
	[K_DEVICE] = { "device", INT },
	[K_UNIQUE_ID] = { "unique_id", MEM },
	[K_COMMS] = { "comms", MEM },
	[K_WORK] = { "work", U64 }, /* a gloo collective's c10d::ProcessGroupGloo::AsyncWork */
};

/* What the decoder and the walk rely on beyond the grammar, per entry. */
static int nccl_api__check(const struct ucall_api *a, const struct ucall_spec *s, char *err,
			   size_t len)
{
	if (ucall_spec__has(s, K_COMMS) && !ucall_spec__has(s, K_NDEV))
		return snprintf(err, len, "comms needs ndev"), -EINVAL;
	if ((a->flags & (NCCL_F_GROUP_START | NCCL_F_GROUP_END)) && (s->nfields || s->nwords))
		return snprintf(err, len, "group calls take no arguments"), -EINVAL;
	/* the walk names a gloo call's process group by its comm, the tag's by it too */
	if ((a->flags & (NCCL_F_GLOO_WORK | NCCL_F_GLOO_DONE)) && !ucall_spec__has(s, K_WORK))
		return snprintf(err, len, "a gloo work's method names its work"), -EINVAL;
	if ((a->flags & NCCL_F_GLOO) && !(a->flags & (NCCL_F_GLOO_WORK | NCCL_F_GLOO_DONE)) &&
	    !ucall_spec__has(s, K_COMM))
		return snprintf(err, len, "a gloo method's process group is its comm"), -EINVAL;
	if ((a->flags & NCCL_F_GLOO_TAG) && !(a->flags & NCCL_F_GLOO))
		return snprintf(err, len, "a tag is gloo's"), -EINVAL;
	return 0;
}

static struct ucall_spec *nccl_compiled;

/* Where NCCL usually lives (libtorch_cuda.so links it in): -a probes them up front. */
static const char *const nccl_well_known[] = {
	"/usr/local/cuda*/lib64/libnccl.so*",
	"/usr/local/cuda*/targets/*/lib/libnccl.so*",
	"/usr/lib/x86_64-linux-gnu/libnccl.so*",
	"/usr/lib64/libnccl.so*",
	"/opt/conda/lib/libnccl.so*",
	"/usr/{local/,}lib/python3*/{dist,site}-packages/nvidia/*/lib/libnccl.so*",
	"/usr/{local/,}lib/python3*/{dist,site}-packages/torch/lib/libtorch_cuda.so",
	"/opt/conda/lib/python3*/site-packages/nvidia/*/lib/libnccl.so*",
	"/opt/conda/lib/python3*/site-packages/torch/lib/libtorch_cuda.so",
	NULL,
};

const struct ucall_table nccl_table = {
	.family = "nccl",
	.rec_type = BS_REC_NCCL_CALL,
	.loss_depth = BS_LOSS_NCCL_DEPTH,
	.well_known = nccl_well_known,
	.apis = nccl_apis,
	.napis = sizeof(nccl_apis) / sizeof(nccl_apis[0]),
	.keys = nccl_keys,
	.nkeys = K_NR,
	.check = nccl_api__check,
	.compiled = &nccl_compiled,
};
