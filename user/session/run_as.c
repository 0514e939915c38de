// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* --user's NAME, UID, UID:GID or sudo, resolved to the user CMD runs as (run_as.h). */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "env.h"
#include "msg.h"
#include "run_as.h"

#define FAIL(...) msg__fail(__VA_ARGS__)

/*
 * --user NAME, UID or UID:GID, resolved now (a bad one fails before anything starts) from
 * /etc/passwd itself: the binary is static, and NSS modules are not for it to load. `sudo`:
 * the user who ran sudo (SUDO_UID:SUDO_GID, which sudo sets; a lower privilege in any case).
 */
int run_as__resolve(const char *arg, struct record_opts *o)
{
	unsigned long uid = ~0ul, gid = ~0ul;
	struct passwd *pw = NULL;
	char *end = NULL, ids[64];
	FILE *f;

	if (!strcmp(arg, "sudo")) {
		const char *su = env__sudo_uid(), *sg = getenv("SUDO_GID");

		if (!su || !sg || !*sg)
			return FAIL(
				"--user sudo: bpfsight was not run by sudo for a user other than "
				"root (SUDO_UID and SUDO_GID are not set)");
		snprintf(ids, sizeof(ids), "%s:%s", su, sg);
		arg = ids;
	}

	if (*arg >= '0' && *arg <= '9') {
		uid = strtoul(arg, &end, 10);
		if (*end == ':' && end[1])
			gid = strtoul(end + 1, &end, 10);
		if (*end)
			return FAIL("bad --user '%s': give a name, UID or UID:GID", arg);
	}
	f = fopen("/etc/passwd", "re");
	while (f && (pw = fgetpwent(f)))
		if (uid == ~0ul ? !strcmp(pw->pw_name, arg) : pw->pw_uid == uid)
			break;
	o->run_as = pw ? strdup(pw->pw_name) : uid != ~0ul && gid != ~0ul ? strdup("") : NULL;
	o->run_uid = pw ? pw->pw_uid : (uid_t)uid;
	o->run_gid = pw && gid == ~0ul ? pw->pw_gid : (gid_t)gid;
	if (f)
		fclose(f);
	if (!o->run_as)
		return FAIL("bad --user '%s': not in /etc/passwd (give UID:GID)", arg);
	return 0;
}
