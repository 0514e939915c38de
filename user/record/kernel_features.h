/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the running kernel offers, probed once (a tiny map, program or BTF lookup each, never
 * `uname`), and the fallback each absence selects. BPFSIGHT_FORCE_FALLBACKS=all (every
 * feature that has a fallback) or a comma list of the names below makes a feature read as
 * absent, so the tests run every fallback on a kernel that has everything. The table of versions is in docs/ARCHITECTURE.md#kernels.
 */
#ifndef BPFSIGHT_KERNEL_FEATURES_H
#define BPFSIGHT_KERNEL_FEATURES_H

#include <stdio.h>

enum kfeature {
	KF_RINGBUF,	   /* BPF ring buffer (5.8): none, the recording is refused */
	KF_TP_BTF,	   /* tp_btf programs on every tracepoint used (5.5 + BTF): raw_tp */
	KF_PREV_STATE,	   /* sched_switch's prev_state argument (5.18): task state via CO-RE */
	KF_TASK_STORAGE,   /* task storage maps (5.11): hashes keyed by tid (osrt, sched) */
	KF_ATTACH_COOKIE,  /* bpf_get_attach_cookie (5.15): none, uprobe families refused */
	KF_UPROBE_MULTI,   /* uprobe_multi links (6.6): one perf-event uprobe per site */
	KF_BPF_LOOP,	   /* bpf_loop (5.17): no stacks (BPFSIGHT_NO_BPF_LOOP=1 too) */
	KF_PERF_SAMPLING,  /* cpu-clock perf events with a BPF program: none, cpu refused */
	KF_UPROBE_SESSION, /* uprobe sessions (6.13): nested driver launches fire returns too */
	KF_NR
};

/* 1 when the kernel has F and it is not forced off, else 0. Probed on first use. */
int kfeature__has(enum kfeature f);
/* 1 when BPFSIGHT_FORCE_FALLBACKS names F (or "all"). */
int kfeature__forced_off(enum kfeature f);
/* Its name in BPFSIGHT_FORCE_FALLBACKS and `record --features`. */
const char *kfeature__name(enum kfeature f);
/*
 * Arguments the tracepoint TP hands a tp_btf program (its btf_trace_TP prototype in the
 * kernel's BTF), or -1 when the kernel has no BTF for it.
 */
int kfeature__tp_args(const char *tp);
/*
 * The features this recording goes without (absent or forced off), comma-separated into
 * BUF ("" when none): a trace's `options` says which paths recorded it.
 */
void kfeatures__missing(char *buf, size_t len);
/* `bpfsight record --features`: one line per feature: present, absent or forced, fallback. */
void kfeatures__print(FILE *f);

#endif /* BPFSIGHT_KERNEL_FEATURES_H */
