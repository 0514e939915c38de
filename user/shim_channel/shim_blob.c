// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Writing out the embedded cupti-shim (see shim_blob.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <linux/types.h>
#include "records.h"
#include "shim_blob.h"
#include "shim_records.h"
#include "msg.h"

extern const unsigned char bpfsight_shim_start[], bpfsight_shim_end[];

size_t shim_blob__size(void)
{
	return bpfsight_shim_end - bpfsight_shim_start;
}

static __u64 blob_hash(void)
{
	__u64 h = 14695981039346656037ull; /* FNV-1a */

	for (const unsigned char *p = bpfsight_shim_start; p < bpfsight_shim_end; p++)
		h = (h ^ *p) * 1099511628211ull;
	return h;
}

void shim_blob__inject_name(char *name, size_t len)
{
	snprintf(name, len, "libbpfsight-shim-%016llx%s", (unsigned long long)blob_hash(),
		 BS_SHIM_INJECT_SUFFIX);
}

/* Writable by anyone but root or us: a place someone else could swap the library in. */
static int unsafe(const struct stat *st)
{
	return (st->st_uid != 0 && st->st_uid != geteuid()) || (st->st_mode & (S_IWGRP | S_IWOTH));
}

static int mkdirs(const char *dir)
{
	char buf[PATH_MAX];

	if (snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

/* 1 when PATH is a regular file holding exactly the blob. */
static int same_file(const char *path, int secure)
{
	size_t size = shim_blob__size(), off = 0;
	unsigned char buf[65536];
	struct stat st;
	int fd, same = 0;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (size_t)st.st_size != size ||
	    (secure && unsafe(&st)))
		goto out;
	while (off < size) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n <= 0 || memcmp(buf, bpfsight_shim_start + off, n))
			goto out;
		off += n;
	}
	same = 1;
out:
	close(fd);
	return same;
}

int shim_blob__install(const char *dir, const char *name, int secure, char *path, size_t len)
{
	size_t size = shim_blob__size(), off = 0;
	char tmp[PATH_MAX], fname[64];
	struct stat st;
	int fd, err;

	if (!size)
		return -ENOENT;
	if (!name) {
		snprintf(fname, sizeof(fname), "libbpfsight-shim-%016llx.so",
			 (unsigned long long)blob_hash());
		name = fname;
	}
	err = mkdirs(dir);
	if (err)
		return err;
	if (lstat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (secure && unsafe(&st))
		return -EPERM;
	if (snprintf(path, len, "%s/%s", dir, name) >= (int)len ||
	    snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, name) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	if (same_file(path, secure))
		return 0;
	/* A fresh name nobody else can have opened; renamed over PATH once complete. */
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (off < size) {
		ssize_t n = write(fd, bpfsight_shim_start + off, size - off);

		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			goto fail;
		}
		off += n;
	}
	if (fchmod(fd, 0755) || fsync(fd)) {
		err = -errno;
		goto fail;
	}
	close(fd);
	if (rename(tmp, path)) {
		err = -errno;
		unlink(tmp);
		return err;
	}
	return 0;
fail:
	close(fd);
	unlink(tmp);
	return err;
}

int shim_blob__path(char *path, size_t len)
{
	const char *env = getenv("BPFSIGHT_SHIM");
	int err;

	if (env && *env) {
		if (access(env, R_OK)) {
			err = -errno;
			pr_err("BPFSIGHT_SHIM=%s: %s\n", env, strerror(-err));
			return err;
		}
		if (snprintf(path, len, "%s", env) >= (int)len)
			return -ENAMETOOLONG;
		return 0;
	}
	err = shim_blob__install(SHIM_RUN_DIR, NULL, 1, path, len);
	if (err == -EPERM)
		pr_info("%s is writable by others than root: not putting "
			"the cupti-shim there (fix its owner and mode, or set BPFSIGHT_SHIM)\n",
			SHIM_RUN_DIR);
	else if (err && err != -ENOENT)
		pr_err("cannot write the cupti-shim into %s: %s\n", SHIM_RUN_DIR, strerror(-err));
	return err;
}
