/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The shim's USDT probes, provider "bpfsight" (the contract: bpf/shim_records.h). Each probe
 * has a semaphore: a tracer attaching the probe makes the kernel bump it in this process
 * (uprobe ref_ctr), which is how the shim learns what is wanted without any other channel.
 * The channel's, gpu's and nvtx's semaphores are defined in shim_core.c; a module's in its
 * own files (shim_modules.c), with SHIM_SEMAPHORE.
 *
 * Every argument is passed as a plain 64-bit integer so the tracer's argument-spec parser
 * only ever sees simple "8@%reg" operands.
 */
#ifndef BPFSIGHT_SHIM_USDT_H
#define BPFSIGHT_SHIM_USDT_H

#define _SDT_HAS_SEMAPHORES 1
#include <stdint.h>
#include <sys/sdt.h>

extern unsigned short bpfsight_batch_semaphore;
extern unsigned short bpfsight_gpu_semaphore;
extern unsigned short bpfsight_nvtx_semaphore;
extern unsigned short bpfsight_sync_semaphore;
extern unsigned short bpfsight_drain_semaphore;
extern unsigned short bpfsight_join_semaphore;

/* A semaphore's definition (once per name, in the file that owns the site). */
#define SHIM_SEMAPHORE(name)                                                                       \
	unsigned short bpfsight_##name##_semaphore __attribute__((section(".probes"), used))

/* The kernel writes the semaphores behind the compiler's back: always read them afresh. */
#define SHIM_SEM(name) (*(volatile unsigned short *)&bpfsight_##name##_semaphore)

#define SHIM_PROBE_BATCH(buf, bytes)                                                               \
	STAP_PROBE2(bpfsight, batch, (uint64_t)(uintptr_t)(buf), (uint64_t)(bytes))
#define SHIM_PROBE_GPU(state)  STAP_PROBE1(bpfsight, gpu, (uint64_t)(state))
#define SHIM_PROBE_NVTX(state) STAP_PROBE1(bpfsight, nvtx, (uint64_t)(state))
#define SHIM_PROBE_SYNC()      STAP_PROBE1(bpfsight, sync, (uint64_t)0)
#define SHIM_PROBE_DRAIN(seq)  STAP_PROBE1(bpfsight, drain, (uint64_t)(seq))
#define SHIM_PROBE_JOIN(seq)   STAP_PROBE1(bpfsight, join, (uint64_t)(seq))

#endif /* BPFSIGHT_SHIM_USDT_H */
