/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * -o's %-escapes, as nsys expands them in its --output: %h the host name, %p the target's
 * pid (the launched command's, the first -p's, bpfsight's own with -a), %q{VAR} the value of
 * the environment variable VAR (empty when unset), %n the least positive integer that names
 * no existing file, %% a '%'. `-o prof_%p_%h` is prof_4242_node7.bst, not a file of that
 * literal name.
 */
#ifndef BPFSIGHT_OUTPUT_NAME_H
#define BPFSIGHT_OUTPUT_NAME_H

#include <stddef.h>
#include <sys/types.h>

/* Whether PATTERN has %p (which a launched command's pid fills, once it is forked). */
int output_name__wants_pid(const char *pattern);

/*
 * PATTERN expanded into OUT (LEN bytes); PID <= 0 leaves %p as it is. 0, or 1 after saying
 * what is wrong (an unknown escape, a name too long).
 */
int output_name__expand(const char *pattern, pid_t pid, char *out, size_t len);

#endif /* BPFSIGHT_OUTPUT_NAME_H */
