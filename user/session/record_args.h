/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What `record` and `monitor` parse alike: the families (-t), the targets (-p), the check for
 * privileges and libbpf's logging, so both say the same thing about the same mistake. CMD is
 * the subcommand's name, the prefix of every message ("bpfsight CMD: ...").
 */
#ifndef BPFSIGHT_RECORD_ARGS_H
#define BPFSIGHT_RECORD_ARGS_H

#include <linux/types.h>
#include "record_ctx.h"

/*
 * -t LIST: the families' bits in *MASK; 1 after saying what is wrong. An item +NAME adds NAME
 * to the others, or to the default set when every item is one (*EXPLICIT then 0: the default
 * set was not chosen by name). nsys's names of families bpfsight names otherwise (python-gil)
 * are taken for ours. *NAMED: the families the list names, +NAME or NAME.
 */
int record_args__families(const char *cmd, const char *list, __u64 *mask, __u32 *explicit,
			  __u64 *named);
/* -p LIST: pids (or thread ids, taken as their process) appended to O; 1 on error. */
int record_args__pids(const char *cmd, const char *arg, struct record_opts *o);
/*
 * Without -t (and no default of the command's) every family but the opt-in ones; the always-on
 * ones in any case.
 */
void record_args__default_families(struct record_opts *o);
/*
 * The families O records whose kernel features are missing: refused when -t named them,
 * else left out (said once each); no ring buffer: refused. 1 after saying why.
 */
int record_args__check_kernel(const char *cmd, struct record_opts *o);
/*
 * --capture-range=KIND[:ARG] into O: the family whose kind it is (struct family_capture) opens
 * and closes the ranges. 1 after saying what is wrong.
 */
int record_args__capture(const char *cmd, const char *arg, struct record_opts *o);
/* libbpf's messages on stderr, its debug ones only with VERBOSE. */
void record_args__libbpf_print(int verbose);

#endif /* BPFSIGHT_RECORD_ARGS_H */
