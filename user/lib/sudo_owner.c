// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Files made under sudo, given to the user who ran it (sudo_owner.h). */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include "sudo_owner.h"

/* 1 with *UID and *GID when bpfsight is root by sudo of another user. */
static int sudo_ids(uid_t *uid, gid_t *gid)
{
	/* getenv, not env.h: the trace writer links this alone (the fuzzed reader, bst_write). */
	const char *su = getenv("SUDO_UID"), *sg = getenv("SUDO_GID");
	char *end;
	unsigned long u, g;

	if (geteuid() || !su || !*su || !sg || !*sg)
		return 0;
	u = strtoul(su, &end, 10);
	if (*end)
		return 0;
	g = strtoul(sg, &end, 10);
	if (*end)
		return 0;
	*uid = (uid_t)u;
	*gid = (gid_t)g;
	return 1;
}

void sudo_owner__give_fd(int fd)
{
	uid_t uid;
	gid_t gid;

	/* A failure (a filesystem without owners) leaves the file root's, readable by sudo. */
	if (fd >= 0 && sudo_ids(&uid, &gid) && fchown(fd, uid, gid))
		return;
}

void sudo_owner__give_path(const char *path)
{
	uid_t uid;
	gid_t gid;

	if (path && sudo_ids(&uid, &gid) && fchownat(AT_FDCWD, path, uid, gid, AT_SYMLINK_NOFOLLOW))
		return;
}
