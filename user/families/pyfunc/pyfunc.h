/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * pyfunc family: every call of the Python functions --python-functions names, timed inside
 * the job's interpreter by the cupti-shim's pyfunc module (cupti-shim/shim_pyfunc*.c) and
 * carried by the shim channel (user/shim_channel/). Record side and the option in pyfunc.c,
 * the spec written into each shim in pyfunc_write.c, the spec's parsing in pyfunc_spec*.c,
 * the reading side in pyfunc_read.h. docs/PYFUNC.md for users, docs/PYFUNC-mechanism.md for how.
 */
#ifndef BPFSIGHT_PYFUNC_H
#define BPFSIGHT_PYFUNC_H

#include "family.h"
#include "pyfunc_read.h" /* decoders, reports, exports */
#include "pyfunc_records.h"

struct pyfunc_opts {
	char *text; /* --python-functions, as the canonical text; NULL: not given */
};

struct record_ctx;
struct pyfunc_writer;

/*
 * pyfunc_write.c: TEXT written into the spec buffer of every cupti-shim this recording's
 * processes map (launch, -p, -a, loaded later), before or as the channel attaches the
 * control site. 0 with *OUT, or -errno.
 */
struct uprobe_mgr;
int pyfunc_writer__new(struct uprobe_mgr *mgr, const char *text, struct pyfunc_writer **out);
void pyfunc_writer__free(struct pyfunc_writer *w);
/* Every record: an exec or an exit makes the process's next scan write it again. */
void pyfunc_writer__observe(struct pyfunc_writer *w, const struct bs_hdr *rec);

/* pyfunc_missed.c: the entries never found, gathered over the recording, said at its end. */
struct pyfunc_missed;
struct pyfunc_missed *pyfunc_missed__new(void);
void pyfunc_missed__free(struct pyfunc_missed *m);
/* A call of NAME (its string FUNC_ID) was recorded. */
void pyfunc_missed__call(struct pyfunc_missed *m, __u32 func_id, const char *name);
/* PID's shim never found an entry: TEXT, its STATUS's detail ("never found: NAME: why"). */
void pyfunc_missed__status(struct pyfunc_missed *m, __u32 pid, const char *text);
/* One warning per function no process recorded a call of. */
void pyfunc_missed__say(const struct pyfunc_missed *m);

extern const struct family family_pyfunc; /* pyfunc.c */

#endif /* BPFSIGHT_PYFUNC_H */
