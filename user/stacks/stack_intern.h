/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Record side of stacks: turns the raw return addresses BPF read (frame-pointer unwinding)
 * into symbolized frames while the process lives, and interns them: each distinct stack is
 * written once as a STACK record (records.h), and records refer to it by id. The same code
 * in two processes (or two runs of one program) is one stack. docs/STACKS.md.
 */
#ifndef BPFSIGHT_STACK_INTERN_H
#define BPFSIGHT_STACK_INTERN_H

#include <linux/types.h>
#include <sys/types.h>

struct record_ctx;
struct uprobe_mgr;
struct stack_intern;

#define STACK_INTERN_PER_PROCESS 65536u
#define STACK_INTERN_MAX_BYTES	 (256ull << 20)

struct stack_intern *stack_intern__new(void);
void stack_intern__free(struct stack_intern *s);
/*
 * The id of the stack whose user-space addresses (innermost first: the sampled or probed
 * instruction, then return addresses) are IPS[0..N) in process PID, writing its STACK record
 * first when it is new; FROM is the record that uses it (its pid, tid, ts go on the STACK
 * record). CAPPED: the unwinder stopped at its depth limit (deeper frames exist). Frames
 * that cannot be real end the stack with a marker (docs/STACKS.md). 0: no frame at all.
 */
__u32 stack_intern__native(struct stack_intern *s, struct record_ctx *ctx, struct uprobe_mgr *m,
			   pid_t pid, __u32 tid, __u64 ts, const __u64 *ips, __u32 n, int capped);
/*
 * The steps of stack_intern__native, for stacks made of more than native frames. Symbolize
 * native addresses IPS into FRAMES (room for N + 1): how many frames, a cut marker included
 * (a frame that cannot be real, or a walk that ended before a thread's first function
 * without being CAPPED at the depth limit). END: how BPF's walk ended (BS_STACK_END_*, 0 for
 * a frame-pointer walk's end): whole at a table's outermost frame, or a stop the marker
 * says (its line).
 */
__u32 stack_intern__symbolize(struct stack_intern *s, struct record_ctx *ctx, struct uprobe_mgr *m,
			      pid_t pid, const __u64 *ips, __u32 n, int capped, __u32 end,
			      struct bs_frame *frames);
/*
 * The id of FRAMES (BS_STACK_* FLAGS), writing its STACK record when new; 0 on failure, and
 * for a new stack once PID has added STACK_INTERN_PER_PROCESS or the recording's stacks hold
 * STACK_INTERN_MAX_BYTES of frames (counted: stacks_capped).
 */
__u32 stack_intern__frames(struct stack_intern *s, struct record_ctx *ctx,
			   const struct bs_frame *frames, __u32 n, __u32 flags, pid_t pid,
			   __u32 tid, __u64 ts);
/* The id cached for PID's raw words W[0..N) (TAG: anything else that decided it), or 0. */
__u32 stack_intern__cached(struct stack_intern *s, pid_t pid, const __u64 *w, __u32 n, __u32 tag);
void stack_intern__cache(struct stack_intern *s, pid_t pid, const __u64 *w, __u32 n, __u32 tag,
			 __u32 id);
/* PID's code changed (exec, dlopen, dlclose) or it ended: its addresses mean other things now. */
void stack_intern__forget(struct stack_intern *s, pid_t pid);

#endif /* BPFSIGHT_STACK_INTERN_H */
