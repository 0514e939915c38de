// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A test library with NCCL's API and CPU semantics (a test workload, not a product part): the
 * multi-rank tests need ranks that really wait for each other in their collectives, and NCCL
 * cannot form a communicator without a GPU. It exports NCCL's own symbol names with NCCL
 * 2.28's ABI (nccl_cpu.h), and is built as libnccl.so.2, so the nccl family's uprobes find it
 * exactly as they find libnccl: by its exported ncclX symbols, in whatever file maps them.
 *
 * The ranks of a communicator are processes of one machine sharing a POSIX shared-memory
 * object named after the unique id. Every collective is one barrier over all ranks: each rank
 * writes its send buffer into its slot, waits until every rank has arrived, and reads the
 * result from the slots (two sets of slots used in turn, so a rank that leaves first can
 * write the next collective's data while slower ranks still read this one's). A rank that
 * comes late makes the others wait in their calls, as on a GPU. Inside
 * ncclGroupStart/ncclGroupEnd, collectives are queued and run by the outermost ncclGroupEnd.
 *
 * Every rank leaves a collective at its release instant (leave_at), as on GPUs, where its
 * ranks end it within microseconds; on a machine with fewer cores than ranks, in waves that
 * rotate (see there).
 *
 * Data types int32, int64, float32, float64; ops sum, prod, max, min, avg; at most
 * SLOT_BYTES per rank and collective; at most MAX_RANKS ranks. A rank that waits more than
 * WAIT_LIMIT_S for the others gives up with ncclSystemError, so a test whose rank died does
 * not hang.
 *
 * A waiting rank sleeps on a futex; with NCCL_CPU_SPIN=1 in its environment it polls on the CPU
 * instead, yielding between polls, as NCCL's host threads poll their GPU's progress: a rank
 * that waits runs (never asleep), its stack in the collective.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <linux/futex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "nccl_cpu.h"

#define MAX_RANKS	    64
#define SLOT_BYTES	    (64u << 10)
#define WAIT_LIMIT_S	    60
#define GROUP_MAX	    64
#define RELEASE_LEAD_NS	    100000 /* from the last arrival to the release, at least */
#define RELEASE_PER_RANK_NS 40000  /* and per rank to wake */
#define RELEASE_STEP_NS	    100000 /* between waves of ranks leaving */

struct shared {
	uint32_t nranks;
	uint32_t joined;
	uint32_t left;
	uint32_t arrived;	  /* ranks in the current barrier */
	uint32_t gen;		  /* barriers completed */
	uint64_t release;	  /* CLOCK_MONOTONIC ns at which the last barrier's ranks leave */
	uint32_t word[MAX_RANKS]; /* each rank's futex: the generation it waits to see pass */
				  /* then unsigned char data[2][nranks][SLOT_BYTES] */
};

struct ncclComm {
	struct shared *s;
	unsigned char *data;
	size_t map_len;
	char name[64];
	int rank, nranks;
	uint64_t ncoll; /* collectives run: picks the set of slots */
};

static size_t shared_len(int nranks)
{
	size_t head = (sizeof(struct shared) + 4095) & ~(size_t)4095;

	return head + 2 * (size_t)nranks * SLOT_BYTES;
}

static uint64_t id_hash(const ncclUniqueId *id)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++) {
		h ^= (unsigned char)id->internal[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static long futex(uint32_t *uaddr, int op, uint32_t val, const struct timespec *timeout)
{
	return syscall(SYS_futex, uaddr, op, val, timeout, NULL, 0);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double now_s(void)
{
	return mono_ns() / 1e9;
}

/* The CPUs this process may run on, in order (its affinity when the library loaded). */
static int cpus[MAX_RANKS], ncpus;
static int spin; /* NCCL_CPU_SPIN=1: a waiting rank polls (above) */

__attribute__((constructor)) static void find_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	for (int i = 0; i < CPU_SETSIZE && ncpus < MAX_RANKS; i++)
		if (CPU_ISSET(i, &set))
			cpus[ncpus++] = i;
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* wake at the deadline, not 50 us later */
	spin = getenv("NCCL_CPU_SPIN") && !strcmp(getenv("NCCL_CPU_SPIN"), "1");
}

/*
 * Leave barrier G at its release instant. With a core per rank every rank returns at the
 * instant itself, as ranks do from a collective on GPUs. With fewer cores than ranks they
 * cannot all run at once: they leave in waves of one rank per core, RELEASE_STEP apart, each
 * rank in a wave (and on a core) that rotates with every collective, so that over the
 * collectives every rank leaves late exactly as often as any other (with fixed waves, the
 * ranks of the last one would look as if their clocks were late, to anything that aligns
 * clocks on collective ends).
 */
static void leave_at(struct ncclComm *c, uint32_t g, uint64_t release_ns)
{
	uint32_t pos = (uint32_t)(c->rank + g) % (uint32_t)c->nranks, wave = 0;
	struct timespec at;
	cpu_set_t set;

	if (ncpus > 0 && ncpus < c->nranks) {
		wave = pos / (uint32_t)ncpus;
		CPU_ZERO(&set);
		CPU_SET(cpus[pos % (uint32_t)ncpus], &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	release_ns += wave * RELEASE_STEP_NS;
	at.tv_sec = (time_t)(release_ns / 1000000000ull);
	at.tv_nsec = (long)(release_ns % 1000000000ull);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR)
		;
}

/* Every rank arrives, then all leave: 0, or -ETIMEDOUT when the others never came. */
static int barrier(struct ncclComm *c)
{
	struct shared *s = c->s;
	uint32_t g = __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE), n = (uint32_t)c->nranks;
	struct timespec slice = { 0, 200 * 1000 * 1000 };
	double deadline;

	__atomic_store_n(&s->word[c->rank], g, __ATOMIC_RELAXED);
	if (__atomic_add_fetch(&s->arrived, 1, __ATOMIC_ACQ_REL) == n) {
		/* Time for every waiter to wake and wait for the release instant. */
		uint64_t release = mono_ns() + RELEASE_LEAD_NS + n * RELEASE_PER_RANK_NS;

		__atomic_store_n(&s->release, release, __ATOMIC_RELAXED);
		__atomic_store_n(&s->arrived, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&s->gen, g + 1, __ATOMIC_RELEASE);
		for (uint32_t j = 0; j < n; j++) {
			uint32_t r = (j + n - g % n) % n; /* in the order they leave (leave_at) */

			if ((int)r == c->rank)
				continue;
			__atomic_store_n(&s->word[r], g + 1, __ATOMIC_RELEASE);
			futex(&s->word[r], FUTEX_WAKE, 1, NULL);
		}
		leave_at(c, g, release);
		return 0;
	}
	deadline = now_s() + WAIT_LIMIT_S;
	while (__atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) == g) {
		if (now_s() > deadline) {
			fprintf(stderr, "libnccl_cpu: rank %d: the other ranks of %s never came\n",
				c->rank, c->name);
			return -ETIMEDOUT;
		}
		if (!spin) {
			futex(&s->word[c->rank], FUTEX_WAIT, g, &slice);
			continue;
		}
		for (int i = 0; i < 1000; i++)
			__builtin_ia32_pause();
		sched_yield();
	}
	leave_at(c, g, __atomic_load_n(&s->release, __ATOMIC_RELAXED));
	return 0;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId)
{
	if (!uniqueId)
		return ncclInvalidArgument;
	if (getrandom(uniqueId->internal, sizeof(uniqueId->internal), 0) !=
	    (ssize_t)sizeof(uniqueId->internal))
		return ncclSystemError;
	return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
	struct ncclComm *c;
	uint32_t seen = 0;
	void *p;
	int fd;

	if (!comm || nranks < 1 || nranks > MAX_RANKS || rank < 0 || rank >= nranks)
		return ncclInvalidArgument;
	c = calloc(1, sizeof(*c));
	if (!c)
		return ncclSystemError;
	snprintf(c->name, sizeof(c->name), "/bpfsight-nccl-cpu-%016llx",
		 (unsigned long long)id_hash(&commId));
	c->rank = rank;
	c->nranks = nranks;
	c->map_len = shared_len(nranks);
	fd = shm_open(c->name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)c->map_len))
		goto fail;
	p = mmap(NULL, c->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	fd = -1;
	if (p == MAP_FAILED)
		goto fail;
	c->s = p;
	c->data = (unsigned char *)p + (shared_len(nranks) - 2 * (size_t)nranks * SLOT_BYTES);
	/* The first rank to arrive sets the size; the others must agree with it. */
	if (!__atomic_compare_exchange_n(&c->s->nranks, &seen, (uint32_t)nranks, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) &&
	    seen != (uint32_t)nranks) {
		fprintf(stderr, "libnccl_cpu: rank %d: nranks %d, the communicator has %u\n", rank,
			nranks, seen);
		munmap(p, c->map_len);
		free(c);
		return ncclInvalidUsage;
	}
	__atomic_add_fetch(&c->s->joined, 1, __ATOMIC_ACQ_REL);
	if (barrier(c)) { /* an init returns once every rank has joined */
		munmap(p, c->map_len);
		free(c);
		return ncclSystemError;
	}
	*comm = c;
	return ncclSuccess;
fail:
	if (fd >= 0)
		close(fd);
	free(c);
	return ncclSystemError;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
	if (!comm || !count)
		return ncclInvalidArgument;
	*count = comm->nranks;
	return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
	if (!comm || !rank)
		return ncclInvalidArgument;
	*rank = comm->rank;
	return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
	return comm ? ncclSuccess : ncclInvalidArgument;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	int err;

	if (!comm)
		return ncclInvalidArgument;
	err = barrier(comm);
	if (__atomic_add_fetch(&comm->s->left, 1, __ATOMIC_ACQ_REL) == (uint32_t)comm->nranks)
		shm_unlink(comm->name);
	munmap(comm->s, comm->map_len);
	free(comm);
	return err ? ncclSystemError : ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t result)
{
	static const char *const names[] = {
		"no error",	  "unhandled cuda error",  "unhandled system error",
		"internal error", "invalid argument",	   "invalid usage",
		"remote error",	  "operation in progress",
	};

	return (unsigned)result < sizeof(names) / sizeof(names[0]) ? names[result] : "unknown";
}

/* The reductions, element by element. */
#define REDUCE(T)                                                                                  \
	static void reduce_##T(T *acc, const T *in, size_t n, ncclRedOp_t op)                      \
	{                                                                                          \
		for (size_t i = 0; i < n; i++) {                                                   \
			switch (op) {                                                              \
			case ncclProd:                                                             \
				acc[i] *= in[i];                                                   \
				break;                                                             \
			case ncclMax:                                                              \
				acc[i] = in[i] > acc[i] ? in[i] : acc[i];                          \
				break;                                                             \
			case ncclMin:                                                              \
				acc[i] = in[i] < acc[i] ? in[i] : acc[i];                          \
				break;                                                             \
			default: /* sum, avg */                                                    \
				acc[i] += in[i];                                                   \
			}                                                                          \
		}                                                                                  \
	}
REDUCE(int32_t)
REDUCE(int64_t)
REDUCE(float)
REDUCE(double)

static size_t type_size(ncclDataType_t t)
{
	switch (t) {
	case ncclInt32:
	case ncclFloat32:
		return 4;
	case ncclInt64:
	case ncclFloat64:
		return 8;
	}
	return 0;
}

static void reduce(void *acc, const void *in, size_t n, ncclDataType_t t, ncclRedOp_t op)
{
	switch (t) {
	case ncclInt32:
		reduce_int32_t(acc, in, n, op);
		break;
	case ncclInt64:
		reduce_int64_t(acc, in, n, op);
		break;
	case ncclFloat32:
		reduce_float(acc, in, n, op);
		break;
	case ncclFloat64:
		reduce_double(acc, in, n, op);
		break;
	}
}

static void average(void *acc, size_t n, ncclDataType_t t, int nranks)
{
	for (size_t i = 0; i < n; i++) {
		switch (t) {
		case ncclInt32:
			((int32_t *)acc)[i] /= nranks;
			break;
		case ncclInt64:
			((int64_t *)acc)[i] /= nranks;
			break;
		case ncclFloat32:
			((float *)acc)[i] /= nranks;
			break;
		case ncclFloat64:
			((double *)acc)[i] /= nranks;
			break;
		}
	}
}

enum coll { C_ALLREDUCE, C_BROADCAST, C_ALLGATHER, C_REDUCESCATTER };

struct op {
	enum coll coll;
	const void *send;
	void *recv;
	size_t count;
	ncclDataType_t type;
	ncclRedOp_t op;
	int root;
	ncclComm_t comm;
};

static unsigned char *slot(struct ncclComm *c, int rank)
{
	return c->data + ((c->ncoll & 1) * (size_t)c->nranks + (size_t)rank) * SLOT_BYTES;
}

/* What this rank puts into its slot, in bytes (0: nothing). */
static size_t send_bytes(const struct op *o, size_t es)
{
	switch (o->coll) {
	case C_ALLREDUCE:
	case C_ALLGATHER:
		return o->count * es;
	case C_BROADCAST:
		return o->comm->rank == o->root ? o->count * es : 0;
	case C_REDUCESCATTER:
		return o->count * es * (size_t)o->comm->nranks;
	}
	return 0;
}

static void gather_result(const struct op *o, size_t es)
{
	struct ncclComm *c = o->comm;
	size_t chunk = o->count * es;

	switch (o->coll) {
	case C_ALLREDUCE:
	case C_REDUCESCATTER: {
		size_t off = o->coll == C_REDUCESCATTER ? (size_t)c->rank * chunk : 0;

		memcpy(o->recv, slot(c, 0) + off, chunk);
		for (int r = 1; r < c->nranks; r++)
			reduce(o->recv, slot(c, r) + off, o->count, o->type, o->op);
		if (o->op == ncclAvg)
			average(o->recv, o->count, o->type, c->nranks);
		break;
	}
	case C_BROADCAST:
		memmove(o->recv, slot(c, o->root), chunk);
		break;
	case C_ALLGATHER:
		for (int r = 0; r < c->nranks; r++)
			memcpy((unsigned char *)o->recv + r * chunk, slot(c, r), chunk);
		break;
	}
}

static ncclResult_t check(const struct op *o)
{
	size_t es = type_size(o->type);

	if (!o->comm || !es || (o->count && (!o->recv || (!o->send && send_bytes(o, es)))))
		return ncclInvalidArgument;
	if (o->coll != C_BROADCAST && (unsigned)o->op > ncclAvg)
		return ncclInvalidArgument;
	if (o->coll == C_BROADCAST && (o->root < 0 || o->root >= o->comm->nranks))
		return ncclInvalidArgument;
	if (o->count * es * (o->coll == C_REDUCESCATTER ? (size_t)o->comm->nranks : 1) > SLOT_BYTES)
		return ncclInvalidArgument;
	return ncclSuccess;
}

/* One collective: slot written, barrier, result read. */
static ncclResult_t run(const struct op *o)
{
	size_t es = type_size(o->type), n = send_bytes(o, es);

	if (n)
		memcpy(slot(o->comm, o->comm->rank), o->send, n);
	if (barrier(o->comm))
		return ncclSystemError;
	gather_result(o, es);
	o->comm->ncoll++;
	return ncclSuccess;
}

static __thread int group_depth;
static __thread int group_n;
static __thread struct op group_ops[GROUP_MAX];

static ncclResult_t submit(const struct op *o)
{
	ncclResult_t err = check(o);

	if (err)
		return err;
	if (!group_depth)
		return run(o);
	if (group_n == GROUP_MAX)
		return ncclInvalidUsage;
	group_ops[group_n++] = *o;
	return ncclSuccess;
}

ncclResult_t ncclGroupStart(void)
{
	group_depth++;
	return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void)
{
	ncclResult_t err = ncclSuccess;

	if (!group_depth)
		return ncclInvalidUsage;
	if (--group_depth)
		return ncclSuccess;
	for (int i = 0; i < group_n; i++) {
		ncclResult_t e = run(&group_ops[i]);

		if (e && !err)
			err = e;
	}
	group_n = 0;
	return err;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
			   cudaStream_t stream)
{
	struct op o = { C_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, 0, comm };

	return submit(&o);
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
	struct op o = { C_BROADCAST, sendbuff, recvbuff, count, datatype, ncclSum, root, comm };

	return submit(&o);
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
			   ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	struct op o = { C_ALLGATHER, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, comm };

	return submit(&o);
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
			       ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
			       cudaStream_t stream)
{
	struct op o = { C_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype, op, 0, comm };

	return submit(&o);
}
