// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The demo workload: a miniature training loop's host side. A "loader" thread reads
 * batches from a file and hands them over a pipe; a "trainer" thread waits for each batch,
 * "computes" (spins), and checkpoints with write+fsync now and then. Enough to show
 * syscall latency (osrt_sum) and blocked vs runnable time per thread (sched_sum). Built with
 * the CUDA toolkit's header-only NVTX where it exists (HAVE_NVTX), it also marks its phases
 * as NVTX ranges the way a training script does: nvtx_sum, through the cupti-shim that
 * `bpfsight record` injects.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#else
#define nvtxRangePushA(name) ((void)(name))
#define nvtxRangePop()	     ((void)0)
#endif

#define STEPS	   40
#define BATCH_SIZE (256 << 10)

static int pipefd[2];
static char path[] = "/tmp/bpfsight-demo-XXXXXX";

static void spin_us(long us)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000 + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

static void *loader(void *arg)
{
	char *buf = malloc(BATCH_SIZE);
	int fd = open(path, O_RDONLY);

	pthread_setname_np(pthread_self(), "loader");
	for (int i = 0; i < STEPS && buf && fd >= 0; i++) {
		nvtxRangePushA("load_batch");
		if (pread(fd, buf, BATCH_SIZE, 0) < 0)
			break;
		usleep(2000); /* decode/augment stand-in that sleeps */
		nvtxRangePop();
		if (write(pipefd[1], &i, sizeof(i)) != sizeof(i))
			break;
	}
	close(pipefd[1]);
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

static void *trainer(void *arg)
{
	int step, ck = open(path, O_WRONLY);

	pthread_setname_np(pthread_self(), "trainer");
	while (read(pipefd[0], &step, sizeof(step)) == sizeof(step)) {
		nvtxRangePushA("train_step");
		nvtxRangePushA("forward_backward");
		spin_us(3000); /* the "forward/backward" */
		nvtxRangePop();
		if (step % 10 == 9 && ck >= 0) {
			nvtxRangePushA("checkpoint");
			if (pwrite(ck, &step, sizeof(step), 0) == sizeof(step))
				fsync(ck);
			nvtxRangePop();
		}
		nvtxRangePop();
	}
	if (ck >= 0)
		close(ck);
	return NULL;
}

int main(void)
{
	pthread_t t1, t2;
	char *zero = calloc(1, BATCH_SIZE);
	int fd = mkstemp(path);

	if (fd < 0 || !zero || write(fd, zero, BATCH_SIZE) != BATCH_SIZE || pipe(pipefd))
		return 1;
	close(fd);
	pthread_create(&t1, NULL, loader, NULL);
	pthread_create(&t2, NULL, trainer, NULL);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	unlink(path);
	free(zero);
	printf("demo: %d steps done\n", STEPS);
	return 0;
}
