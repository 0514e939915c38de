// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Writing out the embedded cupti-shim (see shim_blob.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <sys/stat.h>
#include <linux/types.h>
#include "records.h"
#include "shim_blob.h"
#include "shim_records.h"
#include "env.h"
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

/* Owned by someone other than root or us: someone else could write it, or chmod it. */
static int foreign(const struct stat *st)
{
	return st->st_uid != 0 && st->st_uid != geteuid();
}

/*
 * May a directory on the way to the shim stay as it is? Its owner is root, us or OWNER (the
 * owner of the process's root it is under: what only that user's processes load, that user
 * may swap), and nobody else may write it; a parent may be a root-owned sticky directory
 * (/tmp): others cannot rename or remove what is ours in it.
 */
static int safe_dir(const struct stat *st, int last, uid_t owner)
{
	if (foreign(st) && st->st_uid != owner)
		return 0;
	if (!(st->st_mode & (S_IWGRP | S_IWOTH)))
		return 1;
	return !last && st->st_uid == 0 && (st->st_mode & S_ISVTX);
}

/*
 * DIR (absolute) under ROOT (NULL: "/"), walked one name at a time from ROOT's descriptor,
 * each directory checked (safe_dir) before anything in it is trusted, the missing ones
 * created (0755): a descriptor of DIR, or a negative errno (-EPERM: a directory others can
 * write; -ELOOP: a symlink under ROOT, or too many). Under ROOT, its owner's directories are
 * as good as root's: the shim there is loaded by processes that user runs. Under "/", a
 * symlink met in a directory that passed the check is followed (only root or we could have
 * made it: /lib -> usr/lib); under a process's root, none is, nor "..".
 */
static int open_dir(const char *root, const char *dir)
{
	char buf[PATH_MAX], link[PATH_MAX], joined[PATH_MAX], *name, *rest;
	int fd, next, err, links = 0;
	uid_t owner = 0;
	struct stat st;
	ssize_t n;

	if (dir[0] != '/' || snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf))
		return -EINVAL;
	fd = open(root ? root : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (root && !fstat(fd, &st))
		owner = st.st_uid; /* a container's (user-namespace) root, a chroot's user */
	for (rest = buf;;) {
		rest += strspn(rest, "/");
		name = rest;
		rest += strcspn(rest, "/");
		if (*rest)
			*rest++ = 0;
		if (fstat(fd, &st)) {
			err = -errno;
			goto fail;
		}
		if (!safe_dir(&st, !*name, owner)) {
			err = -EPERM;
			goto fail;
		}
		if (!*name)
			return fd;
		if (root && !strcmp(name, "..")) {
			err = -EINVAL;
			goto fail;
		}
		next = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT && (!mkdirat(fd, name, 0755) || errno == EEXIST))
			next = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next >= 0) {
			close(fd);
			fd = next;
			continue;
		}
		err = -errno;
		if (err != -ELOOP && err != -ENOTDIR)
			goto fail;
		/* A symlink (ELOOP with O_NOFOLLOW, or ENOTDIR with O_DIRECTORY and O_PATH). */
		n = readlinkat(fd, name, link, sizeof(link) - 1);
		if (n < 0 || root || ++links > 40) {
			err = n < 0 && errno == EINVAL ? -ENOTDIR : -ELOOP;
			goto fail;
		}
		link[n] = 0;
		/* The link's target, then what was left of DIR. */
		if (snprintf(joined, sizeof(joined), "%s/%s", link, rest) >= (int)sizeof(joined)) {
			err = -ENAMETOOLONG;
			goto fail;
		}
		rest = strcpy(buf, joined);
		if (link[0] == '/') {
			close(fd);
			fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
			if (fd < 0)
				return -errno;
		}
	}
fail:
	close(fd);
	return err;
}

/* 1 when NAME in DFD is a regular file of root's or ours, nobody else's to write, holding
 * exactly the blob. */
static int same_file(int dfd, const char *name)
{
	size_t size = shim_blob__size(), off = 0;
	unsigned char buf[65536];
	struct stat st;
	int fd, same = 0;

	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (size_t)st.st_size != size || foreign(&st) ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)))
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

/* A new file in DFD nobody else can have opened: its descriptor, its name in TMP. */
static int create_tmp(int dfd, const char *name, char *tmp, size_t len)
{
	struct timespec ts;

	for (int i = 0; i < 100; i++) {
		int fd;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		snprintf(tmp, len, ".%s.%d.%ld", name, (int)getpid(), ts.tv_nsec + i);
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST)
			return fd < 0 ? -errno : fd;
	}
	return -EEXIST;
}

/* The blob as NAME in DFD: written to a fresh name, then renamed over NAME once complete. */
static int write_blob(int dfd, const char *name)
{
	size_t size = shim_blob__size(), off = 0;
	char tmp[NAME_MAX + 1];
	int fd, err = 0;

	fd = create_tmp(dfd, name, tmp, sizeof(tmp));
	if (fd < 0)
		return fd;
	while (off < size) {
		ssize_t n = write(fd, bpfsight_shim_start + off, size - off);

		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			goto fail;
		}
		off += n;
	}
	if (fchmod(fd, 0755) || fsync(fd) || renameat(dfd, tmp, dfd, name)) {
		err = -errno;
		goto fail;
	}
	close(fd);
	return 0;
fail:
	close(fd);
	unlinkat(dfd, tmp, 0);
	return err;
}

int shim_blob__install(const char *root, const char *dir, const char *name, char *path, size_t len)
{
	char fname[64], abs[PATH_MAX];
	int dfd, err;

	if (!shim_blob__size())
		return -ENOENT;
	if (!name) {
		snprintf(fname, sizeof(fname), "libbpfsight-shim-%016llx.so",
			 (unsigned long long)blob_hash());
		name = fname;
	}
	if (!root && dir[0] != '/') { /* --install's DIR, from where bpfsight runs */
		if (!getcwd(abs, sizeof(abs)) ||
		    snprintf(abs + strlen(abs), sizeof(abs) - strlen(abs), "/%s", dir) >=
			    (int)(sizeof(abs) - strlen(abs)))
			return -ENAMETOOLONG;
		dir = abs;
	}
	if (snprintf(path, len, "%s/%s", dir, name) >= (int)len)
		return -ENAMETOOLONG;
	dfd = open_dir(root, dir);
	if (dfd < 0)
		return dfd;
	err = same_file(dfd, name) ? 0 : write_blob(dfd, name);
	close(dfd);
	return err;
}

int shim_blob__path(char *path, size_t len)
{
	const char *env = env__trusted("BPFSIGHT_SHIM");
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
	err = shim_blob__install(NULL, SHIM_RUN_DIR, NULL, path, len);
	if (err == -EPERM || err == -ELOOP)
		pr_info("%s, or a directory above it, is %s: not putting "
			"the cupti-shim there (fix its owner and mode, or set BPFSIGHT_SHIM)\n",
			SHIM_RUN_DIR, err == -EPERM ? "writable by others than root" : "a symlink");
	else if (err && err != -ENOENT)
		pr_err("cannot write the cupti-shim into %s: %s\n", SHIM_RUN_DIR, strerror(-err));
	return err;
}
