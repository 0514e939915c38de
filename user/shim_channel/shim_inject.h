/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * record --inject: load the cupti-shim into running processes that lack it (-p: every
 * target; -a: the processes that map libcudart or libcuda), so that -t gpu/nvtx can record
 * a job started without CUDA_INJECTION64_PATH. The uprobe manager's discovery says what
 * each process maps (its libc's dlopen and rt_sigreturn stub, the loader, CUDA), the checks
 * here refuse what cannot be done safely (another tracer, ptrace_scope 3, seccomp, shadow
 * stacks, musl, no dlopen, not x86-64) with a sentence, and ptrace_call.c makes one thread
 * call dlopen() on a copy of the shim visible in the process's mount namespace. The shim's
 * mapping is then found like any other (dlopen is seen by the manager) and attached by the
 * channel (shim_link.c). docs/GPU.md, "Injection".
 */
#ifndef BPFSIGHT_SHIM_INJECT_H
#define BPFSIGHT_SHIM_INJECT_H

#include <sys/types.h>

struct record_ctx;
struct uprobe_mgr;
struct shim_inject;

/* Listens to MGR's discovery from now on (before its first scan). */
struct shim_inject *shim_inject__new(struct record_ctx *ctx, struct uprobe_mgr *mgr, int *err);
void shim_inject__free(struct shim_inject *si);
/* Inject every candidate not tried yet for which HAS_SHIM(ARG, pid) is 0. */
void shim_inject__run(struct shim_inject *si, int (*has_shim)(void *arg, pid_t pid), void *arg);
/* PID exited: what was kept to inject it goes (-p targets stay, for the end's messages). */
void shim_inject__proc_exit(struct shim_inject *si, pid_t pid);
/* Why PID got no shim from us (a refusal, a failure); NULL when none was tried or it went. */
const char *shim_inject__failure(const struct shim_inject *si, pid_t pid);
/* 1 when a dlopen of the shim was started in PID. */
int shim_inject__sent(const struct shim_inject *si, pid_t pid);

#endif /* BPFSIGHT_SHIM_INJECT_H */
