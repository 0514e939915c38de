/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* record --user: the user launch mode's CMD runs as. */
#ifndef BPFSIGHT_RUN_AS_H
#define BPFSIGHT_RUN_AS_H

#include "record_ctx.h"

/*
 * ARG (a name, UID, UID:GID, or "sudo": the user who ran sudo) into O's run_as, run_uid and
 * run_gid, read from /etc/passwd itself (the binary is static: no NSS module is loaded).
 * 0, or 1 after saying what is wrong.
 */
int run_as__resolve(const char *arg, struct record_opts *o);

#endif
