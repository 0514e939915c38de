// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A stand-in for the cupti-shim that speaks its channel exactly (shim_records.h, "cupti-shim
 * channel"): USDT probes bpfsight:batch/gpu/nvtx/sync/drain with semaphores, batches of
 * hand-made records. It lets tests/e2e/test_shim_link.py check the record side alone,
 * including what a real shim never sends: bad batches, holes in the sequence numbers.
 *
 * usage: shim_fake SCENARIO [--wait-file PATH] [--hold-file PATH]
 *   Waits (up to 10 s) until the batch semaphore is up, or, with --wait-file, until PATH
 *   exists. Then sends SCENARIO's batches, and prints one line per fact a test checks:
 *     pid P
 *     sem batch=B gpu=G nvtx=N sync=S drain=D     (the semaphores when it started sending)
 *     sent SEQ NREC                                 (every batch fired)
 *   With --hold-file it then waits until PATH exists (or 20 s), answering the drain probe
 *   (STATUS EV_DRAINED) when its semaphore comes up, and prints the semaphores again
 *   ("end batch=..."). Exits 0.
 * Scenarios:
 *   basic   one batch: STRINGs, a STATUS (attach), an NVTX range (name "fake range", domain
 *           "fakedom", ts 1000000, dur 500), a mark, a thread name, a GPU_API (corr 7,
 *           cbid 211, [2000000, +100]) and a GPU_KERNEL of corr 7 ("_Z6kernelPfi",
 *           demangled "kernel(float*, int)", ts 3000000, dur 4000), a GPU_MEMCPY of corr 9
 *           with no API record (unlinked), and a STATUS with dropped = 5.
 *   bomb    basic's batch, but the kernel's name is a demangler bomb (demangle_bomb.h).
 *   bad     five bad batches (wrong magic, wrong record count, a record cut short, a type a
 *           shim never sends, a length that disagrees), each claiming 3 records, between
 *           two good ones with one NVTX mark each.
 *   gaps    batches of one mark each with sequence numbers 1 2 3 6 7 9 (holes: 4 5 8),
 *           and one batch sent out of order (11 before 10).
 *   idle    sends nothing (for the semaphore checks).
 */
#define _SDT_HAS_SEMAPHORES 1
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/sdt.h>
#include <sys/syscall.h>
#include "../../bpf/gpu_records.h"
#include "../../bpf/nvtx_records.h"
#include "../../bpf/osrt_records.h"
#include "demangle_bomb.h"

unsigned short bpfsight_batch_semaphore __attribute__((section(".probes"), used));
unsigned short bpfsight_gpu_semaphore __attribute__((section(".probes"), used));
unsigned short bpfsight_nvtx_semaphore __attribute__((section(".probes"), used));
unsigned short bpfsight_sync_semaphore __attribute__((section(".probes"), used));
unsigned short bpfsight_drain_semaphore __attribute__((section(".probes"), used));

static __u64 buf[(sizeof(struct bs_shim_batch_hdr) + BS_SHIM_BATCH_MAX) / 8];
static __u32 used, nrec;
static __u64 next_seq = 1;

static void rec_hdr(struct bs_hdr *h, __u16 type, __u32 size, __u64 ts)
{
	h->type = type;
	h->size = size;
	h->cpu = 0;
	h->pid = getpid();
	h->tid = syscall(SYS_gettid);
	h->ts = ts;
}

static void *add(__u16 type, __u32 size, __u64 ts)
{
	struct bs_hdr *h = (void *)((char *)buf + sizeof(struct bs_shim_batch_hdr) + used);

	memset(h, 0, size);
	rec_hdr(h, type, size, ts);
	used += size;
	nrec++;
	return h;
}

static void add_string(__u32 id, const char *s)
{
	__u32 len = strlen(s), size = (sizeof(struct bs_string) + len + 7) & ~7u;
	struct bs_string *r = add(BS_REC_STRING, size, 0);

	r->id = id;
	r->len = len;
	memcpy(r + 1, s, len);
}

static void fire(__u64 bytes)
{
	STAP_PROBE2(bpfsight, batch, (__u64)(uintptr_t)buf, bytes);
}

/* Close the batch with SEQ (0 = the next one) and fire it. */
static void flush_seq(__u64 seq)
{
	struct bs_shim_batch_hdr *bh = (void *)buf;

	bh->magic = BS_SHIM_MAGIC;
	bh->version = BS_SHIM_VERSION;
	bh->nrec = nrec;
	bh->len = used;
	bh->seq = seq ? seq : next_seq;
	next_seq = bh->seq + 1;
	fire(sizeof(*bh) + used);
	printf("sent %llu %u\n", (unsigned long long)bh->seq, nrec);
	used = nrec = 0;
}

static void mark(__u64 ts)
{
	struct bs_nvtx_mark *m = add(BS_REC_NVTX_MARK, sizeof(*m), ts);

	m->name_id = 1;
}

static void status(__u32 event, __u64 dropped)
{
	struct bs_shim_status *s = add(BS_REC_SHIM_STATUS, sizeof(*s), 0);

	s->h.ts = 1;
	s->state = BS_SHIM_ST_NVTX_INJECTED | BS_SHIM_ST_NVTX_ON;
	s->event = event;
	s->dropped = dropped;
	s->seq = next_seq - 1;
}

/* KERNEL: the kernel's mangled name. */
static void basic(const char *kernel)
{
	struct bs_nvtx_range *r;
	struct bs_nvtx_name *n;
	struct bs_gpu_api *a;
	struct bs_gpu_kernel *k;
	struct bs_gpu_memcpy *c;

	add_string(1, "fake range");
	add_string(2, "fakedom");
	add_string(3, "worker");
	add_string(4, "cudaLaunchKernel_v7000");
	add_string(5, kernel);
	status(BS_SHIM_EV_ATTACH, 0);
	r = add(BS_REC_NVTX_RANGE, sizeof(*r), 1000000);
	r->dur = 500;
	r->name_id = 1;
	r->domain_id = 2;
	r->end_tid = r->h.tid;
	r->depth = 1;
	r->flags = BS_NVTX_PUSHPOP;
	mark(1100000);
	n = add(BS_REC_NVTX_NAME, sizeof(*n), 1200000);
	n->key = n->h.tid;
	n->kind = BS_NVTX_NAME_THREAD;
	n->name_id = 3;
	a = add(BS_REC_GPU_API, sizeof(*a), 2000000);
	a->dur = 100;
	a->correlation = 7;
	a->cbid = 211;
	a->name_id = 4;
	a->domain = 2;
	k = add(BS_REC_GPU_KERNEL, sizeof(*k), 3000000);
	k->h.tid = 0;
	k->dur = 4000;
	k->correlation = 7;
	k->name_id = 5;
	k->device = 1;
	k->stream = 13;
	k->grid[0] = 4;
	k->block[0] = 128;
	c = add(BS_REC_GPU_MEMCPY, sizeof(*c), 3100000);
	c->h.tid = 0;
	c->dur = 50;
	c->bytes = 4096;
	c->correlation = 9;
	c->copy_kind = 1;
	status(BS_SHIM_EV_DROPPED, 5);
	flush_seq(0);
}

static void bad(void)
{
	struct bs_shim_batch_hdr *bh = (void *)buf;
	struct bs_hdr *h;

	add_string(1, "good");
	mark(5000);
	flush_seq(0);
	for (int i = 0; i < 5; i++) {
		mark(6000 + i);
		mark(6000 + i);
		h = add(BS_REC_NVTX_MARK, sizeof(struct bs_nvtx_mark), 6000 + i);
		bh->magic = BS_SHIM_MAGIC;
		bh->version = BS_SHIM_VERSION;
		bh->nrec = nrec;
		bh->len = used;
		bh->seq = next_seq++;
		if (i == 0)
			bh->magic = 0x12345678;
		else if (i == 1)
			bh->nrec = 4;
		else if (i == 2)
			h->size = 24; /* shorter than a mark */
		else if (i == 3)
			h->type = BS_REC_SYSCALL;
		else
			bh->len = used + 8;
		fire(sizeof(*bh) + used);
		printf("sent %llu %u bad\n", (unsigned long long)bh->seq, nrec);
		used = nrec = 0;
	}
	mark(7000);
	flush_seq(0);
}

static void gaps(void)
{
	static const __u64 seqs[] = { 1, 2, 3, 6, 7, 9, 11, 10 };

	add_string(1, "gap mark");
	for (size_t i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
		mark(8000 + i);
		flush_seq(seqs[i]);
	}
}

static void print_sems(const char *what)
{
	printf("%s batch=%u gpu=%u nvtx=%u sync=%u drain=%u\n", what, bpfsight_batch_semaphore,
	       bpfsight_gpu_semaphore, bpfsight_nvtx_semaphore, bpfsight_sync_semaphore,
	       bpfsight_drain_semaphore);
	fflush(stdout);
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	const char *scenario = argc > 1 ? argv[1] : "idle", *wait_file = NULL, *hold = NULL;
	int drained = 0;

	for (int i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--wait-file"))
			wait_file = argv[i + 1];
		else if (!strcmp(argv[i], "--hold-file"))
			hold = argv[i + 1];
	}
	printf("pid %d\n", getpid());
	fflush(stdout);
	for (int i = 0; i < 1000; i++) {
		if (wait_file ? !access(wait_file, F_OK) : bpfsight_batch_semaphore > 0)
			break;
		sleep_ms(10);
	}
	print_sems("sem");
	if (!strcmp(scenario, "basic"))
		basic("_Z6kernelPfi");
	else if (!strcmp(scenario, "bomb"))
		basic(DEMANGLE_BOMB_30);
	else if (!strcmp(scenario, "bad"))
		bad();
	else if (!strcmp(scenario, "gaps"))
		gaps();
	fflush(stdout);
	for (int i = 0; hold && i < 2000 && access(hold, F_OK); i++) {
		if (bpfsight_drain_semaphore && !drained++) {
			status(BS_SHIM_EV_DRAINED, 0);
			flush_seq(0);
			STAP_PROBE1(bpfsight, drain, (__u64)next_seq - 1);
			fflush(stdout);
		}
		sleep_ms(10);
	}
	if (argc > 99) { /* never: keeps every probe in the binary */
		STAP_PROBE1(bpfsight, gpu, (__u64)argc);
		STAP_PROBE1(bpfsight, nvtx, (__u64)argc);
		STAP_PROBE1(bpfsight, sync, (__u64)argc);
	}
	print_sems("end");
	return 0;
}
