// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The NVTX injection: InitializeInjectionNvtx2 fills the CORE and CORE2 callback tables of
 * each NVTX instance (every DSO built with the header-only nvtx3 has its own, and each calls
 * us) with the handlers below, which record through shim_nvtx.h.
 *
 * BPFSIGHT_NVTX_CHAIN=/path/lib.so: that library (e.g. libcupti.so, for CUPTI's own NVTX
 * support) is initialized on the same tables first and each handler then calls what it
 * installed, with its own domain and string handles.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "shim_nvtx.h"

pthread_mutex_t shim_nvtx_chain_lock = PTHREAD_MUTEX_INITIALIZER;
static NvtxFunctionPointer chain_core[NVTX_CBID_CORE_SIZE];
static NvtxFunctionPointer chain_core2[NVTX_CBID_CORE2_SIZE];
#define CORE_FN(name)                                                                              \
	((nvtx##name##_impl_fntype)__atomic_load_n(&chain_core[NVTX_CBID_CORE_##name],             \
						   __ATOMIC_RELAXED))
#define CORE2_FN(name)                                                                             \
	((nvtx##name##_impl_fntype)__atomic_load_n(&chain_core2[NVTX_CBID_CORE2_##name],           \
						   __ATOMIC_RELAXED))

static nvtxDomainHandle_t chained_domain(nvtxDomainHandle_t d)
{
	return d ? d->chained : NULL;
}

/* Attributes for the chained library: its own handle for a registered message. */
static const nvtxEventAttributes_t *chained_attr(const nvtxEventAttributes_t *a,
						 nvtxEventAttributes_t *tmp)
{
	if (!shim_nvtx__attr_ok(a) || a->messageType != NVTX_MESSAGE_TYPE_REGISTERED ||
	    !a->message.registered)
		return a;
	memset(tmp, 0, sizeof(*tmp));
	memcpy(tmp, a, a->size < sizeof(*tmp) ? a->size : sizeof(*tmp));
	tmp->message.registered = a->message.registered->chained;
	return tmp;
}

/* ---- the handlers ---- */

static void NVTX_API h_MarkEx(const nvtxEventAttributes_t *a)
{
	struct shim_nvtx_src s = { .attr = a };
	nvtxMarkEx_impl_fntype f = CORE_FN(MarkEx);
	nvtxEventAttributes_t tmp;

	shim_nvtx__mark(NULL, &s);
	if (f)
		f(chained_attr(a, &tmp));
}

static void NVTX_API h_MarkA(const char *msg)
{
	struct shim_nvtx_src s = { .a = msg };
	nvtxMarkA_impl_fntype f = CORE_FN(MarkA);

	shim_nvtx__mark(NULL, &s);
	if (f)
		f(msg);
}

static void NVTX_API h_MarkW(const wchar_t *msg)
{
	struct shim_nvtx_src s = { .w = msg };
	nvtxMarkW_impl_fntype f = CORE_FN(MarkW);

	shim_nvtx__mark(NULL, &s);
	if (f)
		f(msg);
}

static nvtxRangeId_t NVTX_API h_RangeStartEx(const nvtxEventAttributes_t *a)
{
	struct shim_nvtx_src s = { .attr = a };
	nvtxRangeStartEx_impl_fntype f = CORE_FN(RangeStartEx);
	nvtxEventAttributes_t tmp;

	return shim_nvtx__start(NULL, &s, f ? f(chained_attr(a, &tmp)) : 0);
}

static nvtxRangeId_t NVTX_API h_RangeStartA(const char *msg)
{
	struct shim_nvtx_src s = { .a = msg };
	nvtxRangeStartA_impl_fntype f = CORE_FN(RangeStartA);

	return shim_nvtx__start(NULL, &s, f ? f(msg) : 0);
}

static nvtxRangeId_t NVTX_API h_RangeStartW(const wchar_t *msg)
{
	struct shim_nvtx_src s = { .w = msg };
	nvtxRangeStartW_impl_fntype f = CORE_FN(RangeStartW);

	return shim_nvtx__start(NULL, &s, f ? f(msg) : 0);
}

static void NVTX_API h_RangeEnd(nvtxRangeId_t id)
{
	nvtxRangeEnd_impl_fntype f = CORE_FN(RangeEnd);

	shim_nvtx__end(id);
	if (f)
		f(id);
}

static int NVTX_API h_RangePushEx(const nvtxEventAttributes_t *a)
{
	struct shim_nvtx_src s = { .attr = a };
	nvtxRangePushEx_impl_fntype f = CORE_FN(RangePushEx);
	nvtxEventAttributes_t tmp;

	if (f)
		f(chained_attr(a, &tmp));
	return shim_nvtx__push(NULL, &s);
}

static int NVTX_API h_RangePushA(const char *msg)
{
	struct shim_nvtx_src s = { .a = msg };
	nvtxRangePushA_impl_fntype f = CORE_FN(RangePushA);

	if (f)
		f(msg);
	return shim_nvtx__push(NULL, &s);
}

static int NVTX_API h_RangePushW(const wchar_t *msg)
{
	struct shim_nvtx_src s = { .w = msg };
	nvtxRangePushW_impl_fntype f = CORE_FN(RangePushW);

	if (f)
		f(msg);
	return shim_nvtx__push(NULL, &s);
}

static int NVTX_API h_RangePop(void)
{
	nvtxRangePop_impl_fntype f = CORE_FN(RangePop);
	int level = shim_nvtx__pop(NULL);

	if (f)
		f();
	return level;
}

static void NVTX_API h_NameCategoryA(uint32_t cat, const char *text)
{
	nvtxNameCategoryA_impl_fntype f = CORE_FN(NameCategoryA);

	shim_nvtx__name(BS_NVTX_NAME_CATEGORY, cat, NULL, shim_str__intern_c(text));
	if (f)
		f(cat, text);
}

static void NVTX_API h_NameCategoryW(uint32_t cat, const wchar_t *text)
{
	nvtxNameCategoryW_impl_fntype f = CORE_FN(NameCategoryW);

	shim_nvtx__name(BS_NVTX_NAME_CATEGORY, cat, NULL, shim_str__intern_wide(text));
	if (f)
		f(cat, text);
}

static void NVTX_API h_NameOsThreadA(uint32_t tid, const char *text)
{
	nvtxNameOsThreadA_impl_fntype f = CORE_FN(NameOsThreadA);

	shim_nvtx__name(BS_NVTX_NAME_THREAD, tid, NULL, shim_str__intern_c(text));
	if (f)
		f(tid, text);
}

static void NVTX_API h_NameOsThreadW(uint32_t tid, const wchar_t *text)
{
	nvtxNameOsThreadW_impl_fntype f = CORE_FN(NameOsThreadW);

	shim_nvtx__name(BS_NVTX_NAME_THREAD, tid, NULL, shim_str__intern_wide(text));
	if (f)
		f(tid, text);
}

static void NVTX_API h_DomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	struct shim_nvtx_src s = { .attr = a };
	nvtxDomainMarkEx_impl_fntype f = CORE2_FN(DomainMarkEx);
	nvtxEventAttributes_t tmp;

	shim_nvtx__mark(d, &s);
	if (f)
		f(chained_domain(d), chained_attr(a, &tmp));
}

static nvtxRangeId_t NVTX_API h_DomainRangeStartEx(nvtxDomainHandle_t d,
						   const nvtxEventAttributes_t *a)
{
	struct shim_nvtx_src s = { .attr = a };
	nvtxDomainRangeStartEx_impl_fntype f = CORE2_FN(DomainRangeStartEx);
	nvtxEventAttributes_t tmp;

	return shim_nvtx__start(d, &s, f ? f(chained_domain(d), chained_attr(a, &tmp)) : 0);
}

static void NVTX_API h_DomainRangeEnd(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
	nvtxDomainRangeEnd_impl_fntype f = CORE2_FN(DomainRangeEnd);

	shim_nvtx__end(id);
	if (f)
		f(chained_domain(d), id);
}

static int NVTX_API h_DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	struct shim_nvtx_src s = { .attr = a };
	nvtxDomainRangePushEx_impl_fntype f = CORE2_FN(DomainRangePushEx);
	nvtxEventAttributes_t tmp;

	if (f)
		f(chained_domain(d), chained_attr(a, &tmp));
	return shim_nvtx__push(d, &s);
}

static int NVTX_API h_DomainRangePop(nvtxDomainHandle_t d)
{
	nvtxDomainRangePop_impl_fntype f = CORE2_FN(DomainRangePop);
	int level = shim_nvtx__pop(d);

	if (f)
		f(chained_domain(d));
	return level;
}

static void NVTX_API h_DomainNameCategoryA(nvtxDomainHandle_t d, uint32_t cat, const char *text)
{
	nvtxDomainNameCategoryA_impl_fntype f = CORE2_FN(DomainNameCategoryA);

	shim_nvtx__name(BS_NVTX_NAME_CATEGORY, cat, d, shim_str__intern_c(text));
	if (f)
		f(chained_domain(d), cat, text);
}

static void NVTX_API h_DomainNameCategoryW(nvtxDomainHandle_t d, uint32_t cat, const wchar_t *text)
{
	nvtxDomainNameCategoryW_impl_fntype f = CORE2_FN(DomainNameCategoryW);

	shim_nvtx__name(BS_NVTX_NAME_CATEGORY, cat, d, shim_str__intern_wide(text));
	if (f)
		f(chained_domain(d), cat, text);
}

static nvtxStringHandle_t NVTX_API h_DomainRegisterStringA(nvtxDomainHandle_t d, const char *text)
{
	nvtxDomainRegisterStringA_impl_fntype f = CORE2_FN(DomainRegisterStringA);
	nvtxStringHandle_t r = shim_nvtx__register(d, shim_str__intern_c(text));

	if (r && f && !r->chained)
		r->chained = f(chained_domain(d), text);
	return r;
}

static nvtxStringHandle_t NVTX_API h_DomainRegisterStringW(nvtxDomainHandle_t d,
							   const wchar_t *text)
{
	nvtxDomainRegisterStringW_impl_fntype f = CORE2_FN(DomainRegisterStringW);
	nvtxStringHandle_t r = shim_nvtx__register(d, shim_str__intern_wide(text));

	if (r && f && !r->chained)
		r->chained = f(chained_domain(d), text);
	return r;
}

static nvtxDomainHandle_t NVTX_API h_DomainCreateA(const char *text)
{
	nvtxDomainCreateA_impl_fntype f = CORE2_FN(DomainCreateA);
	nvtxDomainHandle_t d = shim_nvtx__domain(shim_str__intern_c(text));

	if (d && f && !d->chained)
		d->chained = f(text);
	return d;
}

static nvtxDomainHandle_t NVTX_API h_DomainCreateW(const wchar_t *text)
{
	nvtxDomainCreateW_impl_fntype f = CORE2_FN(DomainCreateW);
	nvtxDomainHandle_t d = shim_nvtx__domain(shim_str__intern_wide(text));

	if (d && f && !d->chained)
		d->chained = f(text);
	return d;
}

/* Domains live as long as the process: a handle used after its destroy stays harmless. */
static void NVTX_API h_DomainDestroy(nvtxDomainHandle_t d)
{
	nvtxDomainDestroy_impl_fntype f = CORE2_FN(DomainDestroy);

	if (f && d && d->chained) {
		f(d->chained);
		d->chained = NULL;
	}
}

static void NVTX_API h_Initialize(const void *reserved)
{
	nvtxInitialize_impl_fntype f = CORE2_FN(Initialize);

	if (f)
		f(reserved);
}

#define H(mod, name) [NVTX_CBID_##mod##_##name] = (NvtxFunctionPointer)h_##name

static const NvtxFunctionPointer core_handlers[NVTX_CBID_CORE_SIZE] = {
	H(CORE, MarkEx),	H(CORE, MarkA),		H(CORE, MarkW),
	H(CORE, RangeStartEx),	H(CORE, RangeStartA),	H(CORE, RangeStartW),
	H(CORE, RangeEnd),	H(CORE, RangePushEx),	H(CORE, RangePushA),
	H(CORE, RangePushW),	H(CORE, RangePop),	H(CORE, NameCategoryA),
	H(CORE, NameCategoryW), H(CORE, NameOsThreadA), H(CORE, NameOsThreadW),
};

static const NvtxFunctionPointer core2_handlers[NVTX_CBID_CORE2_SIZE] = {
	H(CORE2, DomainMarkEx),
	H(CORE2, DomainRangeStartEx),
	H(CORE2, DomainRangeEnd),
	H(CORE2, DomainRangePushEx),
	H(CORE2, DomainRangePop),
	H(CORE2, DomainNameCategoryA),
	H(CORE2, DomainNameCategoryW),
	H(CORE2, DomainRegisterStringA),
	H(CORE2, DomainRegisterStringW),
	H(CORE2, DomainCreateA),
	H(CORE2, DomainCreateW),
	H(CORE2, DomainDestroy),
	H(CORE2, Initialize),
};

#define TABLE_MAX                                                                                  \
	((int)NVTX_CBID_CORE_SIZE > (int)NVTX_CBID_CORE2_SIZE ? (int)NVTX_CBID_CORE_SIZE           \
							      : (int)NVTX_CBID_CORE2_SIZE)

/* One NVTX module table of an instance: N slots, each a pointer to a function pointer. */
struct table {
	NvtxFunctionTable slots;
	unsigned int n;
	unsigned int size; /* the module's callback-id count in our headers */
	NvtxFunctionPointer *chain;
	const NvtxFunctionPointer *ours;
};

static NvtxFunctionPointer slot_get(const struct table *tb, unsigned int i)
{
	return i < tb->n && tb->slots[i] ? *tb->slots[i] : NULL;
}

/* Let the chained library fill the instance's tables first, and keep what it installed. */
static void chain_instance(NvtxGetExportTableFunc_t get, struct table *tabs, int ntabs)
{
	static NvtxInitializeInjectionNvtxFunc_t init;
	static bool tried;
	NvtxFunctionPointer before[2][TABLE_MAX];
	const char *path = secure_getenv("BPFSIGHT_NVTX_CHAIN");
	NvtxFunctionPointer now;
	unsigned int i;
	void *lib;
	int k;

	if (!path || !*path)
		return;
	pthread_mutex_lock(&shim_nvtx_chain_lock);
	if (!tried) {
		tried = true;
		lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (lib)
			*(void **)&init = dlsym(lib, "InitializeInjectionNvtx2");
		if (!init)
			shim_log("BPFSIGHT_NVTX_CHAIN=%s: %s", path,
				 lib ? "no InitializeInjectionNvtx2" : dlerror());
	}
	pthread_mutex_unlock(&shim_nvtx_chain_lock);
	if (!init)
		return;
	for (k = 0; k < ntabs; k++)
		for (i = 0; i < tabs[k].size; i++)
			before[k][i] = slot_get(&tabs[k], i);
	if (!init(get)) {
		shim_log("BPFSIGHT_NVTX_CHAIN=%s: its initialization failed", path);
		return;
	}
	/* What changed is the chained library's; the first instance's pointers are kept. */
	for (k = 0; k < ntabs; k++) {
		for (i = 1; i < tabs[k].size; i++) {
			now = slot_get(&tabs[k], i);
			if (now && now != before[k][i] &&
			    !__atomic_load_n(&tabs[k].chain[i], __ATOMIC_RELAXED))
				__atomic_store_n(&tabs[k].chain[i], now, __ATOMIC_RELAXED);
		}
	}
	shim_core__set_state(BS_SHIM_ST_NVTX_CHAINED, 0);
}

SHIM_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
	const NvtxExportTableCallbacks *cb;
	struct table tabs[2] = {
		{ .size = NVTX_CBID_CORE_SIZE, .chain = chain_core, .ours = core_handlers },
		{ .size = NVTX_CBID_CORE2_SIZE, .chain = chain_core2, .ours = core2_handlers },
	};
	unsigned int i;
	int k;

	shim_core__enter(BS_SHIM_ST_NVTX_INJECTED);
	cb = get ? get(NVTX_ETID_CALLBACKS) : NULL;
	if (!cb || cb->struct_size < sizeof(*cb) || !cb->GetModuleFunctionTable)
		return 0;
	if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &tabs[0].slots, &tabs[0].n) ||
	    !tabs[0].slots)
		return 0;
	if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &tabs[1].slots, &tabs[1].n))
		tabs[1].slots = NULL;
	if (!tabs[1].slots)
		tabs[1].n = 0;
	chain_instance(get, tabs, 2);
	for (k = 0; k < 2; k++)
		for (i = 1; i < tabs[k].size && i < tabs[k].n; i++)
			if (tabs[k].slots[i] && tabs[k].ours[i])
				*tabs[k].slots[i] = tabs[k].ours[i];
	shim_log("NVTX instance %p initialized", (void *)get);
	shim_core__poll_now();
	return 1;
}
