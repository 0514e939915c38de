/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Native addresses of a traced process named from the ELF files mapped there, while it lives
 * or after (the uprobe manager keeps its last maps: uprobe_mgr__code_at): a kernel's host
 * stub, the frames of a stack, and the callers a frame-pointer walk skipped.
 */
#ifndef BPFSIGHT_NATIVE_FRAMES_H
#define BPFSIGHT_NATIVE_FRAMES_H

#include <linux/types.h>
#include <sys/types.h>

struct uprobe_mgr;

/*
 * The name of host address ADDR in process PID (a kernel's host stub), demangled; NULL when
 * unknown. The caller frees it (and caches it: this reads symbol tables, and /proc on a
 * miss).
 */
char *native_frames__symbolize(struct uprobe_mgr *m, pid_t pid, __u64 addr);

/* One native frame of a stack, as native_frames__resolve finds it. */
struct native_frame {
	const char *module; /* the file's path as first seen (kept by the manager) */
	__u64 vaddr;	    /* the address in the file's ELF image */
	char func[512];	    /* demangled function, "" when no symbol covers it */
	int valid;	    /* a return address that follows a call instruction */
};

/*
 * Frame ADDR of a stack of PID: its file, ELF address and function. IS_RETURN: ADDR is a
 * return address (every frame but the innermost): its function is the one containing the
 * call, and VALID says whether a call precedes it (else the unwind went astray: code without
 * frame pointers). Returns 0, or -ENOENT when ADDR is in no file-backed executable mapping.
 */
int native_frames__resolve(struct uprobe_mgr *m, pid_t pid, __u64 addr, int is_return,
			   struct native_frame *out);
/*
 * Of the NTOP words TOP on PID's user stack from where the function at ADDR (the sampled
 * instruction, or a return address into it when IS_RETURN) keeps its frame on, the index of
 * its return address when that function has no frame of its own there (its first
 * instructions, its ret, a fast path without one, code without frame pointers: a frame-
 * pointer walk then skips its caller); -1 when none is found. Decided from the code: the
 * instruction at ADDR, else the first word that returns into a call of ADDR's function (its
 * symbol), directly or through a PLT stub. The index is the same at every visit of ADDR (the
 * frame's shape there is the code's): callers may keep it.
 */
int native_frames__return_slot(struct uprobe_mgr *m, pid_t pid, __u64 addr, int is_return,
			       const __u64 *top, int ntop);

#endif /* BPFSIGHT_NATIVE_FRAMES_H */
