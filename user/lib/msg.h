/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What bpfsight says on stderr, in one voice: "bpfsight CMD: ...", CMD being the command the
 * user ran (main() sets it), so that a message printed by code that record, monitor and top
 * share names the command that printed it. A message is one line, ending with its own "\n".
 *
 *   pr_err   something failed: what, where, and what to do ("cannot create x.bst: ...")
 *   pr_warn  "warning: ": the command goes on, something is missing or lost
 *   pr_note  "note: ": worth knowing, nothing is wrong
 *   pr_info  what happened ("wrote x.bst: ...")
 */
#ifndef BPFSIGHT_MSG_H
#define BPFSIGHT_MSG_H

/* The command in every message from now on (NULL: "bpfsight: ..."). */
void msg__set_cmd(const char *cmd);
/* The command messages name, or "bpfsight" when none was set. */
const char *msg__cmd(void);

void pr_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pr_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pr_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pr_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * pr_err of a one-line message FMT (its "\n" added), returning 1: an exit status, or a
 * parser's "said what is wrong".
 */
int msg__fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* BPFSIGHT_MSG_H */
