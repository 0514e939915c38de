// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The unwind tables of one recording (unwind_build.h): a table per build id, so a library
 * that every rank, every worker and every container maps is read once. A file is first
 * looked up by its inode (no ELF parsing on a second call), then by its build id.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "array.h"
#include "hmap.h"
#include "safe_open.h"
#include "unwind_build.h"

struct cache_entry {
	struct unwind_table t;
	__u64 size; /* of the file: two files that claim one build id must agree on it too */
	int err;    /* 0, or why the file has no table */
};

struct unwind_cache {
	pthread_mutex_t lock;
	struct hmap *by_id;    /* build id's first 16 bytes -> struct cache_entry * */
	struct hmap *by_inode; /* (dev, inode) ^ (size, mtime) -> struct cache_entry * */
	struct cache_entry **all;
	size_t n, cap;
	size_t max_bytes;
	struct unwind_cache_stats st;
};

struct unwind_cache *unwind_cache__new(size_t max_bytes)
{
	struct unwind_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	c->by_id = hmap__new(sizeof(struct cache_entry *));
	c->by_inode = hmap__new(sizeof(struct cache_entry *));
	c->max_bytes = max_bytes;
	if (!c->by_id || !c->by_inode) {
		unwind_cache__free(c);
		return NULL;
	}
	return c;
}

void unwind_cache__free(struct unwind_cache *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->n; i++) {
		unwind_table__free(&c->all[i]->t);
		free(c->all[i]);
	}
	free(c->all);
	hmap__free(c->by_id);
	hmap__free(c->by_inode);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* The first 16 bytes of a hex build id as a key; 0 when it has none. */
static int id_key(const char *hex, struct hkey *k)
{
	__u8 b[16] = { 0 };
	size_t i;

	if (strlen(hex) < 2)
		return 0;
	for (i = 0; i < 32 && hex[i]; i++) {
		int v = hex[i] <= '9' ? hex[i] - '0' : hex[i] - 'a' + 10;

		b[i / 2] |= (__u8)(v << (i % 2 ? 0 : 4));
	}
	memcpy(&k->a, b, 8);
	memcpy(&k->b, b + 8, 8);
	return 1;
}

static struct hkey inode_key(const struct stat *st)
{
	return (struct hkey){ st->st_dev ^ ((__u64)st->st_size << 20),
			      st->st_ino ^ ((__u64)st->st_mtim.tv_sec << 30) ^
				      (__u64)st->st_mtim.tv_nsec };
}

static int keep(struct unwind_cache *c, struct cache_entry *e)
{
	if (array__grow((void **)&c->all, c->n, &c->cap, sizeof(*c->all)))
		return -ENOMEM;
	c->all[c->n++] = e;
	return 0;
}

/* Build the entry of FD (stat ST, build id ID), kept under KEY(s). */
static struct cache_entry *build(struct unwind_cache *c, int fd, const char *path, const char *root,
				 const struct stat *st, const char *id)
{
	struct cache_entry *e = calloc(1, sizeof(*e)), **slot;
	struct hkey k;

	if (!e)
		return NULL;
	e->size = (__u64)st->st_size;
	e->err = unwind_table__build_fd(fd, path, root, &e->t);
	if (!e->err && c->max_bytes && c->st.bytes + unwind_table__bytes(&e->t) > c->max_bytes) {
		unwind_table__free(&e->t);
		e->err = -E2BIG;
	}
	if (keep(c, e)) {
		unwind_table__free(&e->t);
		free(e);
		return NULL;
	}
	c->st.build_ns += e->t.stats.build_ns;
	if (e->err) {
		c->st.failed++;
	} else {
		c->st.files++;
		c->st.rows += e->t.n;
		c->st.bytes += unwind_table__bytes(&e->t);
	}
	if (id_key(id, &k) && (slot = hmap__get(c->by_id, k, 1)))
		*slot = e;
	if ((slot = hmap__get(c->by_inode, inode_key(st), 1)))
		*slot = e;
	return e;
}

const struct unwind_table *unwind_cache__get(struct unwind_cache *c, const char *path,
					     const char *root, int *err)
{
	struct cache_entry *e = NULL, **slot;
	char id[UNWIND_BUILD_ID_LEN];
	struct stat st;
	struct hkey k;
	int fd;

	fd = safe_open__regular(path, NULL);
	if (fd < 0) {
		*err = fd == -EINVAL ? -ENOEXEC : fd;
		return NULL;
	}
	if (fstat(fd, &st)) {
		*err = -errno;
		close(fd);
		return NULL;
	}
	pthread_mutex_lock(&c->lock);
	slot = hmap__get(c->by_inode, inode_key(&st), 0);
	if (slot) {
		e = *slot;
	} else {
		unwind_table__build_id(fd, id, sizeof(id));
		slot = id_key(id, &k) ? hmap__get(c->by_id, k, 0) : NULL;
		if (slot && (strcmp((*slot)->t.build_id, id) || (*slot)->size != (__u64)st.st_size))
			e = NULL; /* another file claims the id: not its table, and built apart */
		else if (slot)
			e = *slot;
		if (e && (slot = hmap__get(c->by_inode, inode_key(&st), 1)))
			*slot = e;
	}
	if (e)
		c->st.hits++;
	else
		e = build(c, fd, path, root, &st, id);
	pthread_mutex_unlock(&c->lock);
	close(fd);
	if (!e) {
		*err = -ENOMEM;
		return NULL;
	}
	*err = e->err;
	return e->err ? NULL : &e->t;
}

void unwind_cache__stats(struct unwind_cache *c, struct unwind_cache_stats *out)
{
	pthread_mutex_lock(&c->lock);
	*out = c->st;
	pthread_mutex_unlock(&c->lock);
}
