// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* ship's spool: ship_spool.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "msg.h"
#include "ship_spool.h"

int ship_spool__open(struct ship_spool *sp, const char *dir, __u64 max_bytes)
{
	char path[4096];

	if (snprintf(sp->dir, sizeof(sp->dir), "%s", dir) >= (int)sizeof(sp->dir))
		return -ENAMETOOLONG;
	sp->max_bytes = max_bytes;
	/* each missing parent, then the spool itself */
	snprintf(path, sizeof(path), "%s", dir);
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(path, 0700) && errno != EEXIST)
			goto fail;
		*p = '/';
	}
	if (mkdir(path, 0700) && errno != EEXIST)
		goto fail;
	return 0;
fail:
	pr_err("cannot make the spool %s: %s\n", path, strerror(errno));
	return -errno;
}

static int spool_entry(const char *name)
{
	size_t n = strlen(name);

	return n > 4 && !strcmp(name + n - 4, ".tsv");
}

__u64 ship_spool__bytes(const struct ship_spool *sp, __u32 *files)
{
	DIR *d = opendir(sp->dir);
	struct dirent *e;
	struct stat st;
	__u64 total = 0;

	if (files)
		*files = 0;
	while (d && (e = readdir(d))) {
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		total += (__u64)st.st_size;
		if (files && spool_entry(e->d_name))
			(*files)++;
	}
	if (d)
		closedir(d);
	return total;
}

void ship_spool__path(const struct ship_spool *sp, const char *job, const char *id,
		      const char *suffix, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s.%s%s", sp->dir, job, id, suffix);
}

struct spooled {
	char *name;
	struct timespec mtime;
};

static int spooled_cmp(const void *a, const void *b)
{
	const struct spooled *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

int ship_spool__list(const struct ship_spool *sp, char ***names)
{
	struct spooled *v = NULL, *nv;
	DIR *d = opendir(sp->dir);
	struct dirent *e;
	struct stat st;
	int n = 0;

	*names = NULL;
	while (d && (e = readdir(d))) {
		if (!spool_entry(e->d_name) || fstatat(dirfd(d), e->d_name, &st, 0) ||
		    !S_ISREG(st.st_mode))
			continue;
		nv = realloc(v, (n + 1) * sizeof(*v));
		if (!nv)
			break;
		v = nv;
		v[n].name = strdup(e->d_name);
		v[n].mtime = st.st_mtim;
		n += !!v[n].name;
	}
	if (d)
		closedir(d);
	qsort(v, n, sizeof(*v), spooled_cmp);
	*names = calloc(n + 1, sizeof(**names));
	for (int i = 0; i < n; i++) {
		if (*names)
			(*names)[i] = v[i].name;
		else
			free(v[i].name);
	}
	free(v);
	return *names ? n : 0;
}

void ship_spool__free_list(char **names, int n)
{
	for (int i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
}

int ship_spool__entry(char *name, const char **job, const char **id)
{
	char *dot;

	name[strlen(name) - 4] = 0;
	dot = strrchr(name, '.');
	if (!dot || dot == name)
		return -EINVAL;
	*dot = 0;
	*job = name;
	*id = dot + 1;
	return 0;
}
