/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Environment variables that name files bpfsight writes or has other processes load
 * (BPFSIGHT_SHIM, BPFSIGHT_CACHE_DIR) or steer what it does as root (BPFSIGHT_INJECT_TID).
 * Under sudo the environment may be the invoking user's (`sudo -E`, or a sudoers rule with
 * SETENV): a user allowed to run bpfsight as root could point root at their own library.
 */
#ifndef BPFSIGHT_ENV_H
#define BPFSIGHT_ENV_H

/*
 * NAME's value, or NULL when bpfsight runs with privileges another user gave it: under sudo
 * from a user other than root (SUDO_UID), or setuid / with file capabilities
 * (secure_getenv). A value ignored is said once per variable.
 */
const char *env__trusted(const char *name);

/* The uid that asked sudo to run bpfsight (SUDO_UID), or NULL: not under sudo, or by root. */
const char *env__sudo_uid(void);

#endif /* BPFSIGHT_ENV_H */
