/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The labels of ClickHouse rows (export --format clickhouse's struct export_opts) from
 * export's and ship's arguments.
 */
#ifndef BPFSIGHT_CH_LABELS_H
#define BPFSIGHT_CH_LABELS_H

#include "export.h"

/* --job NAME (JOB) or --rank N into O: 0, or said on stderr and -EINVAL. */
int ch_labels__option(struct export_opts *o, int job, const char *arg);
/*
 * O's file FILE, its content id, and its job FILE's name less .bst unless one was given;
 * valid until the next call. 0, or said on stderr and a negative errno.
 */
int ch_labels__for_file(struct export_opts *o, const char *file);

#endif /* BPFSIGHT_CH_LABELS_H */
