/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * An API table of a uprobe family (cuda, nccl): the functions it probes and, for each, its
 * argument spec (ucall_spec.h: what the generic BPF programs of bpf/ucall.bpf.h capture, and
 * how a decoder reads the arguments). The index of an entry is bs_ucall.fn in trace files:
 * tables are append-only.
 */
#ifndef BPFSIGHT_UCALL_API_H
#define BPFSIGHT_UCALL_API_H

#include <stddef.h>
#include <linux/types.h>
#include "ucall_records.h"
#include "ucall_spec.h"

struct ucall_api {
	const char *name; /* the exported symbol, also the name shown (cudaLaunchKernel) */
	__u16 group;	  /* family-defined category (launch, memcpy, sync, ...) */
	__u16 flags;	  /* family-defined */
	const char *args; /* the argument spec, in the family's keys */
	/* The name shown where the symbol is not one (a C++ method's mangled name); NULL: name. */
	const char *shown;
};

/* The name A is shown by: ucall_api.shown, else its symbol. */
static inline const char *ucall_api__shown(const struct ucall_api *a)
{
	return a->shown ? a->shown : a->name;
}

struct ucall_table {
	const char *family; /* "cuda" */
	__u16 rec_type;	    /* BS_REC_CUDA_CALL: its block (records.h) is the family's */
	const struct ucall_api *apis;
	__u32 napis;
	const struct ucall_key *keys; /* what the specs may name: ucall_field.key indexes it */
	__u32 nkeys;
	/* What else the family requires of an entry and its compiled spec: 0, or -EINVAL. */
	int (*check)(const struct ucall_api *a, const struct ucall_spec *s, char *err, size_t len);
	struct ucall_spec **compiled; /* the specs, compiled on first use (ucall_table__spec) */
	/*
	 * Entries whose names start with this are also found in stripped files by the name
	 * string their code loads (user/uprobe/elf_strref.h: a static CUDA runtime's entry
	 * points, "cuda"), when no entry with it has a symbol there; NULL: by symbol only.
	 */
	const char *strref_prefix;
	/*
	 * One probe pair per call where one API calls the other (docs/CUDA.md, "One probe pair
	 * per launch"): an entry whose flags have wraps_flag gets BS_UCOOKIE_WRAPS, one with
	 * wrapped_flag BS_UCOOKIE_WRAPPED (bpf/ucall.bpf.h). 0: none.
	 */
	__u16 wraps_flag, wrapped_flag;
	/* BS_LOSS_CUDA_DEPTH: its loss cause for calls nested too deep (ucall_family.h). */
	__u16 loss_depth;
	/*
	 * Globs (GLOB_BRACE) of where its libraries usually live, NULL-terminated: with -a the
	 * uprobe manager probes them before any process maps them (uprobe_scan.c). May be NULL.
	 */
	const char *const *well_known;
};

/* The entry of REC's fn, or NULL when the trace was written by a newer table. */
static inline const struct ucall_api *ucall_table__api(const struct ucall_table *t, __u32 fn)
{
	return fn < t->napis ? &t->apis[fn] : (const struct ucall_api *)0;
}

/*
 * The compiled spec of entry FN, or NULL when FN is not in the table. The table is compiled
 * once; if memory runs out, FN alone is compiled into *TMP. An entry that does not compile
 * (the build checks that none does) has no fields and every argument word.
 */
const struct ucall_spec *ucall_table__spec(const struct ucall_table *t, __u32 fn,
					   struct ucall_spec *tmp);

/*
 * The value of field F of spec S in REC (a bs_ucall of at least its size): its argument word,
 * out value, constant, or bytes of the copy; a C int (s32) sign-extended. 1, or 0 when the
 * record does not hold it (a copy missing or too short, a str or mem field).
 */
struct ucall_field;
int ucall_field__value(const struct bs_hdr *rec, const struct ucall_spec *s,
		       const struct ucall_field *f, __u64 *v);

/*
 * The integer fields of REC (a record of table T, at least a bs_ucall): V[key] and bit key of
 * *HAVE for each value the record holds. OK: the call succeeded; else its written fields
 * ('*', '&*') are left out. Fields of the copy itself (str, mem) are not read.
 */
void ucall_record__values(const struct ucall_table *t, const struct bs_hdr *rec, int ok, __u64 *v,
			  __u64 *have);

/* Name EV (event.h) after entry FN: its name, or "FAMILY_fn_N" for a newer table's. */
struct event;
void ucall_table__name_event(const struct ucall_table *t, __u32 fn, struct event *ev);

/* The bpf_cookie of entry FN's probes. */
__u64 ucall_api__cookie(const struct ucall_table *t, __u32 fn);

/* Whether any entry of T has words read at entry through their pointer (BS_UCOOKIE_BYREF). */
int ucall_table__has_byref(const struct ucall_table *t);

/*
 * Check the whole table: unique names, every spec compiled, the family's own check.
 * 0, or -EINVAL with the first problem in ERR ("cudaMalloc: '*ptr': ...").
 */
int ucall_table__check(const struct ucall_table *t, char *err, size_t len);

#endif /* BPFSIGHT_UCALL_API_H */
