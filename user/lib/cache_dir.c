// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Where the caches kept across recordings are (cache_dir.h). */
#include <stdio.h>
#include <string.h>
#include "cache_dir.h"
#include "env.h"

#define CACHE_DIR "/var/cache/bpfsight"

const char *cache_dir__path(char *buf, size_t len)
{
	const char *dir = env__trusted("BPFSIGHT_CACHE_DIR"),
		   *no = env__trusted("BPFSIGHT_NO_CACHE");

	if (no && *no && strcmp(no, "0"))
		return NULL;
	snprintf(buf, len, "%s", dir && *dir ? dir : CACHE_DIR);
	return buf;
}
