/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The recording's stack service: turns the stacks BPF read (bpf/stack.bpf.h: user addresses,
 * Python frames) into interned STACK records while the processes live. It finds the CPython
 * processes (py_find) and describes them to BPF (the shared py_procs map), names their
 * frames (py_stack), symbolizes native frames (uprobe_mgr) and merges the two
 * (docs/STACKS.md). Used by the cpu family for its samples and by the recorder for the
 * STACK_RAW records of events with --stacks, which it replaces by STACK_REF records.
 *
 * It starts before the families attach, when one is flagged FAMILY_STACKS or has --stacks on
 * (the uprobe manager tells a listener only of files examined after it joined). It:
 * - finds CPython processes through the manager's discovery (py_find.c, the interpreter
 *   picked by the gil family's rule, gil_python__inspect for the layout): at the start, on
 *   new code and on new threads, and describes each to BPF in py_procs (offsets per version
 *   in py_stack.c; from 3.13 on, those of the process's own _Py_DebugOffsets);
 * - names frames while the process lives: native ones in native_frames.c (from the file and
 *   ELF address uprobe_mgr__code_at finds), Python ones by py_stack__name, which reads a code
 *   object only while it is alive and the one BPF saw;
 * - puts back the callers a frame-pointer walk skipped (functions without a frame of their
 *   own, glibc's system-call wrappers): native_frames__return_slot decides from the code,
 *   among the 8 words on top of the user stack that cpu samples and system-call stacks send
 *   (BS_CPU_LEAF);
 * - merges native and Python frames (_PyEval_EvalFrameDefault frames replaced by the Python
 *   frames they ran) and interns stacks (stack_intern.c: one STACK record per distinct stack,
 *   a cache from each process's raw addresses);
 * - reads the Python processes' thread names (thread_names.c over py_threads.c): a
 *   THREAD_NAME record when one is new or changed, shown over comm by thread_name.c's rule.
 * On the reading side the trace model keeps the stacks and a decoder puts
 * trace_model__event_stack() on its event; reports that sum by code location share
 * frame_sum.c, the folded, pprof and svg exports read cpu samples through cpu_samples.c, and
 * the timeline exports intern any event's ev->stack their own way
 * (export_{perfetto,chrome,sqlite}_stack.c).
 */
#ifndef BPFSIGHT_STACK_SVC_H
#define BPFSIGHT_STACK_SVC_H

#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>
#include "records.h"

struct record_ctx;
struct bs_hdr;
struct stack_svc;

/*
 * Of a raw stack's NIPS addresses and NPY Python frames, how many ROOM bytes after its
 * header really hold (BPF wrote it, but the contract is checked on both sides).
 */
static inline void stack_svc__raw_counts(size_t room, __u32 nips, __u32 npy, __u32 *n, __u32 *np)
{
	*n = nips < room / 8 ? nips : room / 8;
	room -= *n * 8;
	*np = npy < room / sizeof(struct bs_py_frame) ? npy : room / sizeof(struct bs_py_frame);
}

/*
 * A raw stack whose first address words are the words on top of the user stack (FLAGS has
 * BS_CPU_LEAF, bpf/stack_native.bpf.h's stack_unwind): those words (for stack_svc__stack's TOP),
 * with *W and *N moved past them; NULL when there are none.
 */
static inline const __u64 *stack_svc__raw_top(__u32 flags, const __u64 **w, __u32 *n)
{
	const __u64 *top = *w;

	if (!(flags & BS_CPU_LEAF) || *n < BS_STACK_TOP_WORDS)
		return NULL;
	*w += BS_STACK_TOP_WORDS;
	*n -= BS_STACK_TOP_WORDS;
	return top;
}

/*
 * The recording's service, on the uprobe manager MGR's discovery (and its files, to name
 * native frames): the driver makes it before the families attach (it hears only of files
 * examined after) and hands it to them (family_attach.h). NULL with *ERR a negative errno.
 */
struct uprobe_mgr;
struct stack_svc *stack_svc__new(struct record_ctx *ctx, struct uprobe_mgr *mgr, int *err);
void stack_svc__free(struct stack_svc *s);
/*
 * The recording stops and the uprobe manager is closed (uprobe_mgr__close): no more looks at
 * processes, no table built, the last stacks' native frames left unnamed. The driver says it.
 */
void stack_svc__uprobes_closed(struct stack_svc *s);
/*
 * The stack id of what BPF read into W (NIPS addresses, then NPY Python frames) for thread
 * TID of PID at TS (the STACK record's own pid/tid/ts). TOP: the words on top of the user
 * stack (BS_CPU_LEAF), or NULL. RAW_FLAGS: the raw record's (how the native walk ended:
 * BS_STACK_END_*, BS_STACK_UNW_FIRST). 0 when there is no frame at all.
 */
__u32 stack_svc__stack(struct record_ctx *ctx, struct stack_svc *s, pid_t pid, __u32 tid, __u64 ts,
		       const __u64 *w, __u32 nips, __u32 npy, const __u64 *top, __u32 raw_flags);
/* The unwind tables' memory and files so far (zeros without tables): `info`, the end line. */
struct unwind_load_usage;
void stack_svc__unwind_usage(struct stack_svc *s, struct unwind_load_usage *out);
/*
 * The tables' use as a record (BS_REC_UNWIND_USAGE), when some file needed a table: at the
 * stop, a flush or a flight dump, so the file says what the end-of-run line says.
 */
void stack_svc__write_unwind_usage(struct record_ctx *ctx, struct stack_svc *s);
/* The same figures into R: 1 when some file needed a table, 0 (nothing to say) else. */
struct bs_unwind_usage;
int stack_svc__unwind_record(struct stack_svc *s, struct bs_unwind_usage *r);
/*
 * How the end-of-run line and `info` say R: "3 files, 1.2 MiB of rows of the 64 MiB reserved,
 * built in 12 ms; 0 files without one".
 */
void unwind_usage__text(const struct bs_unwind_usage *r, char *buf, size_t len);
struct unwind_load;
/* The tables loaded (for a walk in user space), NULL without. */
struct unwind_load *stack_svc__unwind_load(struct stack_svc *s);
/* A STACK_RAW record: its STACK_REF is written (and the STACK first, when new). */
void stack_svc__consume(struct record_ctx *ctx, struct stack_svc *s, const struct bs_hdr *rec);
/*
 * Once every probe is attached: the running targets (-p, or every process with -a) are
 * looked at now, so BPF reads the Python frames of their first events.
 */
void stack_svc__start(struct record_ctx *ctx, struct stack_svc *s);
/*
 * Often (the recorder's loop): processes whose interpreter was still starting are looked at
 * again, so their frames are read from their first events after Py_Initialize on.
 */
void stack_svc__poll(struct record_ctx *ctx, struct stack_svc *s);
/* Every ring-buffer record: an exec, a new mapping, an exit change what addresses mean. */
void stack_svc__observe(struct record_ctx *ctx, struct stack_svc *s, const struct bs_hdr *rec);

/* 3.MINOR when PID is a CPython whose Python frames are read (stack_svc__start looked), 0. */
__u32 stack_svc__python_minor(struct stack_svc *s, pid_t pid);
/*
 * When PID is a CPython whose frames cannot be read (a version or build whose layout is not
 * known, its _Py_DebugOffsets unreadable, free-threaded): the words that say so, its version
 * and what is missing (also on stderr once, and in a PY_UNREAD record); NULL otherwise.
 */
const char *stack_svc__python_unread(struct stack_svc *s, pid_t pid);
struct py_thread_name; /* py_threads.h */
/* The names PID's Python threads have now (py_threads__read): how many, or a negative errno. */
int stack_svc__thread_names(struct stack_svc *s, pid_t pid, struct py_thread_name *out, int max);

#endif /* BPFSIGHT_STACK_SVC_H */
