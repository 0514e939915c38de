// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Environment variables bpfsight trusts only from its own user (env.h). */
#include <stdlib.h>
#include <string.h>
#include "env.h"
#include "msg.h"

const char *env__sudo_uid(void)
{
	const char *uid = getenv("SUDO_UID");

	return uid && *uid && strcmp(uid, "0") ? uid : NULL;
}

const char *env__trusted(const char *name)
{
	static const char *said[8];
	const char *v = getenv(name);
	size_t i;

	if (!v || (!env__sudo_uid() && secure_getenv(name)))
		return v;
	for (i = 0; i < sizeof(said) / sizeof(said[0]) && said[i]; i++)
		if (!strcmp(said[i], name))
			return NULL;
	if (i < sizeof(said) / sizeof(said[0]))
		said[i] = name;
	pr_warn("%s is ignored: bpfsight runs with another user's privileges (sudo), and the "
		"variable came from the user who asked\n",
		name);
	return NULL;
}
