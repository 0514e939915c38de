/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Parsing of command-line values shared by subcommands. */
#ifndef BPFSIGHT_PARSE_H
#define BPFSIGHT_PARSE_H

#include <linux/types.h>

/*
 * "10", "10s", "500ms", "2m", "1h", "250us", "100ns" -> ns. Plain numbers are seconds.
 * -EDOM for 0 (a duration of nothing is a mistake), -ERANGE past 2^64 ns, else -EINVAL.
 */
int parse_duration_ns(const char *s, __u64 *ns);
/* "1us", "0", "500ns", "2ms" -> ns. Plain numbers are ns. */
int parse_threshold_ns(const char *s, __u64 *ns);
/* "16M", "64MiB", "1G", "4096" -> bytes. */
int parse_size(const char *s, __u64 *bytes);

#endif
