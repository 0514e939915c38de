// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The unwind tables' store (user/stacks/unwind_store.h): an entry written is read back the
 * same; one spoiled, another user's, another version's or another file's is not trusted.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "unit.h"
#include "unwind_store.h"

static const char lib[] = "/usr/lib/x86_64-linux-gnu/libgomp.so.1";

/* The byte at OFF from the end of PATH, XOR X. */
static int spoil(const char *path, off_t off, int x)
{
	int fd = open(path, O_RDWR), ok;
	unsigned char b;

	if (fd < 0)
		return -1;
	ok = pread(fd, &b, 1, lseek(fd, 0, SEEK_END) - off) == 1;
	b ^= (unsigned char)x;
	ok = ok && pwrite(fd, &b, 1, lseek(fd, 0, SEEK_END) - off) == 1;
	close(fd);
	return ok ? 0 : -1;
}

static int same(const struct unwind_table *a, const struct unwind_table *b)
{
	return a->n == b->n && a->nsegs == b->nsegs && !strcmp(a->build_id, b->build_id) &&
	       !memcmp(a->rows, b->rows, unwind_table__bytes(a)) &&
	       !memcmp(a->segs, b->segs, sizeof(a->segs));
}

static void test_written_read_refused(void)
{
	char dir[] = "/tmp/unwind-store-XXXXXX", store[64], entry[512], why[96];
	struct unwind_table built = {}, read = {};
	struct stat st;
	int how, err;

	if (access(lib, R_OK)) {
		UNIT_SKIP("no %s", lib);
		return;
	}
	if (!ASSERT_TRUE(mkdtemp(dir), "a directory"))
		return;
	snprintf(store, sizeof(store), "%s/unwind", dir);
	ASSERT_EQ(stat(lib, &st), 0, "stat");
	/* First: built, and kept. */
	ASSERT_EQ(unwind_store__table(store, lib, NULL, &built, &how, why, sizeof(why)), 0,
		  "build");
	ASSERT_EQ(how, UNWIND_STORE_BUILT, "built");
	ASSERT_TRUE(built.n > 1000 && built.nsegs == 1 && built.build_id[0], "libgomp's table");
	snprintf(entry, sizeof(entry), "%s/%s.rows", store, built.build_id);
	ASSERT_EQ(stat(entry, &st), 0, "its entry");
	ASSERT_EQ(st.st_mode & 0777, 0600, "the entry's mode");
	ASSERT_EQ(stat(store, &st), 0, "the store");
	ASSERT_EQ(st.st_mode & 0777, 0700, "the store's mode");
	/* Second: read, the same table. */
	ASSERT_EQ(unwind_store__table(store, lib, NULL, &read, &how, why, sizeof(why)), 0, "read");
	ASSERT_EQ(how, UNWIND_STORE_READ, "read from the store");
	ASSERT_TRUE(same(&built, &read), "the table read is the table built");
	unwind_table__free(&read);
	/* Another file's size under the id: stale, not trusted. */
	stat(lib, &st);
	ASSERT_EQ(unwind_store__read(store, built.build_id, (__u64)st.st_size + 1, &read, why,
				     sizeof(why)),
		  -ESTALE, "another file that claims the id");
	ASSERT_EQ(unwind_store__read(store, "00ff", (__u64)st.st_size, &read, why, sizeof(why)),
		  -ENOENT, "an id without an entry");
	ASSERT_EQ(unwind_store__read(store, "../x", (__u64)st.st_size, &read, why, sizeof(why)),
		  -ENOENT, "a name that is no build id");
	/* A row's byte changed: refused, and the table built and kept again. */
	ASSERT_EQ(spoil(entry, 7, 0x10), 0, "spoil a row");
	err = unwind_store__read(store, built.build_id, (__u64)st.st_size, &read, why, sizeof(why));
	ASSERT_EQ(err, -EBADMSG, "a spoiled row");
	ASSERT_STREQ(why, "its rows' checksum does not match", "why");
	ASSERT_TRUE(!read.rows && !read.n, "nothing of it kept");
	ASSERT_EQ(unwind_store__table(store, lib, NULL, &read, &how, why, sizeof(why)), 0, "again");
	ASSERT_EQ(how, UNWIND_STORE_REFUSED, "refused, built again");
	unwind_table__free(&read);
	ASSERT_EQ(unwind_store__read(store, built.build_id, (__u64)st.st_size, &read, why,
				     sizeof(why)),
		  0, "the entry written again");
	unwind_table__free(&read);
	/* Cut short: refused. */
	ASSERT_EQ(truncate(entry, 100), 0, "cut the entry");
	ASSERT_EQ(unwind_store__read(store, built.build_id, (__u64)st.st_size, &read, why,
				     sizeof(why)),
		  -EBADMSG, "an entry cut short");
	unlink(entry);
	/* Another user's, or one another user may write: refused. */
	ASSERT_EQ(unwind_store__write(store, &built, (__u64)st.st_size), 0, "write");
	ASSERT_EQ(chmod(entry, 0622), 0, "group- and world-writable");
	ASSERT_EQ(unwind_store__read(store, built.build_id, (__u64)st.st_size, &read, why,
				     sizeof(why)),
		  -EPERM, "an entry others may write");
	ASSERT_EQ(chmod(entry, 0600), 0, "back to 0600");
	if (!geteuid()) {
		ASSERT_EQ(chown(entry, 65534, 65534), 0, "give it away");
		ASSERT_EQ(unwind_store__read(store, built.build_id, (__u64)st.st_size, &read, why,
					     sizeof(why)),
			  -EPERM, "another user's entry");
		ASSERT_STREQ(why, "another user owns it or may write it", "why");
	}
	/* Another version of the builder wrote it (the version follows the 8-byte magic). */
	unwind_store__write(store, &built, (__u64)st.st_size);
	{
		int fd = open(entry, O_RDWR);
		__u32 v = UNWIND_STORE_VERSION + 1;

		ASSERT_TRUE(fd >= 0 && pwrite(fd, &v, 4, 8) == 4, "another version");
		close(fd);
	}
	ASSERT_EQ(unwind_store__read(store, built.build_id, (__u64)st.st_size, &read, why,
				     sizeof(why)),
		  -ESTALE, "another version's entry");
	/* Off: built, nothing kept. */
	unlink(entry);
	ASSERT_EQ(unwind_store__table(NULL, lib, NULL, &read, &how, why, sizeof(why)), 0, "off");
	ASSERT_TRUE(how == UNWIND_STORE_BUILT && access(entry, F_OK), "built, not kept");
	unwind_table__free(&read);
	unwind_table__free(&built);
	rmdir(store);
	rmdir(dir);
}

/* Where a mapping's code is: the bias from the file offset it maps. */
static void test_bias_from_segments(void)
{
	struct unwind_seg segs[2] = { { 0x1000, 0x1000, 0x5000 }, { 0x9040, 0xa040, 0x800 } };
	__u64 bias = 0;

	ASSERT_EQ(unwind_seg__bias(segs, 2, 0x7f0000001000, 0x7f0000006000, 0x1000, &bias), 0,
		  "the first segment");
	ASSERT_EQ(bias, 0x7f0000000000, "its bias");
	/* The second segment's page starts before it: the page's offset, not the segment's. */
	ASSERT_EQ(unwind_seg__bias(segs, 2, 0x7f000000a000, 0x7f000000b000, 0x9000, &bias), 0,
		  "the second");
	ASSERT_EQ(bias, 0x7f000000a000 - 0x9000 + 0x9040 - 0xa040, "its bias");
	ASSERT_EQ(0x7f000000a040 - bias, 0xa040, "its first byte at its ELF address");
	ASSERT_EQ(unwind_seg__bias(segs, 2, 0x7f0000010000, 0x7f0000011000, 0x20000, &bias),
		  -ENOENT, "a mapping of no code");
}

int main(void)
{
	RUN_TEST(test_written_read_refused);
	RUN_TEST(test_bias_from_segments);
	return UNIT_EXIT();
}
