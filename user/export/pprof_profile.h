/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A profile.proto being built (github.com/google/pprof's format: go tool pprof, Parca,
 * Pyroscope, Grafana), for the exports that write one: the CPU samples' (export_pprof.c) and
 * a family's own (the mem family's heap profile). Samples of the trace's stacks with as many
 * values as sample types and labels; a location per distinct frame (a Python line, a native
 * function's address), a function per (name, file), strings interned. Written gzipped.
 */
#ifndef BPFSIGHT_PPROF_PROFILE_H
#define BPFSIGHT_PPROF_PROFILE_H

#include <linux/types.h>

struct pprof_profile;
struct trace_model;
struct trace_stack;

struct pprof_profile *pprof_profile__new(void);
void pprof_profile__free(struct pprof_profile *p);
/* The next sample type: what the samples' next value counts (Go's "alloc_space", "bytes"). */
void pprof_profile__sample_type(struct pprof_profile *p, const char *type, const char *unit);
/*
 * Begin a sample of stack S (innermost first), after a marker frame LEAD ("[kernel]", NULL:
 * none); a NULL or empty stack is the marker frame NONE. Then its values, one per sample type
 * in their order, and its labels; then pprof_profile__sample_end.
 */
void pprof_profile__sample(struct pprof_profile *p, const struct trace_model *m,
			   const struct trace_stack *s, const char *lead, const char *none);
void pprof_profile__value(struct pprof_profile *p, __s64 v);
void pprof_profile__label_num(struct pprof_profile *p, const char *key, __s64 num);
void pprof_profile__label_str(struct pprof_profile *p, const char *key, const char *str);
void pprof_profile__sample_end(struct pprof_profile *p);
/* Samples begun so far. */
__u64 pprof_profile__samples(const struct pprof_profile *p);
/*
 * Write the profile gzipped to FD (the export's file, export__create's: closed here, whatever
 * happens): its period (PERIOD of PERIOD_TYPE in PERIOD_UNIT), its time and duration (TIME_NS,
 * wall clock; 0: none) and the sample type a reader shows first. 0, -ENOMEM or -EIO.
 */
int pprof_profile__write(struct pprof_profile *p, int fd, const char *period_type,
			 const char *period_unit, __s64 period, __u64 time_ns, __u64 dur_ns,
			 const char *default_type);

#endif /* BPFSIGHT_PPROF_PROFILE_H */
