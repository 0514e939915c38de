/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A merged file exported as one file per rank into a directory (export_split.c). */
#ifndef BPFSIGHT_EXPORT_SPLIT_H
#define BPFSIGHT_EXPORT_SPLIT_H

#include "export.h"

/* Was the file made by bpfsight merge? (its header's options start with "merged=") */
int export_split__is_merged(const struct trace_meta *meta);
/*
 * Create DIR (or take it when it exists): EX's files go there, named rankR.SUFFIX; FORCE:
 * replace those that exist.
 */
void *export_split__open(const struct exporter *ex, const char *dir, const char *suffix, int force,
			 const struct trace_meta *meta, int *err);
/*
 * The exporter that routes each record to its rank's file (struct exporter's record, finish
 * and abort; open is export_split__open). abort removes what was written.
 */
extern const struct exporter export_split;

#endif /* BPFSIGHT_EXPORT_SPLIT_H */
