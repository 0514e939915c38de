// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The scanned-files cache (scan_cache.h). One text file, a header line and one entry per
 * line: "DEV INO SIZE MTIME_NS PATH". Text because it is tiny and a person may look at it;
 * every field is checked on read, and a line that does not parse ends the read (the rest
 * is ignored and the file rewritten).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "cache_dir.h"
#include "kdev.h"
#include "scan_cache.h"

#define CACHE_FILE   "code-files"
#define CACHE_HEADER "bpfsight code-files 1"
#define CACHE_MAX    4096 /* entries: the oldest go first */

struct entry {
	__u64 dev, ino, size, mtime_ns;
	char *path;
};

struct scan_cache {
	int off;
	int dirty;
	char dir[PATH_MAX];
	struct entry *v;
	__u32 n;
};

/* Does PATH still name the file E describes? */
static int entry_current(const struct entry *e)
{
	struct stat st;

	return !stat(e->path, &st) && S_ISREG(st.st_mode) && kdev_of(st.st_dev) == e->dev &&
	       st.st_ino == e->ino && (__u64)st.st_size == e->size &&
	       (__u64)st.st_mtim.tv_sec * 1000000000ull + st.st_mtim.tv_nsec == e->mtime_ns;
}

static int entry_push(struct scan_cache *c, const struct entry *e)
{
	struct entry *nv;

	for (__u32 i = 0; i < c->n; i++)
		if (c->v[i].dev == e->dev && c->v[i].ino == e->ino)
			return 0;
	if (c->n == CACHE_MAX) {
		free(c->v[0].path);
		memmove(c->v, c->v + 1, (c->n - 1) * sizeof(*c->v));
		c->n--;
	}
	nv = realloc(c->v, (c->n + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	c->v = nv;
	c->v[c->n] = *e;
	if (!(c->v[c->n].path = strdup(e->path)))
		return -ENOMEM;
	c->n++;
	return 0;
}

struct scan_cache *scan_cache__load(void)
{
	struct scan_cache *c = calloc(1, sizeof(*c));
	char line[PATH_MAX + 128], path[PATH_MAX], fn[PATH_MAX + 32];
	struct entry e;
	FILE *f;

	if (!c)
		return NULL;
	if (!cache_dir__path(c->dir, sizeof(c->dir))) {
		c->off = 1;
		return c;
	}
	snprintf(fn, sizeof(fn), "%s/" CACHE_FILE, c->dir);
	f = fopen(fn, "re");
	if (!f)
		return c;
	if (!fgets(line, sizeof(line), f) || strcmp(line, CACHE_HEADER "\n")) {
		c->dirty = 1; /* not ours, or another version: rewritten at save */
		fclose(f);
		return c;
	}
	while (fgets(line, sizeof(line), f)) {
		e.path = path;
		if (sscanf(line, "%llu %llu %llu %llu %4095[^\n]", (unsigned long long *)&e.dev,
			   (unsigned long long *)&e.ino, (unsigned long long *)&e.size,
			   (unsigned long long *)&e.mtime_ns, path) != 5 ||
		    path[0] != '/' || !strchr(line, '\n')) {
			c->dirty = 1;
			break;
		}
		if (entry_push(c, &e))
			break;
	}
	fclose(f);
	return c;
}

void scan_cache__for_each(const struct scan_cache *c, void (*fn)(void *arg, const char *path),
			  void *arg)
{
	for (__u32 i = 0; c && i < c->n; i++)
		if (entry_current(&c->v[i]))
			fn(arg, c->v[i].path);
}

void scan_cache__add(struct scan_cache *c, const char *path, __u64 dev, __u64 ino)
{
	struct entry e = { .dev = dev, .ino = ino, .path = (char *)path };
	struct stat st;

	if (!c || c->off || path[0] != '/' || !strncmp(path, "/proc/", 6) || strchr(path, '\n'))
		return;
	/* Only a path that names this very file now: a process's view may differ (containers). */
	if (stat(path, &st) || !S_ISREG(st.st_mode) || kdev_of(st.st_dev) != dev ||
	    st.st_ino != ino)
		return;
	e.size = st.st_size;
	e.mtime_ns = (__u64)st.st_mtim.tv_sec * 1000000000ull + st.st_mtim.tv_nsec;
	for (__u32 i = 0; i < c->n; i++)
		if (c->v[i].dev == dev && c->v[i].ino == ino && c->v[i].size == e.size &&
		    c->v[i].mtime_ns == e.mtime_ns)
			return; /* known */
	for (__u32 i = 0; i < c->n; i++)
		if (c->v[i].dev == dev && c->v[i].ino == ino) {
			c->v[i].size = e.size; /* rewritten in place */
			c->v[i].mtime_ns = e.mtime_ns;
			c->dirty = 1;
			return;
		}
	if (!entry_push(c, &e))
		c->dirty = 1;
}

int scan_cache__save(struct scan_cache *c)
{
	char fn[PATH_MAX + 32], tmp[PATH_MAX + 48];
	int fd, err = 0;
	FILE *f;

	if (!c || c->off || !c->dirty)
		return 0;
	if (mkdir(c->dir, 0700) && errno != EEXIST)
		return -errno;
	snprintf(fn, sizeof(fn), "%s/" CACHE_FILE, c->dir);
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", fn, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
		unlink(tmp);
		return err;
	}
	fprintf(f, CACHE_HEADER "\n");
	/* Entries whose file changed or went away are dropped here. */
	for (__u32 i = 0; i < c->n; i++)
		if (entry_current(&c->v[i]))
			fprintf(f, "%llu %llu %llu %llu %s\n", (unsigned long long)c->v[i].dev,
				(unsigned long long)c->v[i].ino, (unsigned long long)c->v[i].size,
				(unsigned long long)c->v[i].mtime_ns, c->v[i].path);
	if (fflush(f) || fsync(fd))
		err = -errno;
	if (fclose(f) && !err)
		err = -errno;
	if (!err && rename(tmp, fn))
		err = -errno;
	if (err)
		unlink(tmp);
	else
		c->dirty = 0;
	return err;
}

void scan_cache__free(struct scan_cache *c)
{
	if (!c)
		return;
	for (__u32 i = 0; i < c->n; i++)
		free(c->v[i].path);
	free(c->v);
	free(c);
}
