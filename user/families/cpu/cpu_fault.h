/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * cpu's fault-bound rule (cpu_fault_verdict.c), one of the cpu family's verdict hooks
 * (cpu_verdict.c): a process whose CPU went to page faults and to the calls that map and unmap
 * memory, the allocator behaviour behind them (the mem family's records, when recorded) and
 * the fix to try.
 */
#ifndef BPFSIGHT_CPU_FAULT_H
#define BPFSIGHT_CPU_FAULT_H

#include "records.h"

struct table;
struct trace_model;
struct verdict;

void *cpu_fault__new(void);
void cpu_fault__add(void *st, const struct bs_hdr *rec, const struct trace_model *m);
void cpu_fault__claims(void *st, struct verdict *v);
void cpu_fault__free(void *st);
/* ADD's state from a server's answer (stats --from): table T, input NAME (verdict.h's LOAD). */
int cpu_fault__load(void *st, const char *name, const struct table *t);

#endif /* BPFSIGHT_CPU_FAULT_H */
