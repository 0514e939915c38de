/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The pyfunc family's records (block 0x110; 0xf2, in the file format's block, in files of
 * format 3 and before, which readers map: trace_renumber.h): every call of the Python
 * functions a user names (--python-functions), timed inside the job's interpreter by the cupti-shim's pyfunc module
 * (cupti-shim/shim_pyfunc*.c: sys.monitoring local events on the named code objects from
 * 3.12, a C profile function filtered by code object before), written into the shim's
 * per-thread batches and carried by the shim channel like torch's (bpf/shim_records.h).
 * docs/PYFUNC.md for users; docs/FORMAT.md lists the fields.
 *
 * The spec: the recorder writes what to trace into the shim's exported buffer
 * BS_PYFUNC_SPEC_SYMBOL (struct bs_pyfunc_spec, below) before it attaches the family's
 * control site bpfsight:pyfunc, whose semaphore going up makes the shim read it (and a new
 * gen while it is up: read again). The last recorder to write wins.
 */
#ifndef BPFSIGHT_PYFUNC_RECORDS_H
#define BPFSIGHT_PYFUNC_RECORDS_H

#include "shim_records.h"

#define BS_REC_PYFUNC_CALL 0x110 /* one piece of a named function's call, written when it ends */

/*
 * hdr.ts = where the piece began (the call, or a generator's or coroutine's resume), on the
 * shim's clock; hdr.tid = its thread. Pieces of one thread nest (depth); a generator's call
 * is one piece per run between resumes and yields (cProfile counts each as a call too).
 */
struct bs_pyfunc_call {
	struct bs_hdr h;
	__u64 dur;
	__u32 func_id;	 /* string: "module:Qual.name" as the spec resolved it */
	__u32 file_id;	 /* string: the code object's co_filename */
	__u32 line;	 /* the code object's co_firstlineno */
	__u32 domain_id; /* string: the spec entry's domain (nsys's "domain"; 0: none) */
	__u16 depth;	 /* named calls open around it on its thread (65535: that many or more) */
	__u8 end;	 /* BS_PYFUNC_END_* */
	__u8 flags;	 /* BS_PYFUNC_* */
	__u32 _pad;
};

#define BS_PYFUNC_END_RETURN 0 /* returned */
#define BS_PYFUNC_END_UNWIND 1 /* left by an exception */
#define BS_PYFUNC_END_YIELD  2 /* a generator or coroutine suspended (yield, await) */
#define BS_PYFUNC_END_OPEN   3 /* still running when the recording ended (dur up to then) */

#define BS_PYFUNC_RESUMED 0x1 /* the piece began at a resume, not a call */
/*
 * The call began before tracing did (already running when the hooks went in: a job's main()
 * when -p attached): hdr.ts is when tracing began, not when it was called.
 */
#define BS_PYFUNC_BEGAN_BEFORE 0x2

/* The pyfunc family's bit of a STATUS record's state, and its event (shim_records.h). */
#define BS_SHIM_ST_PYFUNC_ON 0x400 /* named Python functions are traced */
/*
 * The pyfunc module's news: detail_id says what (the mechanism and how many code objects, a
 * spec entry not found yet, a free-threaded build refused), cupti_result is 0 when calls are
 * traced, else a negative errno. At a drain (the recording's end, the exit), one per entry
 * still not found (a preset's left out), cupti_result BS_PYFUNC_NEVER_FOUND, detail
 * "never found: MODULE:QUALNAME: why", the why in words ("__main__ has no trian_step; did
 * you mean train_step?").
 */
#define BS_SHIM_EV_PYFUNC     10
#define BS_PYFUNC_NEVER_FOUND (-3) /* -ESRCH */

/*
 * The spec buffer, exported by the shim as BS_PYFUNC_SPEC_SYMBOL (its .dynsym). The recorder
 * writes text (len bytes, then a NUL) and then gen (a new value each write: the shim reads
 * text again when gen moves; the shim copies text, checks len and the NUL, and never trusts
 * more). text: one entry per line, fields separated by tabs:
 *   MODULE \t QUALNAME \t FLAGS \t DOMAIN \n
 * MODULE: "__main__" included; QUALNAME: "f", "Class.method", "outer.<locals>.inner";
 * FLAGS: "" or letters: 's' every subclass's override of Class.method is traced too (the
 * presets' nn.Module.forward), each named by the class that defines it; 'p' a preset's entry
 * (a library the job may not use: not said when never found). A shim ignores letters it does
 * not know.
 */
#define BS_PYFUNC_SPEC_SYMBOL "bpfsight_pyfunc_spec"
#define BS_PYFUNC_SPEC_MAX    65536
#define BS_PYFUNC_SPEC_MAGIC  0x6370736e66797062ull /* "bpyfnspc" */

/*
 * magic: the shim's initial value, never written. The recorder reads it at the address it
 * computed before writing: a process that exec'd since that address was known (a child of a
 * wrapper such as sh or env that became python) has other memory there, left untouched.
 */
struct bs_pyfunc_spec {
	__u64 magic;
	__u32 gen; /* written last */
	__u32 len; /* bytes of text, < BS_PYFUNC_SPEC_MAX - 16 */
	char text[BS_PYFUNC_SPEC_MAX - 16];
};

BS_ASSERT_RECORD(bs_pyfunc_call, 56);

#endif /* BPFSIGHT_PYFUNC_RECORDS_H */
