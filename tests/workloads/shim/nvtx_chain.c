// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A tiny NVTX injection library standing in for CUPTI's own NVTX support in the chaining
 * test (BPFSIGHT_NVTX_CHAIN=libnvtx_chain.so, NVTX_INJECTION64_PATH=libbpfsight-shim.so).
 *
 * It installs handlers for push/pop, marks, start/end, thread naming and the domain calls,
 * counts the calls it gets, and checks that the domain, string and range handles handed to
 * it are the ones it gave out (the shim must translate its own). At exit it writes the
 * counts as one JSON object to $BPFSIGHT_TEST_CHAIN_OUT (a forked child to
 * $BPFSIGHT_TEST_CHAIN_OUT.PID: its own calls plus those it inherited at the fork).
 *
 * The handlers run on every thread of the workload at once: each count is an atomic
 * increment (a plain ++ loses one now and then on a loaded machine, and the test then blames
 * the shim for a call it did forward).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#define RANGE_BASE 100000

struct nvtxDomainRegistration_st {
	unsigned int magic;
};

struct nvtxStringRegistration_st {
	unsigned int magic;
};

static struct nvtxDomainRegistration_st my_domain = { 0xd0d0 };
static struct nvtxStringRegistration_st my_strings[64];
static unsigned int nstrings;
static pthread_mutex_t strings_lock = PTHREAD_MUTEX_INITIALIZER;

/* Count one call in n.FIELD, from any thread; the new count. */
#define INC(field)    __atomic_add_fetch(&n.field, 1, __ATOMIC_RELAXED)
#define ADD(field, v) __atomic_add_fetch(&n.field, (v), __ATOMIC_RELAXED)
#define GET(field)    __atomic_load_n(&n.field, __ATOMIC_RELAXED)
#define GET_STRINGS() __atomic_load_n(&nstrings, __ATOMIC_ACQUIRE)

static struct {
	unsigned int inits, push, pop, mark, start, end, name_thread;
	unsigned int domain_create, register_string, domain_push, domain_pop, domain_mark;
	unsigned int domain_start, domain_end, bad_handle;
} n;

static int bad_domain(nvtxDomainHandle_t d)
{
	return d != &my_domain;
}

static int bad_attr(const nvtxEventAttributes_t *a)
{
	const struct nvtxStringRegistration_st *s;

	if (!a || a->messageType != NVTX_MESSAGE_TYPE_REGISTERED)
		return 0;
	s = a->message.registered;
	return !(s >= my_strings && s < my_strings + GET_STRINGS() && s->magic == 0x5151);
}

/* One counting handler a line. */
// clang-format off
static int NVTX_API push_a(const char *m) { INC(push); return 0; }
static int NVTX_API push_w(const wchar_t *m) { INC(push); return 0; }
static int NVTX_API push_ex(const nvtxEventAttributes_t *a) { INC(push); return 0; }
static int NVTX_API pop(void) { INC(pop); return 0; }
static void NVTX_API mark_a(const char *m) { INC(mark); }
static void NVTX_API mark_ex(const nvtxEventAttributes_t *a) { INC(mark); }
static void NVTX_API name_thread(uint32_t tid, const char *name) { INC(name_thread); }

static nvtxRangeId_t NVTX_API start_a(const char *m)
{
	return RANGE_BASE + INC(start);
}
// clang-format on

static void NVTX_API end(nvtxRangeId_t id)
{
	INC(end);
	if (id <= RANGE_BASE || id > RANGE_BASE + GET(start) + GET(domain_start))
		INC(bad_handle);
}

static nvtxDomainHandle_t NVTX_API domain_create(const char *name)
{
	INC(domain_create);
	return &my_domain;
}

static nvtxStringHandle_t NVTX_API register_string(nvtxDomainHandle_t d, const char *s)
{
	unsigned int i;

	INC(register_string);
	ADD(bad_handle, bad_domain(d));
	pthread_mutex_lock(&strings_lock);
	i = nstrings;
	if (i < 64) {
		my_strings[i].magic = 0x5151;
		/* Published after its magic: bad_attr() on another thread sees it whole. */
		__atomic_store_n(&nstrings, i + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&strings_lock);
	return i < 64 ? &my_strings[i] : NULL;
}

static int NVTX_API domain_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	INC(domain_push);
	ADD(bad_handle, bad_domain(d) + bad_attr(a));
	return 0;
}

static int NVTX_API domain_pop(nvtxDomainHandle_t d)
{
	INC(domain_pop);
	ADD(bad_handle, bad_domain(d));
	return 0;
}

static void NVTX_API domain_mark(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	INC(domain_mark);
	ADD(bad_handle, bad_domain(d) + bad_attr(a));
}

static nvtxRangeId_t NVTX_API domain_start(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	ADD(bad_handle, bad_domain(d) + bad_attr(a));
	return RANGE_BASE + GET(start) + INC(domain_start);
}

static void NVTX_API domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
	INC(domain_end);
	ADD(bad_handle, bad_domain(d));
	if (id <= RANGE_BASE || id > RANGE_BASE + GET(start) + GET(domain_start))
		INC(bad_handle);
}

static void set(NvtxFunctionTable t, unsigned int size, unsigned int id, NvtxFunctionPointer f)
{
	if (id < size && t[id])
		*t[id] = f;
}

static pid_t init_pid;

static void report(void)
{
	const char *out = getenv("BPFSIGHT_TEST_CHAIN_OUT");
	char path[4096];
	FILE *f;

	if (!out)
		return;
	if (getpid() != init_pid) {
		snprintf(path, sizeof(path), "%s.%d", out, (int)getpid());
		out = path;
	}
	if (!(f = fopen(out, "w")))
		return;
	fprintf(f,
		"{\"inits\": %u, \"push\": %u, \"pop\": %u, \"mark\": %u, \"start\": %u, "
		"\"end\": %u, \"name_thread\": %u, \"domain_create\": %u, "
		"\"register_string\": %u, \"domain_push\": %u, \"domain_pop\": %u, "
		"\"domain_mark\": %u, \"domain_start\": %u, \"domain_end\": %u, "
		"\"bad_handle\": %u}\n",
		n.inits, n.push, n.pop, n.mark, n.start, n.end, n.name_thread, n.domain_create,
		n.register_string, n.domain_push, n.domain_pop, n.domain_mark, n.domain_start,
		n.domain_end, n.bad_handle);
	fclose(f);
}

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
	const NvtxExportTableCallbacks *cb = get(NVTX_ETID_CALLBACKS);
	NvtxFunctionTable core, core2;
	unsigned int ncore, ncore2;

	if (!cb || !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &ncore) ||
	    !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &ncore2))
		return 0;
	if (INC(inits) == 1) {
		init_pid = getpid();
		atexit(report);
	}
#define F(fn) ((NvtxFunctionPointer)(fn))
	set(core, ncore, NVTX_CBID_CORE_RangePushA, F(push_a));
	set(core, ncore, NVTX_CBID_CORE_RangePushW, F(push_w));
	set(core, ncore, NVTX_CBID_CORE_RangePushEx, F(push_ex));
	set(core, ncore, NVTX_CBID_CORE_RangePop, F(pop));
	set(core, ncore, NVTX_CBID_CORE_MarkA, F(mark_a));
	set(core, ncore, NVTX_CBID_CORE_MarkEx, F(mark_ex));
	set(core, ncore, NVTX_CBID_CORE_RangeStartA, F(start_a));
	set(core, ncore, NVTX_CBID_CORE_RangeEnd, F(end));
	set(core, ncore, NVTX_CBID_CORE_NameOsThreadA, F(name_thread));
	set(core2, ncore2, NVTX_CBID_CORE2_DomainCreateA, F(domain_create));
	set(core2, ncore2, NVTX_CBID_CORE2_DomainRegisterStringA, F(register_string));
	set(core2, ncore2, NVTX_CBID_CORE2_DomainRangePushEx, F(domain_push));
	set(core2, ncore2, NVTX_CBID_CORE2_DomainRangePop, F(domain_pop));
	set(core2, ncore2, NVTX_CBID_CORE2_DomainMarkEx, F(domain_mark));
	set(core2, ncore2, NVTX_CBID_CORE2_DomainRangeStartEx, F(domain_start));
	set(core2, ncore2, NVTX_CBID_CORE2_DomainRangeEnd, F(domain_end));
	return 1;
}
