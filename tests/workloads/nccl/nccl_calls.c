// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test workload of the nccl family: every probed NCCL function called a known number of times
 * with distinctive arguments, through the real libnccl. It is meant for a machine without a
 * GPU: ncclGetUniqueId succeeds (it only opens a bootstrap socket), every communicator init
 * fails in its CUDA setup, and the collectives get communicators that NCCL rejects in its
 * argument check (a zeroed mapping: CommCheck finds no magic and returns
 * ncclInvalidArgument), so each call enters the library, its probes fire, and nothing
 * touches a device. Finalize/Destroy/Abort get NULL (a zeroed comm would be dereferenced).
 *
 * Per repetition (tests/e2e/test_nccl.py holds the same table):
 *   ncclGetUniqueId 1, ncclCommInitRank 1 (nranks 4, rank 2), ncclCommInitRankConfig 1
 *   (nranks 8, rank 5), ncclCommInitAll 1 (ndev 2), ncclCommInitRankScalable 1 (nranks 16,
 *   rank 9), ncclCommSplit 1 (color 3, key 11), ncclCommShrink 1, ncclCommCount 1,
 *   ncclCommUserRank 1, ncclCommCuDevice 1, ncclCommRegister 1, ncclCommDeregister 1,
 *   ncclGroupStart 3, ncclGroupEnd 3 (one group, then a group nested in another),
 *   ncclAllReduce 7 (4 + 2 in a group + 1 in the nested group), ncclBroadcast 2 (+1 inside
 *   ncclBcast, which calls it through the PLT), ncclBcast 1, ncclReduce 3, ncclAllGather 4,
 *   ncclReduceScatter 5, ncclAlltoAll 6, ncclGather 1 (in the outer nested group),
 *   ncclScatter 1, ncclSend 2 and ncclRecv 2 (in the group), ncclCommFinalize 1,
 *   ncclCommDestroy 1, ncclCommAbort 1.
 *
 * Usage: nccl_calls [--wait-stdin] [REPEAT]
 *   --wait-stdin  block on a read of stdin before the calls (for attaching with -p)
 * Prints "pid P", "comm_a 0x..", "comm_b 0x..", "stream 0x..", then after each repetition
 * "unique_id_hash H" (64-bit FNV-1a of the 128 bytes ncclGetUniqueId returned: the hash
 * bpfsight shows), and "done" at the end.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <nccl.h>

/* Distinctive values that the e2e test finds again in the decoded arguments. */
#define SEND_BUF	((void *)0x5e000000)
#define RECV_BUF	((void *)0x7ec00000)
#define STREAM		((cudaStream_t)0x57a0001)
#define FAKE_COMM_BYTES (16u << 20) /* struct ncclComm is ~1 MiB in NCCL 2.28 */

static uint64_t fnv1a64(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* A comm pointer NCCL's argument check rejects without following any pointer in it. */
static ncclComm_t fake_comm(void)
{
	void *p = mmap(NULL, FAKE_COMM_BYTES, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED) {
		perror("nccl_calls: mmap");
		exit(1);
	}
	return p;
}

static void comm_calls(ncclUniqueId *id, ncclComm_t a, ncclComm_t b)
{
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	ncclComm_t comm = NULL, comms[2] = { NULL, NULL }, newcomm = NULL;
	int devs[2] = { 0, 1 }, exclude[1] = { 1 }, v;
	void *handle = NULL;
	char regbuf[64];

	ncclGetUniqueId(id);
	ncclCommInitRank(&comm, 4, *id, 2);
	ncclCommInitRankConfig(&comm, 8, *id, 5, &cfg);
	ncclCommInitAll(comms, 2, devs);
	ncclCommInitRankScalable(&comm, 16, 9, 1, id, NULL);
	ncclCommSplit(a, 3, 11, &newcomm, NULL);
	ncclCommShrink(a, exclude, 1, &newcomm, NULL, NCCL_SHRINK_DEFAULT);
	ncclCommCount(a, &v);
	ncclCommUserRank(b, &v);
	ncclCommCuDevice(a, &v);
	ncclCommRegister(a, regbuf, sizeof(regbuf), &handle);
	ncclCommDeregister(a, handle);
}

static void data_calls(ncclComm_t a, ncclComm_t b)
{
	int i;

	for (i = 0; i < 4; i++)
		ncclAllReduce(SEND_BUF, RECV_BUF, 1024, ncclFloat32, ncclSum, a, STREAM);
	for (i = 0; i < 2; i++)
		ncclBroadcast(SEND_BUF, RECV_BUF, 2048, ncclInt64, 1, a, STREAM);
	ncclBcast(SEND_BUF, 300, ncclInt8, 0, b, STREAM);
	for (i = 0; i < 3; i++)
		ncclReduce(SEND_BUF, RECV_BUF, 100, ncclFloat64, ncclProd, 3, a, STREAM);
	for (i = 0; i < 4; i++)
		ncclAllGather(SEND_BUF, RECV_BUF, 256, ncclBfloat16, b, STREAM);
	for (i = 0; i < 5; i++)
		ncclReduceScatter(SEND_BUF, RECV_BUF, 512, ncclInt32, ncclMin, a, STREAM);
	for (i = 0; i < 6; i++)
		ncclAlltoAll(SEND_BUF, RECV_BUF, 64, ncclUint8, b, STREAM);
	ncclScatter(SEND_BUF, RECV_BUF, 20, ncclUint32, 1, b, STREAM);

	/* A group: two all-reduces and a send/recv exchange. */
	ncclGroupStart();
	for (i = 0; i < 2; i++)
		ncclAllReduce(SEND_BUF, RECV_BUF, 4096, ncclFloat16, ncclMax, b, STREAM);
	for (i = 0; i < 2; i++) {
		ncclSend(SEND_BUF, 1000, ncclFloat32, 1, a, STREAM);
		ncclRecv(RECV_BUF, 1000, ncclFloat32, 3, a, STREAM);
	}
	ncclGroupEnd();

	/* Nested groups: the all-reduce at group depth 2, the gather at depth 1. */
	ncclGroupStart();
	ncclGroupStart();
	ncclAllReduce(SEND_BUF, RECV_BUF, 12, ncclFloat64, ncclAvg, a, STREAM);
	ncclGroupEnd();
	ncclGather(SEND_BUF, RECV_BUF, 10, ncclUint64, 2, a, STREAM);
	ncclGroupEnd();
}

static void teardown_calls(void)
{
	ncclCommFinalize(NULL);
	ncclCommDestroy(NULL);
	ncclCommAbort(NULL);
}

int main(int argc, char **argv)
{
	ncclComm_t a, b;
	ncclUniqueId id;
	int i = 1, wait_stdin = 0;
	long rep = 1;

	if (i < argc && !strcmp(argv[i], "--wait-stdin")) {
		wait_stdin = 1;
		i++;
	}
	if (i < argc)
		rep = atol(argv[i++]);
	if (i < argc || rep < 1) {
		fprintf(stderr, "usage: nccl_calls [--wait-stdin] [REPEAT]\n");
		return 2;
	}
	a = fake_comm();
	b = fake_comm();
	memset(&id, 0, sizeof(id));
	printf("pid %d\ncomm_a %p\ncomm_b %p\nstream %p\n", getpid(), (void *)a, (void *)b,
	       (void *)STREAM);
	fflush(stdout);
	if (wait_stdin) {
		char c;

		if (read(0, &c, 1) != 1)
			return 3;
	}
	/* With a GPU, the inits would wait for ranks that never come: never hang a test run. */
	alarm(120);
	for (long r = 0; r < rep; r++) {
		comm_calls(&id, a, b);
		data_calls(a, b);
		teardown_calls();
		printf("unique_id_hash %016llx\n", (unsigned long long)fnv1a64(&id, sizeof(id)));
	}
	printf("done\n");
	return 0;
}
