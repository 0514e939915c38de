// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CUPTI: the CUDA injection entry point, and GPU activity on and off.
 *
 * InitializeInjection (called by libcuda during cuInit, CUDA_INJECTION64_PATH) loads
 * libcupti, checks its version, registers the timestamp callback (CLOCK_MONOTONIC, before
 * anything is enabled) and the thread-id type (SYSTEM: the kernel's tids) and enables
 * nothing: an idle shim costs nothing. When a tracer wants GPU activity the poller
 * subscribes (the way to learn whether another CUPTI client, torch.profiler or Nsight, owns
 * CUPTI: then it backs off and retries every 5 s), registers the buffer callbacks and enables
 * CONCURRENT_KERNEL, MEMCPY, MEMCPY2, MEMSET (never KIND_KERNEL, which serializes kernels)
 * and the API records of the calls that launch work (shim_cbid.c). Its one callback is on
 * while GPU activity is: the resource callbacks of CUDA graph nodes made and copied
 * (shim_graph.c), which cost nothing outside graph building. Off: disable, flush,
 * unsubscribe. Never cuptiFinalize: it is crash-prone in a live process.
 *
 * The per-call API records (cuptiActivityEnableRuntimeApi) tie each kernel to its launch by
 * correlation id. They come only when enabled inside InitializeInjection, before CUDA made a
 * context: on an H100 (CUDA 13.0), enabled later (a job attached with -p, a shim loaded by
 * --inject) they never came, and KIND_RUNTIME/DRIVER, which do, cost on every API call while
 * on (a running job's step 37-40% slower). So later, no API records at all: the recorder links
 * each op to its launch by the order of the stream's launches in its own cuda records
 * (user/shim_channel/order_link.h); so too when CUPTI refuses them at CUDA's start.
 *
 * Every call is checked; a failure goes into a STATUS record once per distinct failure and
 * session, and the shim carries on without GPU records. It always returns 1 to CUDA.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#include "shim.h"

#define BUF_SIZE      (4u << 20) /* one CUPTI activity buffer */
#define FLUSH_MS      1000
#define RETRY_MS      5000
#define MAX_ERRORS    32
#define VERSION_MAJOR 13 /* the record layouts shim_decode.c reads */

/* The CUPTI functions the shim uses, bound by dlsym. */
static struct {
	CUptiResult (*GetVersion)(uint32_t *);
	CUptiResult (*GetResultString)(CUptiResult, const char **);
	CUptiResult (*GetCallbackName)(CUpti_CallbackDomain, uint32_t, const char **);
	CUptiResult (*Subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
	CUptiResult (*Unsubscribe)(CUpti_SubscriberHandle);
	CUptiResult (*SetThreadIdType)(CUpti_ActivityThreadIdType);
	CUptiResult (*ActivityRegisterTimestampCallback)(CUpti_TimestampCallbackFunc);
	CUptiResult (*ActivityRegisterCallbacks)(CUpti_BuffersCallbackRequestFunc,
						 CUpti_BuffersCallbackCompleteFunc);
	CUptiResult (*ActivityEnable)(CUpti_ActivityKind);
	CUptiResult (*ActivityDisable)(CUpti_ActivityKind);
	CUptiResult (*ActivityEnableRuntimeApi)(CUpti_CallbackId, uint8_t);
	CUptiResult (*ActivityEnableDriverApi)(CUpti_CallbackId, uint8_t);
	CUptiResult (*ActivityFlushAll)(uint32_t);
	CUptiResult (*ActivityGetNextRecord)(uint8_t *, size_t, CUpti_Activity **);
	CUptiResult (*ActivityGetNumDroppedRecords)(CUcontext, uint32_t, size_t *);
	/* Optional (CUDA graph nodes: shim_graph.c): without them, no node is recorded. */
	CUptiResult (*EnableCallback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
				      CUpti_CallbackId);
} cupti;

// clang-format off
static const struct {
	const char *name;
	void **fn;
} syms[] = {
#define CUPTI_SYM(f) { "cupti" #f, (void **)&cupti.f }
	CUPTI_SYM(GetVersion),
	CUPTI_SYM(GetResultString),
	CUPTI_SYM(GetCallbackName),
	CUPTI_SYM(Subscribe),
	CUPTI_SYM(Unsubscribe),
	CUPTI_SYM(SetThreadIdType),
	CUPTI_SYM(ActivityRegisterTimestampCallback),
	CUPTI_SYM(ActivityRegisterCallbacks),
	CUPTI_SYM(ActivityEnable),
	CUPTI_SYM(ActivityDisable),
	CUPTI_SYM(ActivityEnableRuntimeApi),
	CUPTI_SYM(ActivityEnableDriverApi),
	CUPTI_SYM(ActivityFlushAll),
	CUPTI_SYM(ActivityGetNextRecord),
	CUPTI_SYM(ActivityGetNumDroppedRecords),
#undef CUPTI_SYM
};
// clang-format on

static const CUpti_ActivityKind kinds[] = {
	CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
	CUPTI_ACTIVITY_KIND_MEMCPY,
	CUPTI_ACTIVITY_KIND_MEMCPY2,
	CUPTI_ACTIVITY_KIND_MEMSET,
};

pthread_mutex_t shim_cupti_load_lock = PTHREAD_MUTEX_INITIALIZER;
static int load_err = 1; /* 1: not tried yet */
static uint32_t version;
static bool usable; /* loaded, a version we can read, initialized */

/* GPU on/off state: the poller's (under its ctl lock). */
static struct {
	bool on;
	bool apis; /* per-call API records on (enabled at CUDA's start) */
	CUpti_SubscriberHandle sub;
	uint64_t retry_at;
	uint64_t last_flush;
} gpu;

/* True while InitializeInjection polls: CUDA is starting, it has no context yet. */
static atomic_bool at_cuda_start;

/* Distinct failures, reported once per session. */
pthread_mutex_t shim_cupti_err_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char what[96];
	int result;
	uint32_t session; /* the last session it was reported in */
} errors[MAX_ERRORS];
static unsigned int nerrors;

static void report(uint32_t session, const char *what, int result)
{
	shim_core__status(session, BS_SHIM_EV_CUPTI_ERROR, result, what, 0);
}

void shim_cupti__fail(const char *what, int result)
{
	uint32_t session = atomic_load(&shim_session);
	bool now = false;
	unsigned int i;

	pthread_mutex_lock(&shim_cupti_err_lock);
	for (i = 0; i < nerrors; i++)
		if (errors[i].result == result && !strcmp(errors[i].what, what))
			break;
	if (i == nerrors && nerrors < MAX_ERRORS) {
		snprintf(errors[i].what, sizeof(errors[i].what), "%s", what);
		errors[i].result = result;
		errors[i].session = 0;
		nerrors++;
		shim_log("%s failed: %d", what, result);
	}
	if (i < nerrors && session && errors[i].session != session) {
		errors[i].session = session;
		now = true;
	}
	pthread_mutex_unlock(&shim_cupti_err_lock);
	if (now)
		report(session, what, result);
}

void shim_cupti__report_errors(uint32_t session)
{
	unsigned int i;
	char what[96];
	int result;

	for (i = 0;; i++) {
		pthread_mutex_lock(&shim_cupti_err_lock);
		if (i >= nerrors) {
			pthread_mutex_unlock(&shim_cupti_err_lock);
			break;
		}
		errors[i].session = session;
		memcpy(what, errors[i].what, sizeof(what));
		result = errors[i].result;
		pthread_mutex_unlock(&shim_cupti_err_lock);
		report(session, what, result);
	}
}

/* R of call WHAT: false (reported) when it failed. */
static bool ok(CUptiResult r, const char *what)
{
	if (r == CUPTI_SUCCESS)
		return true;
	shim_cupti__fail(what, (int)r);
	return false;
}

const char *shim_cupti__callback_name(uint32_t domain, uint32_t cbid)
{
	const char *name = NULL;

	if (!cupti.GetCallbackName ||
	    cupti.GetCallbackName((CUpti_CallbackDomain)domain, cbid, &name) != CUPTI_SUCCESS)
		return NULL;
	return name;
}

uint32_t shim_cupti__version(void)
{
	return version;
}

static int load_locked(void)
{
	void *lib = shim_find__cupti();
	size_t i;

	if (!lib) {
		shim_cupti__fail("libcupti.so.13 not found (set BPFSIGHT_CUPTI_PATH)", 0);
		return -ENOENT;
	}
	for (i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		*syms[i].fn = dlsym(lib, syms[i].name);
		if (!*syms[i].fn) {
			char what[96];

			snprintf(what, sizeof(what), "dlsym %s", syms[i].name);
			shim_cupti__fail(what, 0);
			memset(&cupti, 0, sizeof(cupti));
			return -ENOENT;
		}
	}
	*(void **)&cupti.EnableCallback = dlsym(lib, "cuptiEnableCallback");
	shim_graph__bind(dlsym(lib, "cuptiGetGraphNodeId"), dlsym(lib, "cuptiGetGraphId"));
	return 0;
}

int shim_cupti__load(void)
{
	pthread_mutex_lock(&shim_cupti_load_lock);
	if (load_err == 1)
		load_err = load_locked();
	pthread_mutex_unlock(&shim_cupti_load_lock);
	return load_err;
}

static uint64_t CUPTIAPI timestamp(void)
{
	return shim_now();
}

void shim_cupti__init(void)
{
	char what[96];

	if (shim_cupti__load())
		return;
	if (!ok(cupti.GetVersion(&version), "cuptiGetVersion"))
		return;
	shim_log("CUPTI version %u", version);
	/* CUPTI fills the newest record layouts it knows: only 13.x matches our decoder. */
	if (version / 10000 != VERSION_MAJOR) {
		snprintf(what, sizeof(what), "CUPTI version %u is not 13.x: GPU records off",
			 version);
		shim_cupti__fail(what, CUPTI_ERROR_NOT_COMPATIBLE);
		return;
	}
	/* Both before anything is enabled, so that every record is in our clock and tids. */
	if (!ok(cupti.ActivityRegisterTimestampCallback(timestamp),
		"cuptiActivityRegisterTimestampCallback"))
		return;
	ok(cupti.SetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM), "cuptiSetThreadIdType");
	usable = true;
}

SHIM_EXPORT int InitializeInjection(void)
{
	shim_core__enter(BS_SHIM_ST_CUDA_INJECTED);
	shim_cupti__init();
	atomic_store(&at_cuda_start, true);
	shim_core__poll_now();
	atomic_store(&at_cuda_start, false);
	return 1; /* whatever happened: the application runs as it would without us */
}

int shim_cupti__consume(uint8_t *buf, size_t valid)
{
	uint32_t session = atomic_load(&shim_session);
	CUpti_Activity *rec = NULL;
	struct shim_thread *t;
	CUptiResult r;
	int n = 0;

	if (!session || !cupti.ActivityGetNextRecord)
		return 0;
	t = shim_thread__self();
	if (!t)
		return 0;
	shim_thread__lock(t);
	while ((r = cupti.ActivityGetNextRecord(buf, valid, &rec)) == CUPTI_SUCCESS)
		n += shim_decode__record(t, session, rec);
	shim_thread__unlock(t);
	if (r != CUPTI_ERROR_MAX_LIMIT_REACHED)
		ok(r, "cuptiActivityGetNextRecord");
	return n;
}

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
	void *p = NULL;

	/* Without a buffer CUPTI drops the records and counts them (read back below). */
	if (posix_memalign(&p, 8, BUF_SIZE))
		p = NULL;
	*buf = p;
	*size = p ? BUF_SIZE : 0;
	*max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
				      size_t valid)
{
	size_t dropped = 0;

	if (buf && valid)
		shim_cupti__consume(buf, valid);
	free(buf);
	if (ok(cupti.ActivityGetNumDroppedRecords(ctx, stream, &dropped),
	       "cuptiActivityGetNumDroppedRecords") &&
	    dropped)
		shim_core__add_dropped(dropped);
}

/* Only the resource callbacks of graph nodes are enabled (graph_nodes_on). */
static void CUPTIAPI on_callback(void *data, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
				 const void *info)
{
	if (domain == CUPTI_CB_DOMAIN_RESOURCE)
		shim_graph__callback(cbid, info);
}

/* The graph nodes made and copied while GPU activity is on (unsubscribing ends them). */
static void graph_nodes_on(void)
{
	static const CUpti_CallbackId cbids[] = { CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
						  CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED };

	if (!cupti.EnableCallback)
		return;
	for (size_t i = 0; i < sizeof(cbids) / sizeof(cbids[0]); i++)
		ok(cupti.EnableCallback(1, gpu.sub, CUPTI_CB_DOMAIN_RESOURCE, cbids[i]),
		   "cuptiEnableCallback (graph nodes)");
}

/* Per-cbid API records; false when CUPTI refused the first (then there are none). */
static bool enable_apis(uint8_t on)
{
	size_t i;

	for (i = 0; i < shim_cbid_runtime_nr; i++)
		if (cupti.ActivityEnableRuntimeApi(shim_cbid_runtime[i].cbid, on) !=
			    CUPTI_SUCCESS &&
		    i == 0)
			return false;
	for (i = 0; i < shim_cbid_driver_nr; i++)
		cupti.ActivityEnableDriverApi(shim_cbid_driver[i].cbid, on);
	return true;
}

static void gpu_on(uint64_t now)
{
	CUptiResult r;
	size_t i;

	gpu.retry_at = now + RETRY_MS * SHIM_NS_PER_MS;
	r = cupti.Subscribe(&gpu.sub, on_callback, NULL);
	if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		/* torch.profiler, Nsight...: theirs until they let go. */
		if (!(shim_core__state() & BS_SHIM_ST_CUPTI_BUSY)) {
			shim_core__set_state(BS_SHIM_ST_CUPTI_BUSY, 0);
			shim_core__status(atomic_load(&shim_session), BS_SHIM_EV_CUPTI_ERROR,
					  (int32_t)r, "another CUPTI client", 0);
		}
		gpu.sub = NULL;
		return;
	}
	if (!ok(r, "cuptiSubscribe")) {
		gpu.sub = NULL;
		return;
	}
	shim_core__set_state(0, BS_SHIM_ST_CUPTI_BUSY);
	if (!ok(cupti.ActivityRegisterCallbacks(buffer_requested, buffer_completed),
		"cuptiActivityRegisterCallbacks")) {
		cupti.Unsubscribe(gpu.sub);
		gpu.sub = NULL;
		return;
	}
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		ok(cupti.ActivityEnable(kinds[i]), "cuptiActivityEnable");
	graph_nodes_on();
	gpu.apis = atomic_load(&at_cuda_start) && enable_apis(1);
	gpu.on = true;
	gpu.last_flush = now;
	shim_core__set_state(BS_SHIM_ST_GPU_ON, 0);
	shim_log("GPU activity on%s", gpu.apis ? "" : " (no API records: linked by launch order)");
}

static void gpu_off(void)
{
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		ok(cupti.ActivityDisable(kinds[i]), "cuptiActivityDisable");
	if (gpu.apis)
		enable_apis(0);
	/* What is still in CUPTI's buffers goes out now (the tracer may still listen). */
	ok(cupti.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
	ok(cupti.Unsubscribe(gpu.sub), "cuptiUnsubscribe");
	gpu.sub = NULL;
	gpu.on = false;
	shim_core__set_state(0, BS_SHIM_ST_GPU_ON);
	shim_log("GPU activity off");
}

void shim_cupti__poll(bool want, uint64_t now)
{
	if (!want) {
		if (gpu.on)
			gpu_off();
		gpu.retry_at = 0;
		return;
	}
	if (!gpu.on) {
		if (usable && now >= gpu.retry_at)
			gpu_on(now);
		return;
	}
	/*
	 * On before CUDA started (a preloaded shim, -t torch or mem, sees libcuda mapped before
	 * cuInit calls InitializeInjection): the API records now, while CUDA makes no context
	 * yet. Without them an H200's captured CUDA graph's replays were linked to nothing.
	 */
	if (!gpu.apis && atomic_load(&at_cuda_start)) {
		gpu.apis = enable_apis(1);
		shim_log("GPU activity: API records on at CUDA's start%s",
			 gpu.apis ? "" : " refused");
	}
	if (now - gpu.last_flush >= FLUSH_MS * SHIM_NS_PER_MS) {
		ok(cupti.ActivityFlushAll(0), "cuptiActivityFlushAll");
		gpu.last_flush = now;
	}
}

bool shim_cupti__usable(void)
{
	return usable;
}

void shim_cupti__flush(bool forced)
{
	if (gpu.on)
		ok(cupti.ActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0),
		   "cuptiActivityFlushAll");
}

#ifdef SHIM_TEST_HOOK
/*
 * Test hook, only in the test variant (libbpfsight-shim-test.so, exports-test.map; the
 * shipped library exports the two injection entry points alone): the bufferCompleted decode path on a caller-made buffer of CUPTI 13 records.
 * Records are written only while a tracer is attached, as always. Returns the records
 * written, or -1 without libcupti (its record iterator is what walks the buffer).
 */
SHIM_EXPORT int bpfsight_shim_test_feed(const uint8_t *buf, size_t valid)
{
	if (shim_cupti__load())
		return -1;
	return shim_cupti__consume((uint8_t *)buf, valid);
}

/*
 * The test variant's graph-node hook: the record the resource callback writes for a node made
 * (ORIG_NODE 0) or copied, with the ids CUPTI would have given, at TS on the calling thread.
 */
SHIM_EXPORT void bpfsight_shim_test_graph_node(uint64_t node, uint64_t orig_node, uint32_t graph,
					       uint32_t orig_graph, uint32_t type, uint64_t ts)
{
	shim_graph__emit(node, orig_node, graph, orig_graph, type, ts);
}
#endif
