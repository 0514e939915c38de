/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The recording session: runs a whole `bpfsight record` (record_ctx.h is what families see). */
#ifndef BPFSIGHT_RECORDER_H
#define BPFSIGHT_RECORDER_H

#include "record_ctx.h"

/* Run a whole recording; returns the exit status of `bpfsight record`. */
int recorder__run(const struct record_opts *opts);

#endif /* BPFSIGHT_RECORDER_H */
