// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * NVTX workload with exactly known ranges, for the cupti-shim's tests (tests/e2e/test_shim.py)
 * and the nvtx family's. Header-only nvtx3: the shim arrives by NVTX_INJECTION64_PATH.
 *
 *   nvtx_ranges [--loops N] [--wait-file PATH] [--then-wait K PATH] [--second-dso] [--fork]
 *               [--hold MS] [--hold-file PATH] [--late]
 *
 *   --loops N      repeat the loop body N times (default 1)
 *   --wait-file P  after loading the injection (nvtxInitialize) and printing the "pid" line,
 *                  wait until P exists (a tracer attaches meanwhile)
 *   --then-wait K P  after K loops, wait again until P exists (a second tracer joins meanwhile)
 *   --second-dso   each loop also calls NVTX from libnvtx_second.so (its own NVTX instance,
 *                  which initializes the injection separately)
 *   --fork         after the loops, fork a child: it marks "child-wake", sleeps 300 ms (the
 *                  shim's poller restarts and attaches in the child), pushes and pops "child"
 *                  around a 10 ms sleep, and exits 0; the parent waits for it
 *   --late         the shim arrives by record --inject during the wait: NVTX returns levels
 *                  after it, as with NVTX_INJECTION64_PATH
 *   --hold MS      after the loops (before --fork): push A "held" (level 0), print
 *                  {"held": true}, sleep MS, pop: a range open long enough for a test to
 *                  drain, detach or attach meanwhile
 *   --hold-file P  as --hold, and the pop also waits until P exists (after MS, 0 without
 *                  --hold): a range open until the test has done what it needed it open for,
 *                  however long a loaded machine makes that take
 *
 * Once, before the loops (main thread, default domain unless said):
 *   nvtxNameOsThreadA(main tid, "nvtx-main")
 *   nvtxNameCategoryA(1, "compute"); nvtxNameCategoryA(2, "io")
 *   D = nvtxDomainCreateA("bpfsight.test"); nvtxDomainNameCategoryA(D, 7, "domain-cat")
 *   R1 = nvtxDomainRegisterStringA(D, "registered-step")
 *   R2 = nvtxDomainRegisterStringA(D, "registered-mark")
 * Each loop i (0-based):
 *   main: push A "outer"                                                level 0
 *           push Ex "middle" color 0xff00ff00, category 1, payload u64 i   level 1
 *             push W L"inner-\u03c9" (UTF-8 "inner-ω"); sleep 20 ms; pop   level 2
 *           pop
 *           mark A "mark-a"
 *           mark Ex "mark-payload" color 0xffff0000, category 2, payload double 2.5
 *           S = start A "cross-thread"
 *           two threads, each: nvtxNameOsThreadA(own tid, "nvtx-worker-K") (K = 1, 2),
 *             push A "worker-K"; sleep 10 ms;
 *               push Ex "worker-K-inner" payload int32 -K; pop;  (levels 0, 1)
 *             pop; worker 1 then ends S (so S ends on another thread than it started)
 *           join both
 *           D: push Ex registered R1, payload u32 7                          level 0
 *                mark Ex registered R2
 *                push Ex "domain-inner" category 7, payload float 1.5; sleep 5 ms  level 1
 *                pop; pop
 *           D: E = start Ex "domain-startend"; end E
 *         pop ("outer")
 *   with --second-dso, then (main thread, the second DSO's instance): push A "second-dso",
 *     mark A "second-dso-mark", pop (level 0)
 *
 * stdout: {"pid": P, "main": TID} first (flushed), then per loop
 *   {"loop": i, "w1": TID, "w2": TID, "cross": S, "domain_range": E}
 * With an injection (NVTX_INJECTION64_PATH set) every push/pop return value is checked
 * against the level above (exit 3 on a mismatch); without one NVTX returns -2 for all.
 */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void nvtx_second_work(int i); /* libnvtx_second.so */

static int injected;
static int late; /* --late: record --inject brings the shim during the wait */
static nvtxRangeId_t cross;

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

static void level(int got, int want, const char *what)
{
	int expect = injected ? want : -2;

	if (got != expect) {
		fprintf(stderr, "nvtx_ranges: %s returned %d, expected %d\n", what, got, expect);
		exit(3);
	}
}

static nvtxEventAttributes_t attr(void)
{
	nvtxEventAttributes_t a;

	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	return a;
}

struct worker {
	int k;
	pid_t tid;
};

static void *worker(void *arg)
{
	struct worker *w = arg;
	nvtxEventAttributes_t a = attr();
	char name[32];

	w->tid = gettid();
	snprintf(name, sizeof(name), "nvtx-worker-%d", w->k);
	nvtxNameOsThreadA((uint32_t)w->tid, name);
	snprintf(name, sizeof(name), "worker-%d", w->k);
	level(nvtxRangePushA(name), 0, "worker push");
	sleep_ms(10);
	snprintf(name, sizeof(name), "worker-%d-inner", w->k);
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = name;
	a.payloadType = NVTX_PAYLOAD_TYPE_INT32;
	a.payload.iValue = -w->k;
	level(nvtxRangePushEx(&a), 1, "worker inner push");
	level(nvtxRangePop(), 1, "worker inner pop");
	level(nvtxRangePop(), 0, "worker pop");
	if (w->k == 1)
		nvtxRangeEnd(cross);
	return NULL;
}

static void loop(int i, nvtxDomainHandle_t d, nvtxStringHandle_t r1, nvtxStringHandle_t r2,
		 int second)
{
	struct worker w[2] = { { 1, 0 }, { 2, 0 } };
	nvtxEventAttributes_t a = attr();
	pthread_t th[2];
	nvtxRangeId_t e;
	int k;

	level(nvtxRangePushA("outer"), 0, "outer push");
	a.colorType = NVTX_COLOR_ARGB;
	a.color = 0xff00ff00;
	a.category = 1;
	a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
	a.payload.ullValue = (uint64_t)i;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "middle";
	level(nvtxRangePushEx(&a), 1, "middle push");
	level(nvtxRangePushW(L"inner-\u03c9"), 2, "inner push");
	sleep_ms(20);
	level(nvtxRangePop(), 2, "inner pop");
	level(nvtxRangePop(), 1, "middle pop");

	nvtxMarkA("mark-a");
	a = attr();
	a.colorType = NVTX_COLOR_ARGB;
	a.color = 0xffff0000;
	a.category = 2;
	a.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
	a.payload.dValue = 2.5;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "mark-payload";
	nvtxMarkEx(&a);

	cross = nvtxRangeStartA("cross-thread");
	for (k = 0; k < 2; k++)
		if (pthread_create(&th[k], NULL, worker, &w[k])) {
			fprintf(stderr, "nvtx_ranges: pthread_create failed\n");
			exit(1);
		}
	for (k = 0; k < 2; k++)
		pthread_join(th[k], NULL);

	a = attr();
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = r1;
	a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT32;
	a.payload.uiValue = 7;
	level(nvtxDomainRangePushEx(d, &a), 0, "domain push");
	a = attr();
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = r2;
	nvtxDomainMarkEx(d, &a);
	a = attr();
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "domain-inner";
	a.category = 7;
	a.payloadType = NVTX_PAYLOAD_TYPE_FLOAT;
	a.payload.fValue = 1.5f;
	level(nvtxDomainRangePushEx(d, &a), 1, "domain inner push");
	sleep_ms(5);
	level(nvtxDomainRangePop(d), 1, "domain inner pop");
	level(nvtxDomainRangePop(d), 0, "domain pop");
	a = attr();
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "domain-startend";
	e = nvtxDomainRangeStartEx(d, &a);
	nvtxDomainRangeEnd(d, e);
	level(nvtxRangePop(), 0, "outer pop");
	if (second)
		nvtx_second_work(i);
	printf("{\"loop\": %d, \"w1\": %d, \"w2\": %d, \"cross\": %llu, \"domain_range\": %llu}\n",
	       i, (int)w[0].tid, (int)w[1].tid, (unsigned long long)cross, (unsigned long long)e);
}

static void child(void)
{
	nvtxMarkA("child-wake");
	sleep_ms(300);
	level(nvtxRangePushA("child"), 0, "child push");
	sleep_ms(10);
	level(nvtxRangePop(), 0, "child pop");
	printf("{\"child\": %d}\n", (int)getpid());
	fflush(stdout);
	exit(0);
}

int main(int argc, char **argv)
{
	const char *wait_file = NULL, *then_file = NULL, *hold_file = NULL;
	int then_after = -1, loops = 1, second = 0, do_fork = 0, hold = -1, i, status;
	nvtxDomainHandle_t d;
	nvtxStringHandle_t r1, r2;
	struct stat st;
	pid_t pid;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--loops") && i + 1 < argc) {
			loops = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--wait-file") && i + 1 < argc) {
			wait_file = argv[++i];
		} else if (!strcmp(argv[i], "--then-wait") && i + 2 < argc) {
			then_after = atoi(argv[++i]);
			then_file = argv[++i];
		} else if (!strcmp(argv[i], "--second-dso")) {
			second = 1;
		} else if (!strcmp(argv[i], "--fork")) {
			do_fork = 1;
		} else if (!strcmp(argv[i], "--hold") && i + 1 < argc) {
			hold = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--hold-file") && i + 1 < argc) {
			hold_file = argv[++i];
		} else if (!strcmp(argv[i], "--late")) {
			late = 1;
		} else {
			fprintf(stderr, "usage: nvtx_ranges [--loops N] [--wait-file PATH] "
					"[--then-wait K PATH] [--second-dso] [--fork] [--hold MS] "
					"[--hold-file PATH] [--late]\n");
			return 2;
		}
	}
	injected = getenv("NVTX_INJECTION64_PATH") != NULL || late;
	nvtxInitialize(NULL);
	printf("{\"pid\": %d, \"main\": %d}\n", (int)getpid(), (int)gettid());
	fflush(stdout);
	while (wait_file && stat(wait_file, &st))
		sleep_ms(10);

	nvtxNameOsThreadA((uint32_t)gettid(), "nvtx-main");
	nvtxNameCategoryA(1, "compute");
	nvtxNameCategoryA(2, "io");
	d = nvtxDomainCreateA("bpfsight.test");
	nvtxDomainNameCategoryA(d, 7, "domain-cat");
	r1 = nvtxDomainRegisterStringA(d, "registered-step");
	r2 = nvtxDomainRegisterStringA(d, "registered-mark");
	for (i = 0; i < loops; i++) {
		while (i == then_after && stat(then_file, &st))
			sleep_ms(10);
		loop(i, d, r1, r2, second);
	}
	if (hold >= 0 || hold_file) {
		level(nvtxRangePushA("held"), 0, "held push");
		printf("{\"held\": true}\n");
		fflush(stdout);
		sleep_ms(hold > 0 ? hold : 0);
		while (hold_file && stat(hold_file, &st))
			sleep_ms(10);
		level(nvtxRangePop(), 0, "held pop");
	}
	fflush(stdout);
	if (do_fork) {
		pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0)
			child();
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "nvtx_ranges: child failed\n");
			return 1;
		}
	}
	return 0;
}
