// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The nccl family's API table: which libnccl functions are probed, what the BPF side captures
 * for each (deref, out) and how the decoder reads their arguments (args). An entry's index is
 * bs_ucall.fn in trace files: APPEND ONLY, never reorder or remove.
 *
 * Symbols are the ncclX ones libnccl exports (nm -D, NCCL 2.28). NCCL also exports a pncclX
 * profiling alias of each at the same address, so probing ncclX sees calls made through
 * either name; an interposing profiler's own ncclX is a different function and is probed
 * wherever it is mapped, like any other. ncclBcast calls ncclBroadcast through the PLT: that
 * broadcast is recorded too, at depth 1 (reports count depth 0 only). Functions a library
 * does not define (older NCCL has no ncclAlltoAll/Gather/Scatter, ncclCommShrink or
 * ncclCommInitRankScalable) are simply not probed there.
 *
 * args: one field per argument, in order; x86-64 SysV puts integer and pointer arguments in
 * rdi rsi rdx rcx r8 r9 (args[0..5]) and the rest in stack words (args[6..11]):
 *   KEY    the next argument word (a register while one is left, else the next stack word)
 *   *KEY   the next argument is the out pointer (out_arg = its word's index + 1): KEY shows
 *          the value it points to at return (bs_ucall.out), only when the call succeeded
 *          (ncclSuccess, or ncclInProgress for a nonblocking communicator)
 *   &KEY   the next argument points to what is copied at return (deref_arg = its word's
 *          index + 1); &*KEY: the call writes it, so it is shown only when it succeeded
 *   KEY!   a ncclUniqueId passed by value: 128 bytes of memory class, so 16 stack words and
 *          no register (the next integer argument still gets the next register: the rank of
 *          ncclCommInitRank is in rdx); copied from the stack-argument area
 *          (deref_arg = BS_DEREF_ARG_STACK)
 * KEYs (nccl_report.c): sendbuff recvbuff buff count datatype op root peer comm stream rank
 *   nranks ndev devlist color key config exclude nexclude nid flags size handle device
 *   newcomm unique_id comms. Integer keys (datatype op root peer rank nranks ndev color key
 *   nexclude nid flags device) are C ints: only the low 32 bits of their word are defined.
 *   count is the element count the function takes (ncclAllGather's sendcount,
 *   ncclReduceScatter's recvcount, per peer for ncclAlltoAll); bytes = count x type size.
 * tests/unit/test_nccl_report.c checks every string against deref/out, every symbol against
 * libnccl.so and the enum values against nccl.h.
 */
#include "nccl.h"

/* The table is aligned by hand: one function a line, its spec beside it. */
// clang-format off
#define A(n, grp, fl, a, ...) { .name = n, .group = grp, .flags = (fl), .args = a, __VA_ARGS__ }

#define OUT(i1)	    .out_arg = (i1)
#define DEREF(i1)   .deref_arg = (i1), .deref_mode = BS_DEREF_STRUCT
#define DEREF_STACK DEREF(BS_DEREF_ARG_STACK)

static const struct ucall_api nccl_apis[] = {
	/* Communicator creation. */
	A("ncclGetUniqueId", NCCL_GRP_OTHER, 0, "&*unique_id", DEREF(1)),
	A("ncclCommInitRank", NCCL_GRP_INIT, 0, "*comm nranks unique_id! rank", OUT(1),
	  DEREF_STACK),
	A("ncclCommInitRankConfig", NCCL_GRP_INIT, 0, "*comm nranks unique_id! rank config", OUT(1),
	  DEREF_STACK),
	/* comms[ndev]: the copy holds the first 24 handles (comms[i] is rank i of ndev). */
	A("ncclCommInitAll", NCCL_GRP_INIT, 0, "&*comms ndev devlist", DEREF(1)),
	/* commIds[nid]: the copy starts with the first id, the one hashed. */
	A("ncclCommInitRankScalable", NCCL_GRP_INIT, 0, "*comm nranks rank nid &unique_id config",
	  OUT(1), DEREF(5)),
	A("ncclCommSplit", NCCL_GRP_INIT, 0, "comm color key *newcomm config", OUT(4)),
	A("ncclCommShrink", NCCL_GRP_INIT, 0, "comm exclude nexclude *newcomm config flags", OUT(4)),
	/* Teardown. */
	A("ncclCommFinalize", NCCL_GRP_COMM, 0, "comm"),
	A("ncclCommDestroy", NCCL_GRP_COMM, 0, "comm"),
	A("ncclCommAbort", NCCL_GRP_COMM, 0, "comm"),
	/* Queries: how a recording that began after the init learns rank and nranks. */
	A("ncclCommCount", NCCL_GRP_COMM, 0, "comm *nranks", OUT(2)),
	A("ncclCommUserRank", NCCL_GRP_COMM, 0, "comm *rank", OUT(2)),
	A("ncclCommCuDevice", NCCL_GRP_COMM, 0, "comm *device", OUT(2)),
	/* User buffer registration. */
	A("ncclCommRegister", NCCL_GRP_COMM, 0, "comm buff size *handle", OUT(4)),
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
};
// clang-format on

const struct ucall_table nccl_table = {
	.family = "nccl",
	.rec_type = BS_REC_NCCL_CALL,
	.apis = nccl_apis,
	.napis = sizeof(nccl_apis) / sizeof(nccl_apis[0]),
};
