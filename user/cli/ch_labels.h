/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The labels of ClickHouse rows (export_clickhouse.h) from export's and ship's arguments. */
#ifndef BPFSIGHT_CH_LABELS_H
#define BPFSIGHT_CH_LABELS_H

#include "export_clickhouse.h"

/* --job NAME (JOB) or --rank N: 0, or said on stderr and -EINVAL. */
int ch_labels__option(struct ch_labels *l, int job, const char *arg);
/*
 * L's file FILE, its content id, and its job FILE's name less .bst unless one was given;
 * valid until the next call. 0, or said on stderr and a negative errno.
 */
int ch_labels__for_file(struct ch_labels *l, const char *file);

#endif /* BPFSIGHT_CH_LABELS_H */
