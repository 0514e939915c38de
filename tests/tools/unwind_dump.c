// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * unwind_dump: the unwind table bpfsight builds for ELF files (user/stacks/unwind_build.h),
 * for the tests that compare it with readelf -wF (tests/e2e/test_unwind_table.py) and for the
 * building benchmark (bench/bench_unwind.py).
 *
 *   unwind_dump [--root DIR] FILE    a line of counts (JSON), then a row a line:
 *                                    "PC KIND CFA_OFF RBP_OFF" (PC in hex); debug
 *                                    files are looked for under DIR/usr/lib/debug
 *   unwind_dump --stats [--store DIR] FILE...
 *                                    only the counts, a line per file, each file asked for
 *                                    twice through one cache: the second call must be a hit
 *                                    (its time a line of its own); with --store, the table
 *                                    built and written into the store DIR then read back
 *                                    (unwind_store.h: both times, a line); then the cache's
 *                                    counts
 *   unwind_dump --section eh|debug VADDR FILE
 *                                    FILE's bytes as one section loaded at VADDR (hex)
 *
 * The exit status is 1 when a table could not be built (the error is said on stderr).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mono_clock.h"
#include "unwind_build.h"
#include "unwind_store.h"

static const char *kind_name(__u8 kind)
{
	static const char *const names[] = { "rsp", "rbp", "plt", "signal", "end", "rbp-deref" };

	if (kind < sizeof(names) / sizeof(names[0]))
		return names[kind];
	switch (kind) {
	case BS_UNW_STOP_NONE:
		return "stop-none";
	case BS_UNW_STOP_EXPR:
		return "stop-expr";
	case BS_UNW_STOP_BAD:
		return "stop-bad";
	}
	return "?";
}

/*
 * The peak resident memory of this process since its exec (VmHWM: getrusage's maxrss keeps
 * the forking parent's, a Python's tens of MB, across the exec).
 */
static long max_rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

static void print_counts(const char *path, const struct unwind_table *t)
{
	const struct unwind_stats *s = &t->stats;

	printf("{\"file\": \"%s\", \"build_id\": \"%s\", \"sources\": %u, \"rows\": %u, "
	       "\"bytes\": %zu, \"cies\": %u, \"fdes\": %u, \"fdes_bad\": %u, "
	       "\"fdes_refused\": %u, \"fdes_expr\": %u, \"fdes_signal\": %u, "
	       "\"fdes_fp\": %u, \"fdes_framed\": %u, \"frame_pointers\": %d, "
	       "\"sections_cut\": %u, \"section_bytes\": %llu, \"build_ns\": %llu, "
	       "\"max_rss_kib\": %ld}\n",
	       path, t->build_id, t->sources, t->n, unwind_table__bytes(t), s->cies, s->fdes,
	       s->fdes_bad, s->fdes_refused, s->fdes_expr, s->rows_signal, s->fdes_fp,
	       s->fdes_framed, unwind_table__frame_pointers(t), s->sections_cut,
	       (unsigned long long)s->section_bytes, (unsigned long long)s->build_ns,
	       max_rss_kib());
}

static int read_file(const char *path, void **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	long n;

	if (!f)
		return -errno;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
	    !(*buf = malloc(n ? (size_t)n : 1)) || fread(*buf, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	*len = (size_t)n;
	return 0;
}

/*
 * The store's cost for PATH (unwind_store.h): its table built and written into DIR, then read
 * back (a recording's cold build against its next one's read). 0, or 1 on an error.
 */
static int store_times(const char *dir, const char *path)
{
	struct unwind_table a = {}, b = {};
	int how_a, how_b, err;
	__u64 t0 = mono_now_ns(), t1, t2;
	char why[96];

	err = unwind_store__table(dir, path, NULL, &a, &how_a, why, sizeof(why));
	t1 = mono_now_ns();
	err = err ?: unwind_store__table(dir, path, NULL, &b, &how_b, why, sizeof(why));
	t2 = mono_now_ns();
	if (!err && (how_a != UNWIND_STORE_BUILT || how_b != UNWIND_STORE_READ || a.n != b.n))
		err = -EPROTO;
	if (!err)
		printf("{\"file\": \"%s\", \"store_built_ns\": %llu, \"store_read_ns\": %llu}\n",
		       path, (unsigned long long)(t1 - t0), (unsigned long long)(t2 - t1));
	else
		fprintf(stderr, "%s: the store: %s\n", path, strerror(-err));
	unwind_table__free(&a);
	unwind_table__free(&b);
	return !!err;
}

static int stats(int argc, char **argv, const char *store)
{
	struct unwind_cache *c = unwind_cache__new(0);
	struct unwind_cache_stats cs;
	const struct unwind_table *t, *hit;
	int i, err, bad = 0;
	__u64 t0;

	if (!c)
		return 1;
	for (i = 0; i < argc; i++) {
		t = unwind_cache__get(c, argv[i], NULL, &err);
		if (!t) {
			fprintf(stderr, "%s: %s\n", argv[i], strerror(-err));
			bad = 1;
			continue;
		}
		print_counts(argv[i], t);
		t0 = mono_now_ns();
		hit = unwind_cache__get(c, argv[i], NULL, &err);
		printf("{\"file\": \"%s\", \"hit_ns\": %llu}\n", argv[i],
		       (unsigned long long)(mono_now_ns() - t0));
		if (hit != t) {
			fprintf(stderr, "%s: built twice\n", argv[i]);
			bad = 1;
		}
		if (store)
			bad |= store_times(store, argv[i]);
	}
	unwind_cache__stats(c, &cs);
	printf("{\"cache_files\": %u, \"cache_failed\": %u, \"cache_hits\": %u, "
	       "\"cache_rows\": %llu, \"cache_bytes\": %llu, \"cache_build_ns\": %llu, "
	       "\"max_rss_kib\": %ld}\n",
	       cs.files, cs.failed, cs.hits, (unsigned long long)cs.rows,
	       (unsigned long long)cs.bytes, (unsigned long long)cs.build_ns, max_rss_kib());
	unwind_cache__free(c);
	return bad;
}

int main(int argc, char **argv)
{
	struct unwind_table t;
	void *buf = NULL;
	size_t len = 0;
	__u32 i;
	int err;

	if (argc >= 5 && !strcmp(argv[1], "--stats") && !strcmp(argv[2], "--store"))
		return stats(argc - 4, argv + 4, argv[3]);
	if (argc >= 3 && !strcmp(argv[1], "--stats"))
		return stats(argc - 2, argv + 2, NULL);
	if (argc == 5 && !strcmp(argv[1], "--section")) {
		err = read_file(argv[4], &buf, &len);
		if (!err)
			err = unwind_table__from_section(buf, len, strtoull(argv[3], NULL, 16),
							 !strcmp(argv[2], "debug"), &t);
	} else if (argc == 2 || (argc == 4 && !strcmp(argv[1], "--root"))) {
		err = unwind_table__build(argv[argc - 1], argc == 4 ? argv[2] : NULL, &t);
	} else {
		fprintf(stderr, "usage: unwind_dump [--root DIR] FILE | --stats [--store DIR] "
				"FILE... | --section eh|debug VADDR FILE\n");
		return 2;
	}
	free(buf);
	if (err) {
		fprintf(stderr, "%s: %s\n", argv[argc - 1], strerror(-err));
		return 1;
	}
	print_counts(argv[argc - 1], &t);
	for (i = 0; i < t.n; i++)
		printf("%x %s %d %d\n", t.rows[i].pc, kind_name(t.rows[i].kind), t.rows[i].cfa_off,
		       t.rows[i].rbp_off);
	unwind_table__free(&t);
	return 0;
}
