// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unwind tables kept across recordings (unwind_store.h). An entry is a header and the rows as
 * the BPF map holds them (12 bytes each), so a hit is one read and a checksum.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "array.h"
#include "cache_dir.h"
#include "crc32_fast.h"
#include "mono_clock.h"
#include "safe_open.h"
#include "unwind_store.h"

#define MAGIC	"BSUNWTB\0"
#define SUFFIX	".rows"
#define SUB_DIR "unwind"

/* An entry's header; the rows follow. Written and read by this machine only: host order. */
struct store_hdr {
	char magic[8];
	__u32 version;	/* UNWIND_STORE_VERSION */
	__u32 hdr_size; /* sizeof(struct store_hdr) */
	__u64 elf_size; /* of the file the table was built from */
	__u32 nrows;
	__u32 sources;
	__u32 rows_crc; /* zlib's crc32 of the rows (crc32_fast.h) */
	__u32 hdr_crc;	/* of this header with hdr_crc 0 */
	__u32 nsegs;	/* the file's executable segments (unwind_seg__bias) */
	__u32 _pad0;
	struct unwind_seg segs[UNWIND_MAX_SEGS];
	struct unwind_stats stats;
	char build_id[UNWIND_BUILD_ID_LEN];
	char _pad[7];
};

_Static_assert(sizeof(struct store_hdr) % 8 == 0, "rows start 8-byte aligned");

const char *unwind_store__dir(char *buf, size_t len)
{
	char top[PATH_MAX];

	if (!cache_dir__path(top, sizeof(top)))
		return NULL;
	snprintf(buf, len, "%s/" SUB_DIR, top);
	return buf;
}

/* Whether ST is the recorder's user's and no one else may write it. */
static int ours(const struct stat *st)
{
	return st->st_uid == geteuid() && !(st->st_mode & 022);
}

/* A build id is lower-case hex, which also makes it a safe file name. */
static int entry_path(const char *dir, const char *id, char *out, size_t len)
{
	size_t n = strlen(id);

	if (!n || n >= UNWIND_BUILD_ID_LEN || strspn(id, "0123456789abcdef") != n)
		return -EINVAL;
	return snprintf(out, len, "%s/%s" SUFFIX, dir, id) >= (int)len ? -ENAMETOOLONG : 0;
}

static __u32 hdr_crc(const struct store_hdr *h)
{
	struct store_hdr c = *h;

	c.hdr_crc = 0;
	return (__u32)crc32_fast(0, &c, sizeof(c));
}

/* Up to LEN bytes from FD: how many (fewer at the file's end), or -errno. */
static ssize_t read_some(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = read(fd, (char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static int refuse(int err, char *why, size_t len, const char *what)
{
	if (why)
		snprintf(why, len, "%s", what);
	return err;
}

/*
 * H (its first GOT bytes read) and the rows after it, whose file is SIZE bytes, against what
 * the caller asked. Every version begins with the magic and the version.
 */
static int check_hdr(const struct store_hdr *h, size_t got, __u64 size, const char *id,
		     __u64 elf_size, char *why, size_t len)
{
	if (got < 12 || memcmp(h->magic, MAGIC, sizeof(h->magic)))
		return refuse(-EBADMSG, why, len, "not an entry of this store");
	if (h->version != UNWIND_STORE_VERSION)
		return -ESTALE; /* written by another version of the builder */
	if (got < sizeof(*h) || h->hdr_size != sizeof(*h))
		return refuse(-EBADMSG, why, len, "it is cut short");
	if (h->hdr_crc != hdr_crc(h))
		return refuse(-EBADMSG, why, len, "its header's checksum does not match");
	if (memchr(h->build_id, 0, sizeof(h->build_id)) == NULL || strcmp(h->build_id, id))
		return refuse(-EBADMSG, why, len, "it names another build id");
	if (h->elf_size != elf_size)
		return -ESTALE; /* another file claims the id: its table is not this one's */
	if (h->nsegs > UNWIND_MAX_SEGS || h->nrows > UNWIND_MAX_ROWS ||
	    size != sizeof(*h) + (__u64)h->nrows * sizeof(struct bs_unwind_row))
		return refuse(-EBADMSG, why, len, "its size is not its rows'");
	return 0;
}

int unwind_store__read(const char *dir, const char *id, __u64 elf_size, struct unwind_table *out,
		       char *why, size_t len)
{
	char path[PATH_MAX];
	struct store_hdr h;
	struct stat st;
	ssize_t got;
	size_t bytes;
	int fd, err;

	memset(out, 0, sizeof(*out));
	err = entry_path(dir, id, path, sizeof(path));
	if (err)
		return err == -EINVAL ? -ENOENT : err;
	/* Never a link, never a FIFO's wait: a regular file or nothing. */
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : refuse(-EPERM, why, len, "it cannot be opened");
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		err = refuse(-EPERM, why, len, "it is not a regular file");
		goto out;
	}
	if (!ours(&st)) {
		err = refuse(-EPERM, why, len, "another user owns it or may write it");
		goto out;
	}
	got = read_some(fd, &h, sizeof(h));
	err = got < 0 ? (int)got
		      : check_hdr(&h, (size_t)got, (__u64)st.st_size, id, elf_size, why, len);
	if (err)
		goto out;
	bytes = (size_t)h.nrows * sizeof(*out->rows);
	out->rows = malloc(bytes ?: 1);
	if (!out->rows) {
		err = -ENOMEM;
		goto out;
	}
	got = read_some(fd, out->rows, bytes);
	if (got != (ssize_t)bytes || (__u32)crc32_fast(0, out->rows, bytes) != h.rows_crc) {
		err = refuse(-EBADMSG, why, len, "its rows' checksum does not match");
		goto out;
	}
	/* The walk's binary search needs them sorted: a table that is not is not one. */
	for (__u32 i = 1; i < h.nrows; i++)
		if (out->rows[i].pc < out->rows[i - 1].pc) {
			err = refuse(-EBADMSG, why, len, "its rows are not sorted");
			goto out;
		}
	out->n = h.nrows;
	out->sources = h.sources;
	out->nsegs = h.nsegs;
	memcpy(out->segs, h.segs, sizeof(out->segs));
	out->stats = h.stats;
	memcpy(out->build_id, h.build_id, sizeof(out->build_id));
	/* Used now: the bound lets the entries used longest ago go first. */
	futimens(fd, NULL);
out:
	close(fd);
	if (err)
		unwind_table__free(out);
	return err;
}

/* DIR made if missing (0700), and the recorder's own: a folder others may write is not used. */
static int own_dir(const char *dir)
{
	char parent[PATH_MAX], *slash;
	struct stat st;

	snprintf(parent, sizeof(parent), "%s", dir);
	slash = strrchr(parent, '/');
	if (slash && slash != parent) {
		*slash = 0;
		if (mkdir(parent, 0700) && errno != EEXIST)
			return -errno;
	}
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st))
		return -errno;
	return S_ISDIR(st.st_mode) && ours(&st) ? 0 : -EPERM;
}

struct entry_age {
	__u64 mtime_ns, size;
	char name[NAME_MAX + 1];
};

static int by_age(const void *a, const void *b)
{
	const struct entry_age *x = a, *y = b;

	return x->mtime_ns < y->mtime_ns ? -1 : x->mtime_ns > y->mtime_ns;
}

/* The store back under its bound: the entries used longest ago removed. */
void unwind_store__trim(const char *dir)
{
	struct entry_age *v = NULL;
	size_t n = 0, cap = 0;
	__u64 total = 0;
	struct dirent *d;
	struct stat st;
	DIR *dp = opendir(dir);
	int dfd;

	if (!dp)
		return;
	dfd = dirfd(dp);
	while ((d = readdir(dp))) {
		size_t len = strlen(d->d_name);

		if (len <= strlen(SUFFIX) || strcmp(d->d_name + len - strlen(SUFFIX), SUFFIX) ||
		    fstatat(dfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode) ||
		    array__grow((void **)&v, n, &cap, sizeof(*v)))
			continue;
		v[n].mtime_ns = (__u64)st.st_mtim.tv_sec * 1000000000ull + st.st_mtim.tv_nsec;
		v[n].size = (__u64)st.st_size;
		snprintf(v[n].name, sizeof(v[n].name), "%s", d->d_name);
		total += v[n++].size;
	}
	qsort(v, n, sizeof(*v), by_age);
	for (size_t i = 0; i < n && total > UNWIND_STORE_MAX; i++)
		if (!unlinkat(dfd, v[i].name, 0))
			total -= v[i].size;
	free(v);
	closedir(dp);
}

/* T kept in DIR (unwind_store__write), the store not trimmed. */
static int write_entry(const char *dir, const struct unwind_table *t, __u64 elf_size)
{
	struct store_hdr h = { .version = UNWIND_STORE_VERSION,
			       .hdr_size = sizeof(h),
			       .elf_size = elf_size,
			       .nrows = t->n,
			       .sources = t->sources,
			       .nsegs = t->nsegs,
			       .stats = t->stats };
	char path[PATH_MAX], tmp[PATH_MAX + 32];
	size_t bytes = unwind_table__bytes(t);
	int fd, err;

	err = entry_path(dir, t->build_id, path, sizeof(path));
	if (err || (__u64)sizeof(h) + bytes > UNWIND_STORE_MAX)
		return err ?: -EFBIG;
	err = own_dir(dir);
	if (err)
		return err;
	memcpy(h.magic, MAGIC, sizeof(h.magic));
	memcpy(h.build_id, t->build_id, sizeof(h.build_id));
	memcpy(h.segs, t->segs, sizeof(h.segs));
	h.rows_crc = (__u32)crc32_fast(0, t->rows, bytes);
	h.hdr_crc = hdr_crc(&h);
	/* Written whole under a name of this thread's, then renamed: a reader sees all or none. */
	snprintf(tmp, sizeof(tmp), "%s.%d.%ld.tmp", path, (int)getpid(), (long)syscall(SYS_gettid));
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	errno = 0; /* a short write sets none */
	if (write(fd, &h, sizeof(h)) != (ssize_t)sizeof(h) ||
	    (bytes && write(fd, t->rows, bytes) != (ssize_t)bytes))
		err = errno ? -errno : -EIO;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

int unwind_store__write(const char *dir, const struct unwind_table *t, __u64 elf_size)
{
	int err = write_entry(dir, t, elf_size);

	if (!err)
		unwind_store__trim(dir);
	return err;
}

int unwind_store__table_untrimmed(const char *dir, const char *path, const char *root,
				  struct unwind_table *out, int *how, char *why, size_t len,
				  int *wrote)
{
	char id[UNWIND_BUILD_ID_LEN];
	__u64 t0 = mono_now_ns();
	struct stat st;
	int fd, err;

	*how = UNWIND_STORE_BUILT;
	*wrote = 0;
	fd = safe_open__regular(path, NULL);
	if (fd < 0) {
		memset(out, 0, sizeof(*out));
		return fd == -EINVAL ? -ENOEXEC : fd;
	}
	if (dir && !fstat(fd, &st) && unwind_table__build_id(fd, id, sizeof(id)) == 0 && id[0]) {
		err = unwind_store__read(dir, id, (__u64)st.st_size, out, why, len);
		if (!err) {
			*how = UNWIND_STORE_READ;
			out->stats.build_ns = mono_now_ns() - t0;
			close(fd);
			return 0;
		}
		if (err == -EBADMSG || err == -EPERM)
			*how = UNWIND_STORE_REFUSED;
	} else {
		dir = NULL;
	}
	err = unwind_table__build_fd(fd, path, root, out);
	if (!err && dir && !strcmp(out->build_id, id))
		*wrote = !write_entry(dir, out, (__u64)st.st_size);
	close(fd);
	return err;
}

int unwind_store__table(const char *dir, const char *path, const char *root,
			struct unwind_table *out, int *how, char *why, size_t len)
{
	int wrote, err = unwind_store__table_untrimmed(dir, path, root, out, how, why, len, &wrote);

	if (wrote)
		unwind_store__trim(dir);
	return err;
}
