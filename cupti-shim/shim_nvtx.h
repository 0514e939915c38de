/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Between the NVTX handlers (shim_nvtx_inject.c) and the NVTX recording (shim_nvtx.c).
 *
 * The handlers' fast paths are here, inline: while recording is off a call keeps the
 * per-thread push depth (the values NVTX returns: push the new range's 0-based level, pop
 * the level ended, -1 on error), loads one flag and returns. The *_slow functions record.
 */
#ifndef BPFSIGHT_SHIM_NVTX_H
#define BPFSIGHT_SHIM_NVTX_H

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include "shim.h"

#define SHIM_NVTX_DOMAINS 64 /* per-thread depth slots; 0: the default domain; the last shared */

/* The opaque NVTX handle types are the tool's to define. */
struct nvtxDomainRegistration_st {
	struct nvtxDomainRegistration_st *next;
	struct shim_str *name;
	uint32_t slot;		    /* in shim_nvtx_depth */
	nvtxDomainHandle_t chained; /* the chained library's handle for it */
};

struct nvtxStringRegistration_st {
	struct nvtxStringRegistration_st *next;
	nvtxDomainHandle_t domain;
	struct shim_str *str;
	nvtxStringHandle_t chained;
};

/* Where a call's message and attributes come from (parsed only when recording). */
struct shim_nvtx_src {
	const nvtxEventAttributes_t *attr;
	const char *a;
	const wchar_t *w;
};

extern __thread int32_t shim_nvtx_depth[SHIM_NVTX_DOMAINS];
extern _Atomic uint64_t shim_nvtx_last_range_id;

void shim_nvtx__push_slow(nvtxDomainHandle_t d, const struct shim_nvtx_src *src, int level,
			  uint32_t hot);
void shim_nvtx__pop_slow(nvtxDomainHandle_t d, int level, uint32_t hot);
void shim_nvtx__start_slow(nvtxDomainHandle_t d, const struct shim_nvtx_src *src, uint64_t id,
			   uint32_t hot);
void shim_nvtx__end_slow(uint64_t id, uint32_t hot);
void shim_nvtx__mark_slow(nvtxDomainHandle_t d, const struct shim_nvtx_src *src, uint32_t hot);
/* A thread or category name (BS_NVTX_NAME_*): kept whatever the state, written if on. */
void shim_nvtx__name(uint32_t kind, uint64_t key, nvtxDomainHandle_t d, struct shim_str *text);
/* One handle per domain name, and per (domain, registered string); NULL: out of memory. */
nvtxDomainHandle_t shim_nvtx__domain(struct shim_str *name);
nvtxStringHandle_t shim_nvtx__register(nvtxDomainHandle_t d, struct shim_str *text);
bool shim_nvtx__attr_ok(const nvtxEventAttributes_t *a);

static inline uint32_t shim_nvtx__hot(void)
{
	return atomic_load_explicit(&shim_hot, memory_order_relaxed);
}

static inline int shim_nvtx__push(nvtxDomainHandle_t d, const struct shim_nvtx_src *src)
{
	int level = shim_nvtx_depth[d ? d->slot : 0]++;
	uint32_t hot = shim_nvtx__hot();

	if (hot)
		shim_nvtx__push_slow(d, src, level, hot);
	return level;
}

static inline int shim_nvtx__pop(nvtxDomainHandle_t d)
{
	int32_t *depth = &shim_nvtx_depth[d ? d->slot : 0];
	uint32_t hot;
	int level;

	if (*depth <= 0)
		return -1; /* a pop without a push */
	level = --*depth;
	hot = shim_nvtx__hot();
	if (hot)
		shim_nvtx__pop_slow(d, level, hot);
	return level;
}

/*
 * CHAINED_ID: the id the chained library gave the range (0: none). Its ids then become
 * ours, so that the end call, which carries one id, can go to both of us.
 */
static inline nvtxRangeId_t shim_nvtx__start(nvtxDomainHandle_t d, const struct shim_nvtx_src *src,
					     uint64_t chained_id)
{
	uint64_t id = chained_id;
	uint32_t hot;

	if (!id)
		id = atomic_fetch_add_explicit(&shim_nvtx_last_range_id, 1, memory_order_relaxed) +
		     1;
	hot = shim_nvtx__hot();
	if (hot)
		shim_nvtx__start_slow(d, src, id, hot);
	return id;
}

static inline void shim_nvtx__end(uint64_t id)
{
	uint32_t hot = shim_nvtx__hot();

	if (hot)
		shim_nvtx__end_slow(id, hot);
}

static inline void shim_nvtx__mark(nvtxDomainHandle_t d, const struct shim_nvtx_src *src)
{
	uint32_t hot = shim_nvtx__hot();

	if (hot)
		shim_nvtx__mark_slow(d, src, hot);
}

/* shim_nvtx_inject.c: the NVTX entry point (one call per NVTX instance). */
int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);
/*
 * shim_nvtx_late.c, for an injected shim (poller, every poll once NVTX is wanted; FIRST: the
 * first time): instrument the process's NVTX instances visible in .symtab that are
 * initialized (and not taken yet); returns how many this call took.
 */
unsigned int shim_nvtx_late__inject(bool first);

#endif /* BPFSIGHT_SHIM_NVTX_H */
