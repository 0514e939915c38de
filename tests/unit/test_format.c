// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Trace file format: the codec, writer and reader round trips, the file header's optional
 * parts, the writer's flags, ticks, refusals and write errors, the compression it reaches.
 */
#include "format_files.h"

static void test_varint(void)
{
	static const __u64 vals[] = {
		0, 1, 127, 128, 16383, 16384, 0xffffffffull, 1ull << 63, ~0ull
	};
	__u8 buf[16];
	size_t i, n;
	__u64 v;

	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		n = trace_varint_put(buf, vals[i]);
		if (!ASSERT_EQ(trace_varint_get(buf, n, &v), n, "varint length") ||
		    !ASSERT_TRUE(v == vals[i], "varint value") ||
		    !ASSERT_EQ(trace_varint_get(buf, n - 1, &v), 0, "truncated varint") ||
		    !ASSERT_TRUE(trace_unzigzag(trace_zigzag(vals[i])) == vals[i], "zigzag"))
			return;
	}
	ASSERT_EQ(trace_varint_put(buf, ~0ull), 10, "max varint is 10 bytes");
	/* Bit 64 and beyond, and an 11th byte, are refused. */
	buf[9] = 0x02;
	ASSERT_EQ(trace_varint_get(buf, 10, &v), 0, "overflowing varint");
	memset(buf, 0x80, 11);
	buf[10] = 0;
	ASSERT_EQ(trace_varint_get(buf, 11, &v), 0, "11-byte varint");
	ASSERT_TRUE(trace_zigzag(-1ull) == 1 && trace_zigzag(1) == 2, "zigzag small values");
}

static void test_codec(void)
{
	struct trace_codec *enc = trace_codec__new(), *dec = trace_codec__new();
	static __u64 rec[TRACE_CODEC_MAX_WORDS], out[TRACE_CODEC_MAX_WORDS];
	static __u8 buf[TRACE_CODEC_ENC_MAX(TRACE_CODEC_MAX_WORDS)];
	struct bs_hdr *h = (struct bs_hdr *)rec;
	__u32 nw;
	int i, n, k;

	if (!ASSERT_TRUE(enc && dec, "codec alloc"))
		goto cleanup;
	rng_seed(7);
	for (i = 0; i < 2000; i++) {
		__u16 size = i % 100 == 0 ? 65528 : (__u16)(24 + 8 * (rng() % 20));

		make_rec(rec, (__u16)(rng() % BS_REC_TYPE_MAX), size, pick_word());
		n = trace_codec__encode(enc, h, buf);
		if (!ASSERT_TRUE(n > 0 && (size_t)n <= TRACE_CODEC_ENC_MAX(size / 8), "encode"))
			goto cleanup;
		k = trace_codec__decode(dec, buf, (size_t)n, out, &nw);
		if (!ASSERT_EQ(k, n, "decode consumes the record") ||
		    !ASSERT_EQ(nw, size / 8, "nwords") ||
		    !ASSERT_TRUE(!memcmp(out, rec, size), "decoded record equals encoded"))
			goto cleanup;
		/* Any prefix of the encoding is an error, never a record. */
		k = trace_codec__decode(dec, buf, rng() % (size_t)n, out, &nw);
		if (!ASSERT_TRUE(k < 0, "decode of a prefix fails"))
			goto cleanup;
		trace_codec__reset(dec);
		trace_codec__reset(enc);
	}

	/* Word 0 must agree with the framing. */
	make_rec(rec, BS_REC_SYSCALL, 48, 1);
	n = trace_codec__encode(enc, h, buf);
	buf[0] = BS_REC_EXIT; /* framing type differs from word 0 */
	ASSERT_EQ(trace_codec__decode(dec, buf, (size_t)n, out, &nw), -EBADMSG, "type mismatch");
	trace_codec__reset(dec);
	buf[0] = BS_REC_SYSCALL;
	buf[1] = 7; /* nwords differs from word 0 size */
	ASSERT_TRUE(trace_codec__decode(dec, buf, (size_t)n, out, &nw) < 0, "size mismatch");
	buf[0] = 0x80; /* type 4096 (BS_REC_TYPE_MAX) */
	buf[1] = 0x20;
	buf[2] = 3;
	ASSERT_EQ(trace_codec__decode(dec, buf, (size_t)n, out, &nw), -EBADMSG, "type >= 4096");
	buf[0] = 1;
	buf[1] = 2; /* two words: shorter than bs_hdr */
	ASSERT_EQ(trace_codec__decode(dec, buf, (size_t)n, out, &nw), -EBADMSG, "nwords < 3");
	h->size = 20;
	ASSERT_EQ(trace_codec__encode(enc, h, buf), -EINVAL, "encode size % 8");
	h->size = 48;
	h->type = BS_REC_TYPE_MAX;
	ASSERT_EQ(trace_codec__encode(enc, h, buf), -EINVAL, "encode type 4096");
cleanup:
	trace_codec__free(enc);
	trace_codec__free(dec);
}

static void test_clocks(void)
{
	struct trace_clocks a, b;

	trace_clocks__now(&a);
	trace_clocks__now(&b);
	ASSERT_TRUE(a.mono_ns && a.realtime_ns && a.boottime_ns, "clocks set");
	ASSERT_TRUE(b.mono_ns >= a.mono_ns, "monotonic");
	ASSERT_TRUE(a.boottime_ns >= a.mono_ns - 1000000, "boottime >= monotonic");
}

/* Every prefix of a small file: the complete chunks before the cut, nothing else. */
static void test_roundtrip(void)
{
	static const __u16 types[] = {
		BS_REC_STRING, BS_REC_PROCESS, BS_REC_THREAD, BS_REC_LOSS,    BS_REC_FORK,
		BS_REC_EXEC,   BS_REC_EXIT,    BS_REC_COMM,   BS_REC_SYSCALL, BS_REC_SYSCALL_AGG,
		BS_REC_OFFCPU, 0x55,	       0x7f,	      0x80,	      0xff
	};
	struct trace_meta meta = {
		.hostname = "gpu-node-7",
		.kernel = "6.18.0 #1 SMP",
		.boot_id = "0b7b8c9e-1111-2222-3333-444455556666",
		.cmdline = "bpfsight record -t osrt,sched -o x.bst -- python train.py",
		.families = "osrt,sched",
		.target = "launch: python train.py",
		.options = "threshold=10us buffer=64M",
		.tool_version = "0.1-test",
		.gpus = "0000:18:00.0 NVIDIA H100 80GB HBM3\n0000:2a:00.0 NVIDIA H100 80GB HBM3",
		.start = { 123456789, 1700000000123456789ull, 223456789 },
	};
	struct trace_clocks end = { 999999999, 1700000001000000000ull, 1099999999 };
	static __u64 buf[TRACE_CODEC_MAX_WORDS];
	const struct trace_meta *m;
	struct trace_writer *w = NULL;
	struct trace_reader *r = NULL;
	const struct bs_hdr *h;
	struct recs rs = { 0 };
	__u64 ts = 5000000, lo = ~0ull, hi = 0, last_bytes;
	char path[128], err[256];
	size_t i, nread = 0, nchunks = 0;
	int e = 0;

	tmp_path(path, sizeof(path), "roundtrip");
	w = trace_writer__open(path, &meta, 0, &e);
	if (!ASSERT_TRUE(w, "writer open") || !ASSERT_EQ(e, 0, "open err"))
		goto cleanup;
	rng_seed(42);
	last_bytes = trace_writer__bytes(w);
	for (i = 0; i < 40000; i++) {
		__u16 type = types[rng() % (sizeof(types) / sizeof(types[0]))];
		__u16 size = (__u16)(24 + 8 * (rng() % 24));

		if (i % 5000 == 17)
			size = 65528; /* the largest record there can be */
		/* Mostly forward, sometimes backwards, sometimes extreme. */
		if (rng() % 10 == 0)
			ts -= rng() % 100000;
		else
			ts += rng() % 3000;
		make_rec(buf, type, size, i % 1000 == 3 ? ~0ull : i % 1000 == 4 ? 0 : ts);
		e = trace_writer__append(w, (struct bs_hdr *)buf);
		if (!ASSERT_EQ(e, 0, "append") || !ASSERT_EQ(recs_add(&rs, (void *)buf), 0, "keep"))
			goto cleanup;
		lo = ((struct bs_hdr *)buf)->ts < lo ? ((struct bs_hdr *)buf)->ts : lo;
		hi = ((struct bs_hdr *)buf)->ts > hi ? ((struct bs_hdr *)buf)->ts : hi;
		if (trace_writer__bytes(w) != last_bytes)
			nchunks++;
		last_bytes = trace_writer__bytes(w);
	}
	ASSERT_EQ(trace_writer__flush(w), 0, "flush");
	if (trace_writer__bytes(w) != last_bytes)
		nchunks++;
	ASSERT_TRUE(nchunks >= 3, "several chunks");
	ASSERT_EQ(trace_writer__records(w), rs.n, "writer record count");
	e = trace_writer__close(w, &end);
	w = NULL;
	if (!ASSERT_EQ(e, 0, "close"))
		goto cleanup;

	r = trace_reader__open(path, err, sizeof(err), &e);
	if (!ASSERT_TRUE(r, err))
		goto cleanup;
	m = trace_reader__meta(r);
	ASSERT_EQ(m->version, BS_FILE_VERSION, "version");
	ASSERT_STREQ(m->hostname, meta.hostname, "hostname");
	ASSERT_STREQ(m->kernel, meta.kernel, "kernel");
	ASSERT_STREQ(m->boot_id, meta.boot_id, "boot_id");
	ASSERT_STREQ(m->cmdline, meta.cmdline, "cmdline");
	ASSERT_STREQ(m->families, meta.families, "families");
	ASSERT_STREQ(m->target, meta.target, "target");
	ASSERT_STREQ(m->options, meta.options, "options");
	ASSERT_STREQ(m->tool_version, meta.tool_version, "tool_version");
	ASSERT_STREQ(m->gpus, meta.gpus, "gpus");
	ASSERT_TRUE(!memcmp(&m->start, &meta.start, sizeof(meta.start)), "start clocks");
	while (trace_reader__next(r, &h) == 1) {
		if (!ASSERT_TRUE(nread < rs.n, "no extra records") ||
		    !ASSERT_EQ(h->size, recs_get(&rs, nread)->size, "record size") ||
		    !ASSERT_TRUE(!memcmp(h, recs_get(&rs, nread), h->size), "record bytes"))
			goto cleanup;
		nread++;
	}
	ASSERT_EQ(nread, rs.n, "records read");
	{
		const struct trace_status *st = trace_reader__status(r);

		ASSERT_EQ(st->records, rs.n, "status records");
		ASSERT_EQ(st->chunks, nchunks, "status chunks");
		ASSERT_EQ(st->corrupt_chunks, 0, "corrupt");
		ASSERT_EQ(st->skipped_bytes, 0, "skipped");
		ASSERT_EQ(st->clean_close, 1, "clean close");
		ASSERT_EQ(st->truncated, 0, "truncated");
		ASSERT_EQ(st->has_end, 1, "has end");
		ASSERT_TRUE(!memcmp(&st->end, &end, sizeof(end)), "end clocks");
		ASSERT_TRUE(st->first_ts == lo && st->last_ts == hi, "first/last ts");
	}
cleanup:
	trace_writer__free(w);
	trace_reader__free(r);
	recs_free(&rs);
	unlink(path);
}

static void test_meta_absent(void)
{
	struct trace_meta meta = { .hostname = "h", .kernel = "" };
	struct trace_writer *w;
	struct trace_reader *r = NULL;
	const struct trace_meta *m;
	const struct bs_hdr *h;
	char path[128], err[256];
	__u64 before = mono_ns();
	int e = 0;

	tmp_path(path, sizeof(path), "meta");
	w = trace_writer__open(path, &meta, 0, &e);
	if (!ASSERT_TRUE(w, "open"))
		return;
	ASSERT_EQ(trace_writer__close(w, NULL), 0, "close empty trace");
	r = trace_reader__open(path, err, sizeof(err), &e);
	if (!ASSERT_TRUE(r, err))
		goto cleanup;
	m = trace_reader__meta(r);
	ASSERT_STREQ(m->hostname, "h", "hostname");
	ASSERT_TRUE(!m->kernel || !*m->kernel, "empty kernel is absent");
	ASSERT_TRUE(!m->cmdline && !m->options && !m->tool_version, "NULL fields absent");
	/* Zero start clocks: the writer takes its own snapshot. */
	ASSERT_TRUE(m->start.mono_ns >= before && m->start.realtime_ns > 0, "start clocks");
	ASSERT_EQ(trace_reader__next(r, &h), 0, "no records");
	ASSERT_EQ(trace_reader__status(r)->clean_close, 1, "clean close");
	ASSERT_EQ(trace_reader__status(r)->has_end, 1, "has end");
	ASSERT_TRUE(trace_reader__status(r)->end.mono_ns >= m->start.mono_ns, "end clocks");
cleanup:
	trace_reader__free(r);
	unlink(path);
}

static void test_open_flags(void)
{
	struct trace_writer *w;
	char path[128], link[128], dir[128];
	struct stat st;
	int e = 0;

	tmp_path(path, sizeof(path), "flags");
	w = trace_writer__open(path, NULL, 0, &e);
	if (!ASSERT_TRUE(w, "create"))
		return;
	ASSERT_EQ(trace_writer__close(w, NULL), 0, "close");
	ASSERT_EQ(stat(path, &st), 0, "stat");
	ASSERT_EQ(st.st_mode & 07777, 0600, "mode 0600");

	e = 0;
	w = trace_writer__open(path, NULL, 0, &e);
	ASSERT_TRUE(!w, "existing file refused");
	ASSERT_EQ(e, -EEXIST, "EEXIST");
	trace_writer__free(w);

	ASSERT_EQ(write_whole(path, "old contents", 12), 0, "overwrite");
	w = trace_writer__open(path, NULL, TRACE_WRITER_FORCE, &e);
	ASSERT_TRUE(w, "FORCE replaces");
	ASSERT_EQ(trace_writer__close(w, NULL), 0, "close");
	ASSERT_EQ(stat(path, &st), 0, "stat");
	ASSERT_TRUE(st.st_size > 12 && (st.st_mode & 07777) == 0600, "replaced");

	tmp_path(link, sizeof(link), "link");
	ASSERT_EQ(symlink(path, link), 0, "symlink");
	e = 0;
	w = trace_writer__open(link, NULL, TRACE_WRITER_FORCE, &e);
	ASSERT_TRUE(!w, "symlink refused with FORCE");
	ASSERT_EQ(e, -ELOOP, "ELOOP");
	trace_writer__free(w);
	e = 0;
	w = trace_writer__open(link, NULL, 0, &e);
	ASSERT_TRUE(!w, "symlink refused without FORCE");
	trace_writer__free(w);
	ASSERT_EQ(lstat(link, &st), 0, "link still there");
	ASSERT_TRUE(S_ISLNK(st.st_mode), "link untouched");

	tmp_path(dir, sizeof(dir), "dir");
	ASSERT_EQ(mkdir(dir, 0700), 0, "mkdir");
	e = 0;
	w = trace_writer__open(dir, NULL, TRACE_WRITER_FORCE, &e);
	ASSERT_TRUE(!w, "directory refused");
	ASSERT_EQ(e, -EINVAL, "EINVAL for a directory");
	trace_writer__free(w);

	rmdir(dir);
	unlink(link);
	unlink(path);
}

static void test_tick(void)
{
	struct bs_syscall s = { .h = { .type = BS_REC_SYSCALL, .size = sizeof(s), .ts = 1 } };
	struct trace_writer *w;
	__u64 t0, t1, b;
	char path[128];
	int e = 0;

	tmp_path(path, sizeof(path), "tick");
	w = trace_writer__open(path, NULL, 0, &e);
	if (!ASSERT_TRUE(w, "open"))
		return;
	b = trace_writer__bytes(w);
	ASSERT_EQ(trace_writer__tick(w, mono_ns() + 5 * BS_CHUNK_TARGET_NS), 0, "tick on empty");
	ASSERT_EQ(trace_writer__bytes(w), b, "nothing to close");
	t0 = mono_ns();
	ASSERT_EQ(trace_writer__append(w, &s.h), 0, "append");
	t1 = mono_ns();
	ASSERT_EQ(trace_writer__tick(w, t0 + BS_CHUNK_TARGET_NS - 1), 0, "tick < 1 s");
	ASSERT_EQ(trace_writer__bytes(w), b, "chunk still open before 1 s");
	ASSERT_EQ(trace_writer__tick(w, 0), 0, "tick in the past");
	ASSERT_EQ(trace_writer__bytes(w), b, "chunk still open");
	ASSERT_EQ(trace_writer__tick(w, t1 + BS_CHUNK_TARGET_NS), 0, "tick at 1 s");
	ASSERT_TRUE(trace_writer__bytes(w) > b, "chunk closed after 1 s");
	ASSERT_EQ(trace_writer__records(w), 1, "records");
	ASSERT_EQ(trace_writer__close(w, NULL), 0, "close");
	unlink(path);
}

static void test_append_invalid(void)
{
	__u64 buf[8] = { 0 };
	struct bs_hdr *h = (struct bs_hdr *)buf;
	struct trace_writer *w;
	char path[128];
	int e = 0;

	tmp_path(path, sizeof(path), "inval");
	w = trace_writer__open(path, NULL, 0, &e);
	if (!ASSERT_TRUE(w, "open"))
		return;
	*h = (struct bs_hdr){ .type = BS_REC_EXIT, .size = 16 };
	ASSERT_EQ(trace_writer__append(w, h), -EINVAL, "size < 24");
	h->size = 36;
	ASSERT_EQ(trace_writer__append(w, h), -EINVAL, "size % 8");
	h->size = 32;
	h->type = BS_REC_TYPE_MAX;
	ASSERT_EQ(trace_writer__append(w, h), -EINVAL, "type >= 256");
	h->type = BS_REC_FOOTER;
	ASSERT_EQ(trace_writer__append(w, h), -EINVAL, "footer type");
	h->type = BS_REC_CHUNK_INDEX;
	ASSERT_EQ(trace_writer__append(w, h), -EINVAL, "index type");
	ASSERT_EQ(trace_writer__records(w), 0, "nothing appended");
	h->type = BS_REC_EXIT;
	ASSERT_EQ(trace_writer__append(w, h), 0, "valid record");
	ASSERT_EQ(trace_writer__close(w, NULL), 0, "close");
	trace_writer__free(NULL);
	trace_reader__free(NULL);
	unlink(path);
}

/* A full file system (here: RLIMIT_FSIZE) is an error the caller sees, not a torn file. */
static void test_write_error(void)
{
	struct rlimit old, lim;
	struct read_result res;
	struct trace_writer *w = NULL;
	static __u64 buf[512];
	struct recs rs = { 0 };
	size_t expect[8], i;
	void (*oldsig)(int);
	char path[128];
	int e = 0;

	getrlimit(RLIMIT_FSIZE, &old);
	oldsig = signal(SIGXFSZ, SIG_IGN);
	tmp_path(path, sizeof(path), "wfail");
	w = trace_writer__open(path, NULL, 0, &e);
	if (!ASSERT_TRUE(w, "open"))
		goto cleanup;
	rng_seed(5);
	for (i = 0; i < 4; i++) {
		make_rec(buf, BS_REC_LOSS, 40, i);
		trace_writer__append(w, (struct bs_hdr *)buf);
		recs_add(&rs, (struct bs_hdr *)buf);
		expect[i] = i;
	}
	ASSERT_EQ(trace_writer__flush(w), 0, "first chunk written");
	lim = old;
	lim.rlim_cur = trace_writer__bytes(w) + 1000;
	if (!ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0, "setrlimit"))
		goto cleanup;
	/* Random words do not compress: the first full chunk goes past the limit. */
	for (i = 0; i < 100000 && !e; i++) {
		make_rec(buf, 0x60, 4096, i);
		for (size_t k = 3; k < 512; k++)
			buf[k] = rng();
		e = trace_writer__append(w, (struct bs_hdr *)buf);
	}
	ASSERT_EQ(e, -EFBIG, "append reports the write error");
	lim.rlim_cur = trace_writer__bytes(w);
	setrlimit(RLIMIT_FSIZE, &lim);
	ASSERT_EQ(trace_writer__close(w, NULL), -EFBIG, "close reports the footer write error");
	w = NULL;
	setrlimit(RLIMIT_FSIZE, &old);
	read_check(path, &rs, expect, 4, &res);
	ASSERT_EQ(res.open_err, 0, res.err);
	ASSERT_EQ(res.n, 4, "the chunk before the error survives");
	ASSERT_TRUE(!res.mismatch, "records intact");
	ASSERT_EQ(res.st.corrupt_chunks, 0, "torn chunk was cut off");
	ASSERT_EQ(res.st.truncated, 1, "no footer");
cleanup:
	trace_writer__free(w);
	setrlimit(RLIMIT_FSIZE, &old);
	signal(SIGXFSZ, oldsig);
	recs_free(&rs);
	unlink(path);
}

/* What a syscall-heavy trace costs on disk; the goal is <= 6 bytes per event. */
static void test_syscall_compression(void)
{
	const size_t n = 100000;
	struct bs_syscall s = { .h = { .type = BS_REC_SYSCALL,
				       .size = sizeof(s),
				       .cpu = 3,
				       .pid = 4242,
				       .tid = 4243 } };
	struct trace_writer *w;
	struct stat st;
	char path[128];
	__u64 t0, t1, ts = 1000000000;
	double per_rec;
	size_t i;
	int e = 0;

	tmp_path(path, sizeof(path), "syscalls");
	w = trace_writer__open(path, &small_meta, 0, &e);
	if (!ASSERT_TRUE(w, "open"))
		return;
	rng_seed(1234);
	s.nr = 0;
	t0 = mono_ns();
	for (i = 0; i < n; i++) {
		ts += 900 + rng() % 200;
		s.h.ts = ts;
		s.dur = 250 + rng() % 100;
		if (!ASSERT_EQ(trace_writer__append(w, &s.h), 0, "append"))
			break;
	}
	ASSERT_EQ(trace_writer__close(w, NULL), 0, "close");
	t1 = mono_ns();
	ASSERT_EQ(stat(path, &st), 0, "stat");
	per_rec = (double)st.st_size / (double)n;
	printf("# syscall stream: %.2f bytes/record on disk (%lld bytes for %zu records of %zu)\n",
	       per_rec, (long long)st.st_size, n, sizeof(s));
	printf("# writer: %.2f Mrecords/s, %.0f MB/s of raw records\n",
	       (double)n * 1e3 / (double)(t1 - t0),
	       (double)n * sizeof(s) * 1e3 / (double)(t1 - t0));
	ASSERT_TRUE(per_rec < 12, "codec + zstd keep syscalls small");
	unlink(path);
}

int main(void)
{
	if (format_tmpdir_make())
		return 1;
	RUN_TEST(test_varint);
	RUN_TEST(test_codec);
	RUN_TEST(test_clocks);
	RUN_TEST(test_roundtrip);
	RUN_TEST(test_meta_absent);
	RUN_TEST(test_open_flags);
	RUN_TEST(test_tick);
	RUN_TEST(test_append_invalid);
	RUN_TEST(test_write_error);
	RUN_TEST(test_syscall_compression);
	format_tmpdir_remove();
	return UNIT_EXIT();
}
