// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cuda family, decode side: hand-built records (names, errors, depth, truncation, garbage),
 * the entry probe's cookies, and the four reports against numbers computed by hand from a
 * trace written with the real trace writer.
 */
#include "cuda_rec.h"

static char tmp_dir[64];

/* ---- Hand-built records: names, errors, depth, truncation. ---- */

static void observe_string(struct trace_model *m, __u32 pid, __u32 id, const char *s)
{
	struct {
		struct bs_string s;
		char text[120];
	} str = {};

	str.s.h.type = BS_REC_STRING;
	str.s.h.size = sizeof(str.s) + ((strlen(s) + 7) & ~7ul);
	str.s.h.pid = pid;
	str.s.id = id;
	str.s.len = strlen(s);
	memcpy(str.text, s, strlen(s));
	trace_model__observe(m, &str.s.h);
}

static void observe_symbol(struct trace_model *m, __u32 pid, __u64 addr, __u32 id)
{
	struct bs_symbol sym = {};

	sym.h.type = BS_REC_SYMBOL;
	sym.h.size = sizeof(sym);
	sym.h.pid = pid;
	sym.addr = addr;
	sym.name_id = id;
	sym.kind = BS_SYM_HOST_FUNC;
	trace_model__observe(m, &sym.h);
}

static void launch_words(struct rec *r, __u64 func, __u32 gx, __u32 gy, __u32 gz, __u32 bx,
			 __u32 by, __u32 bz, __u64 shmem, __u64 stream)
{
	/* cudaLaunchKernel(func, dim3 grid, dim3 block, args, sharedMem, stream) */
	r->u.args[0] = func;
	r->u.args[1] = gx | (__u64)gy << 32;
	r->u.args[2] = gz;
	r->u.args[3] = bx | (__u64)by << 32;
	r->u.args[4] = bz;
	r->u.args[5] = 0x7ffd0000; /* void **args */
	r->u.args[6] = shmem;
	r->u.args[7] = stream;
}

static void test_decode_records(void)
{
	struct trace_model *m = trace_model__new();
	struct event ev;
	struct rec r;

	observe_string(m, 42, 1, "vecAdd(float*, float*, int)");
	observe_symbol(m, 42, 0x401000, 1);

	rec_init(&r, "cudaLaunchKernel", 42, 5000, 700, 0);
	launch_words(&r, 0x401000, 4, 2, 1, 256, 1, 1, 0, 0);
	ASSERT_EQ(decode(&r, m, &ev), 1, "decodes");
	ASSERT_STREQ(ev.kind, "cuda_api", "kind");
	ASSERT_STREQ(ev.name, "cudaLaunchKernel", "name");
	ASSERT_EQ(ev.ts, 5000, "ts");
	ASSERT_EQ(ev.dur, 700, "dur");
	ASSERT_EQ(ev.pid, 42, "pid");
	ASSERT_STR(&ev, "kernel", "vecAdd(float*, float*, int)");
	ASSERT_U64(&ev, "grid_x", 4);
	ASSERT_U64(&ev, "grid_y", 2);
	ASSERT_U64(&ev, "block_x", 256);
	ASSERT_U64(&ev, "shared_bytes", 0);
	ASSERT_HEX(&ev, "stream", 0);
	ASSERT_S64(&ev, "ret", 0);
	ASSERT_NO_ARG(&ev, "error");
	ASSERT_NO_ARG(&ev, "depth");

	/* Another process: the symbol belongs to pid 42 only. Upper rax bits are not the code. */
	r.u.h.pid = 43;
	r.u.ret = 0xdead000000000023ll;
	decode(&r, m, &ev);
	ASSERT_STR(&ev, "kernel", "0x401000");
	ASSERT_S64(&ev, "ret", 35);
	ASSERT_STR(&ev, "error", "cudaErrorInsufficientDriver");

	rec_init(&r, "cuMemAlloc_v2", 42, 5100, 80, 2);
	r.u.depth = 1;
	r.u.args[0] = 0x7ffd1000;
	r.u.args[1] = 1 << 20;
	r.u.out = 0x7f0000000000;
	decode(&r, m, &ev);
	ASSERT_STR(&ev, "error", "CUDA_ERROR_OUT_OF_MEMORY");
	ASSERT_U64(&ev, "depth", 1);
	ASSERT_U64(&ev, "bytes", 1 << 20);
	ASSERT_NO_ARG(&ev, "ptr");
	r.u.ret = 0;
	decode(&r, m, &ev);
	ASSERT_HEX(&ev, "ptr", 0x7f0000000000);
	ASSERT_NO_ARG(&ev, "error");
	ASSERT_EQ(ev.nargs, 4, "ret depth bytes ptr");

	rec_init(&r, "cudaFreeAsync_ptsz", 42, 5200, 5, 0);
	r.u.args[0] = 0x7f0000000000;
	r.u.args[1] = 0x5000;
	decode(&r, m, &ev);
	ASSERT_HEX(&ev, "ptr", 0x7f0000000000);
	ASSERT_HEX(&ev, "stream", 0x5000);

	rec_init(&r, "cudaEventSynchronize", 42, 5300, 5, 0);
	r.u.args[0] = 0xe1;
	decode(&r, m, &ev);
	ASSERT_HEX(&ev, "event", 0xe1);
	ASSERT_EQ(ev.nargs, 2, "ret event");

	/* A cudaMemcpyKind out of range is no direction at all. */
	rec_init(&r, "cudaMemcpy", 42, 5400, 5, 0);
	r.u.args[2] = 10;
	r.u.args[3] = 5;
	decode(&r, m, &ev);
	ASSERT_STR(&ev, "kind", "unknown");
	ASSERT_U64(&ev, "bytes", 10);

	/* A record that claims a deref it does not hold: the deref is ignored. */
	rec_init(&r, "cuMemcpy2D_v2", 42, 5500, 5, 0);
	r.u.deref_len = BS_UCALL_DEREF_STRUCT;
	decode(&r, m, &ev);
	ASSERT_STR(&ev, "kind", "unknown");
	ASSERT_NO_ARG(&ev, "bytes");
	ASSERT_NO_ARG(&ev, "src");

	/* A name that fills the whole string copy without a NUL is cut, not overrun. */
	rec_init(&r, "cuLibraryGetKernel", 42, 5600, 5, 0);
	memset(r.deref, 'k', sizeof(r.deref));
	rec_deref(&r, r.deref, BS_UCALL_DEREF_STRING);
	decode(&r, m, &ev);
	ASSERT_EQ(strlen(ev_arg(&ev, "name")->str), sizeof(ev.strbuf) - 1, "name cut at strbuf");

	/* A function a newer table knows. */
	rec_init(&r, "cudaMalloc", 42, 5700, 5, 1);
	r.u.fn = 4000;
	decode(&r, m, &ev);
	ASSERT_STREQ(ev.name, "cuda_fn_4000", "unknown fn");
	ASSERT_STR(&ev, "error", "error_1");
	ASSERT_EQ(ev.nargs, 2, "ret error");

	/* Through the family registry: a record shorter than bs_ucall is refused. */
	rec_init(&r, "cudaMalloc", 42, 5800, 5, 0);
	if (family__decoder(BS_REC_CUDA_CALL)) {
		ASSERT_EQ(family__decode(&r.u.h, m, &ev), 1, "registered decoder");
		r.u.h.size = sizeof(r.u) - 8;
		ASSERT_EQ(family__decode(&r.u.h, m, &ev), -EINVAL, "short record refused");
	}
	trace_model__free(m);
}

/* Decoders run on untrusted records: any bytes, any claimed deref_len, any fn. */
static void test_decode_garbage(void)
{
	struct trace_model *m = trace_model__new();
	const struct report *const *rp;
	unsigned int seed = 1;
	void *st[8] = {};
	struct event ev;
	struct rec r;
	int n = 0;
	/* Three call sites for cuda_callsites: stacks of one Python frame on lines 1-3. */
	struct {
		struct bs_stack h;
		struct bs_frame f;
	} stk = {};
	struct bs_stack_ref ref = {};

	for (__u32 id = 1; id <= 3; id++) {
		stk.h.h = (struct bs_hdr){ .type = BS_REC_STACK, .size = sizeof(stk) };
		stk.h.id = id;
		stk.h.nframes = 1;
		stk.f = (struct bs_frame){ .kind = BS_FRAME_PYTHON, .line = id };
		trace_model__observe(m, &stk.h.h);
	}
	for (rp = cuda_reports; *rp; rp++, n++)
		st[n] = (*rp)->new ();
	for (int i = 0; i < 20000; i++) {
		unsigned char *p = (unsigned char *)&r;

		for (size_t b = 0; b < sizeof(r); b++)
			p[b] = rand_r(&seed);
		r.u.h.type = BS_REC_CUDA_CALL;
		r.u.h.size = sizeof(r.u) + (rand_r(&seed) % (BS_UCALL_DEREF_STRING / 8 + 1)) * 8;
		r.u.fn = rand_r(&seed) % (cuda_table.napis + 8);
		if (i & 1)
			r.u.deref_len = i & 2 ? BS_UCALL_DEREF_STRUCT : BS_UCALL_DEREF_STRING;
		if (i & 4)
			r.u.depth = 0; /* what the reports count */
		if (!(i & 8)) {	       /* the call carries one of the three stacks */
			ref.h = (struct bs_hdr){ .type = BS_REC_STACK_REF,
						 .size = sizeof(ref),
						 .tid = r.u.h.tid,
						 .ts = r.u.h.ts };
			ref.stack_id = 1 + i % 3;
			ref.event_type = BS_REC_CUDA_CALL;
			trace_model__observe(m, &ref.h);
		}
		if (!ASSERT_EQ(decode(&r, m, &ev), 1, "decodes"))
			break;
		ASSERT_TRUE(ev.nargs <= EVENT_MAX_ARGS && ev.strbuf_used <= sizeof(ev.strbuf),
			    "bounded");
		for (int k = 0; k < n; k++)
			cuda_reports[k]->add(st[k], &r.u.h, m);
	}
	for (int k = 0; k < n; k++) {
		struct table *t = table__new(cuda_reports[k]->name);

		ASSERT_EQ(cuda_reports[k]->emit(st[k], m, t), 0, "emit");
		if (table__nrows(t) < 3) /* the reports did count something */
			unit_fail("%s: only %d rows from garbage", cuda_reports[k]->name,
				  table__nrows(t));
		table__free(t);
		cuda_reports[k]->free(st[k]);
	}
	trace_model__free(m);
}

/* ---- Reports over a written trace. ---- */

static struct trace_writer *open_trace(const char *path)
{
	struct trace_meta meta = {
		.hostname = "unit",
		.kernel = "6.18",
		.cmdline = "bpfsight record (unit test)",
		.families = "cuda",
		.target = "system-wide",
		.tool_version = "test",
		.start = { .mono_ns = 1000, .realtime_ns = 1700000000123456789ull },
	};
	int err = 0;

	return trace_writer__open(path, &meta, TRACE_WRITER_FORCE, &err);
}

static __u64 put_ts = 10000;

static void put(struct trace_writer *w, struct rec *r)
{
	r->u.h.ts = put_ts += 100000;
	trace_writer__append(w, &r->u.h);
}

static void put_launch(struct trace_writer *w, const char *name, __u16 depth, __u64 dur, __s64 ret,
		       __u64 func, __u32 gx, __u32 bx, __u64 shmem)
{
	struct rec r;

	rec_init(&r, name, 100, 0, dur, ret);
	r.u.depth = depth;
	if (name[2] == 'd') { /* cudaLaunchKernel */
		launch_words(&r, func, gx, 1, 1, bx, 1, 1, shmem, 0);
	} else { /* cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, stream, ...) */
		__u64 w[] = { func, gx, 1, 1, bx, 1, 1, shmem, 0 };

		memcpy(r.u.args, w, sizeof(w));
	}
	put(w, &r);
}

static void put_copy(struct trace_writer *w, const char *name, __u16 depth, __u64 dur, __u64 bytes,
		     int kind)
{
	struct rec r;

	rec_init(&r, name, 100, 0, dur, 0);
	r.u.depth = depth;
	r.u.args[0] = 0xd000; /* dst */
	r.u.args[1] = name[2] == 'd' && strstr(name, "Memset") ? 0 : 0x5000;
	r.u.args[2] = bytes;
	r.u.args[3] = kind;
	put(w, &r);
}

static int write_cuda_trace(const char *path)
{
	struct trace_writer *w = open_trace(path);
	struct {
		struct bs_string s;
		char text[32];
	} str = {};
	struct bs_symbol sym = {};
	struct rec r;

	if (!w)
		return -EIO;
	str.s.h = (struct bs_hdr){ .type = BS_REC_STRING, .size = sizeof(str), .pid = 100 };
	str.s.id = 1;
	str.s.len = 6;
	memcpy(str.text, "vecAdd", 6);
	trace_writer__append(w, &str.s.h);
	str.s.id = 2;
	str.s.len = 4;
	memset(str.text, 0, sizeof(str.text));
	memcpy(str.text, "gemm", 4);
	trace_writer__append(w, &str.s.h);
	sym.h = (struct bs_hdr){ .type = BS_REC_SYMBOL, .size = sizeof(sym), .pid = 100 };
	sym.addr = 0x401000;
	sym.name_id = 1;
	sym.kind = BS_SYM_HOST_FUNC;
	trace_writer__append(w, &sym.h);
	sym.addr = 0x9000;
	sym.name_id = 2;
	sym.kind = BS_SYM_HANDLE;
	trace_writer__append(w, &sym.h);

	/* vecAdd 4x1x1 / 256x1x1: three launches, each running the driver's launch inside. */
	put_launch(w, "cudaLaunchKernel", 0, 100, 0, 0x401000, 4, 256, 0);
	put_launch(w, "cuLaunchKernel", 1, 40, 0, 0x9000, 4, 256, 0);
	put_launch(w, "cudaLaunchKernel", 0, 200, 0, 0x401000, 4, 256, 0);
	put_launch(w, "cudaLaunchKernel", 0, 300, 0, 0x401000, 4, 256, 0);
	/* vecAdd with another grid; a failing launch still counts as a launch call. */
	put_launch(w, "cudaLaunchKernel", 0, 400, 35, 0x401000, 8, 256, 0);
	/* gemm through the driver directly, 1024 bytes of shared memory, and an unnamed one. */
	put_launch(w, "cuLaunchKernel_ptsz", 0, 10, 0, 0x9000, 1, 128, 1024);
	put_launch(w, "cuLaunchKernel", 0, 30, 0, 0x9000, 1, 128, 1024);
	put_launch(w, "cuLaunchKernel", 0, 20, 0, 0xabc0, 2, 32, 0);
	/* Copies: four HtoD (even count: median of the middle two), one DtoH, a nested one. */
	put_copy(w, "cudaMemcpy", 0, 1000, 100, 1);
	put_copy(w, "cudaMemcpy", 0, 2000, 200, 1);
	put_copy(w, "cudaMemcpy", 0, 10000, 400, 1);
	put_copy(w, "cudaMemcpy", 0, 3000, 300, 1);
	put_copy(w, "cuMemcpyHtoD_v2", 1, 900, 300, 0);
	put_copy(w, "cudaMemcpy", 0, 500, 64, 2);
	/* Memsets: cudaMemset(dst, value, count) and cuMemsetD32_v2(dst, ui, N): 4 * N bytes. */
	put_copy(w, "cudaMemset", 0, 50, 256, 0);
	put_copy(w, "cuMemsetD32_v2", 0, 70, 10, 0);
	/* Errors: two failed cudaMalloc, each with its failed driver allocation inside. */
	for (int i = 0; i < 2; i++) {
		rec_init(&r, "cudaMalloc", 100, 0, 60, 2);
		r.u.args[1] = 1ull << 40;
		put(w, &r);
		rec_init(&r, "cuMemAlloc_v2", 100, 0, 30, 2);
		r.u.depth = 1;
		put(w, &r);
	}
	/* A function of a newer table. */
	rec_init(&r, "cudaMalloc", 100, 0, 5, 0);
	r.u.fn = 4000;
	put(w, &r);
	return trace_writer__close(w, &(struct trace_clocks){ .mono_ns = put_ts + 1000 });
}

static int row_of(const struct table *t, const char *name)
{
	int c = table__col(t, "name");

	for (int i = 0; i < table__nrows(t); i++)
		if (!strcmp(table__get_str(t, i, c), name))
			return i;
	return -1;
}

#define U64_AT(t, row, col) table__get_u64(t, row, table__col(t, col))
#define DBL_AT(t, row, col) table__get_double(t, row, table__col(t, col))
#define STR_AT(t, row, col) table__get_str(t, row, table__col(t, col))

static void test_reports(void)
{
	const struct table *t;
	struct stats *s = NULL;
	char path[128];
	int status, i;
	/* Depth-0 time: launches 100+200+300+400 + 10+30+20, copies 16000 + 500,
	 * memsets 50+70, mallocs 2 * 60, fn 4000: 5. */
	const double grand = 1000 + 60 + 16500 + 120 + 120 + 5;

	snprintf(path, sizeof(path), "%s/cuda.bst", tmp_dir);
	if (!ASSERT_EQ(write_cuda_trace(path), 0, "write trace"))
		return;
	s = stats__collect(path, "cuda_api_sum,cuda_launch_sum,cuda_memcpy_sum,cuda_err_sum",
			   &status);
	if (!ASSERT_TRUE(s, "collect") || !ASSERT_EQ(status, EXIT_READ_OK, "status"))
		goto out;

	/* cuda_api_sum: nested calls (cuLaunchKernel x1, cuMemcpyHtoD_v2, cuMemAlloc_v2) are out. */
	t = stats__table(s, "cuda_api_sum");
	if (!ASSERT_TRUE(t, "cuda_api_sum"))
		goto out;
	ASSERT_EQ(table__nrows(t), 8, "api rows");
	ASSERT_STREQ(STR_AT(t, 0, "name"), "cudaMemcpy", "sorted by total: cudaMemcpy first");
	ASSERT_EQ(U64_AT(t, 0, "count"), 5, "cudaMemcpy count");
	ASSERT_EQ(U64_AT(t, 0, "total_ns"), 16500, "cudaMemcpy total");
	ASSERT_NEAR(DBL_AT(t, 0, "avg_ns"), 3300, 1e-9, "cudaMemcpy avg");
	ASSERT_NEAR(DBL_AT(t, 0, "med_ns"), 2000, 1e-9,
		    "cudaMemcpy med (500 1000 2000 3000 10000)");
	ASSERT_EQ(U64_AT(t, 0, "min_ns"), 500, "cudaMemcpy min");
	ASSERT_EQ(U64_AT(t, 0, "max_ns"), 10000, "cudaMemcpy max");
	/* population: mean 3300, squared deviations 7.84e6 5.29e6 1.69e6 0.09e6 44.89e6 */
	ASSERT_NEAR(DBL_AT(t, 0, "stddev_ns"), sqrt(59.8e6 / 5), 1e-6, "cudaMemcpy stddev");
	ASSERT_NEAR(DBL_AT(t, 0, "time_pct"), 16500 * 100.0 / grand, 1e-9, "cudaMemcpy pct");
	i = row_of(t, "cudaLaunchKernel");
	if (ASSERT_TRUE(i == 1, "cudaLaunchKernel second")) {
		ASSERT_EQ(U64_AT(t, i, "count"), 4, "launch count");
		ASSERT_EQ(U64_AT(t, i, "total_ns"), 1000, "launch total");
		ASSERT_NEAR(DBL_AT(t, i, "med_ns"), 250, 1e-9, "even count median (200+300)/2");
		ASSERT_NEAR(DBL_AT(t, i, "stddev_ns"), sqrt(50000 / 4.0), 1e-9, "launch stddev");
	}
	i = row_of(t, "cuLaunchKernel");
	if (ASSERT_TRUE(i >= 0, "cuLaunchKernel row")) {
		ASSERT_EQ(U64_AT(t, i, "count"), 2, "depth-0 cuLaunchKernel only");
		ASSERT_EQ(U64_AT(t, i, "total_ns"), 50, "cuLaunchKernel total");
	}
	ASSERT_EQ(row_of(t, "cuMemcpyHtoD_v2"), -1, "nested copy not counted");
	ASSERT_EQ(row_of(t, "cuMemAlloc_v2"), -1, "nested alloc not counted");
	ASSERT_TRUE(row_of(t, "cuda_fn_4000") >= 0, "unknown fn row");
	ASSERT_EQ(U64_AT(t, row_of(t, "cudaMalloc"), "count"), 2, "cudaMalloc count");

	/* cuda_launch_sum: by name and shape, most launches first. */
	t = stats__table(s, "cuda_launch_sum");
	if (!ASSERT_TRUE(t, "cuda_launch_sum") || !ASSERT_EQ(table__nrows(t), 4, "launch rows"))
		goto out;
	ASSERT_STREQ(STR_AT(t, 0, "name"), "vecAdd", "row 0");
	ASSERT_EQ(U64_AT(t, 0, "count"), 3, "row 0 count");
	ASSERT_STREQ(STR_AT(t, 0, "grid"), "4x1x1", "row 0 grid");
	ASSERT_STREQ(STR_AT(t, 0, "block"), "256x1x1", "row 0 block");
	ASSERT_EQ(U64_AT(t, 0, "shared_bytes"), 0, "row 0 shared");
	ASSERT_EQ(U64_AT(t, 0, "total_ns"), 600, "row 0 total");
	ASSERT_STREQ(STR_AT(t, 1, "name"), "gemm",
		     "row 1: gemm, from cuLaunchKernel and its _ptsz");
	ASSERT_EQ(U64_AT(t, 1, "count"), 2, "row 1 count");
	ASSERT_STREQ(STR_AT(t, 1, "grid"), "1x1x1", "row 1 grid");
	ASSERT_STREQ(STR_AT(t, 1, "block"), "128x1x1", "row 1 block");
	ASSERT_EQ(U64_AT(t, 1, "shared_bytes"), 1024, "row 1 shared");
	ASSERT_EQ(U64_AT(t, 1, "total_ns"), 40, "row 1 total");
	ASSERT_STREQ(STR_AT(t, 2, "name"), "vecAdd", "row 2: one launch, 400 ns");
	ASSERT_STREQ(STR_AT(t, 2, "grid"), "8x1x1", "row 2 grid");
	ASSERT_EQ(U64_AT(t, 2, "total_ns"), 400, "row 2 total");
	ASSERT_STREQ(STR_AT(t, 3, "name"), "0xabc0", "row 3: unnamed handle");
	ASSERT_STREQ(STR_AT(t, 3, "grid"), "2x1x1", "row 3 grid");

	/* cuda_memcpy_sum */
	t = stats__table(s, "cuda_memcpy_sum");
	if (!ASSERT_TRUE(t, "cuda_memcpy_sum") || !ASSERT_EQ(table__nrows(t), 3, "memcpy rows"))
		goto out;
	ASSERT_STREQ(STR_AT(t, 0, "name"), "HtoD", "HtoD first");
	ASSERT_EQ(U64_AT(t, 0, "count"), 4, "HtoD count (nested excluded)");
	ASSERT_EQ(U64_AT(t, 0, "bytes"), 1000, "HtoD bytes");
	ASSERT_EQ(U64_AT(t, 0, "total_ns"), 16000, "HtoD total");
	ASSERT_NEAR(DBL_AT(t, 0, "avg_ns"), 4000, 1e-9, "HtoD avg");
	ASSERT_EQ(U64_AT(t, 0, "min_ns"), 1000, "HtoD min");
	ASSERT_EQ(U64_AT(t, 0, "max_ns"), 10000, "HtoD max");
	ASSERT_STREQ(STR_AT(t, 1, "name"), "DtoH", "DtoH");
	ASSERT_EQ(U64_AT(t, 1, "bytes"), 64, "DtoH bytes");
	ASSERT_EQ(U64_AT(t, 1, "count"), 1, "DtoH count");
	ASSERT_STREQ(STR_AT(t, 2, "name"), "memset", "memset row");
	ASSERT_EQ(U64_AT(t, 2, "count"), 2, "memset count");
	ASSERT_EQ(U64_AT(t, 2, "bytes"), 256 + 40, "memset bytes");
	ASSERT_EQ(U64_AT(t, 2, "min_ns"), 50, "memset min");
	ASSERT_EQ(U64_AT(t, 2, "max_ns"), 70, "memset max");
	ASSERT_NEAR(DBL_AT(t, 2, "avg_ns"), 60, 1e-9, "memset avg");

	/* cuda_err_sum: nested driver errors count, with the driver's names. */
	t = stats__table(s, "cuda_err_sum");
	if (!ASSERT_TRUE(t, "cuda_err_sum") || !ASSERT_EQ(table__nrows(t), 3, "err rows"))
		goto out;
	ASSERT_STREQ(STR_AT(t, 0, "name"), "cuMemAlloc_v2", "count 2, by name");
	ASSERT_EQ(table__get_s64(t, 0, table__col(t, "code")), 2, "code");
	ASSERT_STREQ(STR_AT(t, 0, "error"), "CUDA_ERROR_OUT_OF_MEMORY", "driver name");
	ASSERT_EQ(U64_AT(t, 0, "count"), 2, "count");
	ASSERT_STREQ(STR_AT(t, 1, "name"), "cudaMalloc", "cudaMalloc");
	ASSERT_STREQ(STR_AT(t, 1, "error"), "cudaErrorMemoryAllocation", "runtime name");
	ASSERT_EQ(U64_AT(t, 1, "count"), 2, "cudaMalloc count");
	ASSERT_STREQ(STR_AT(t, 2, "name"), "cudaLaunchKernel", "launch error");
	ASSERT_STREQ(STR_AT(t, 2, "error"), "cudaErrorInsufficientDriver", "35");
	ASSERT_EQ(U64_AT(t, 2, "count"), 1, "launch error count");
out:
	stats__free(s);
	unlink(path);
}

/* What `stats --format csv` prints: the columns users script against. */
static void test_report_columns(void)
{
	static const char want[] = "# cuda_launch_sum\n"
				   "count,total_ns,grid,block,shared_bytes,name\n"
				   "3,600,4x1x1,256x1x1,0,vecAdd\n"
				   "2,40,1x1x1,128x1x1,1024,gemm\n"
				   "1,400,8x1x1,256x1x1,0,vecAdd\n"
				   "1,20,2x1x1,32x1x1,0,0xabc0\n"
				   "\n"
				   "# cuda_memcpy_sum\n"
				   "total_ns,count,bytes,avg_ns,min_ns,max_ns,name\n"
				   "16000,4,1000,4000.0,1000,10000,HtoD\n"
				   "500,1,64,500.0,500,500,DtoH\n"
				   "120,2,296,60.0,50,70,memset\n"
				   "\n"
				   "# cuda_err_sum\n"
				   "count,code,error,name\n"
				   "2,2,CUDA_ERROR_OUT_OF_MEMORY,cuMemAlloc_v2\n"
				   "2,2,cudaErrorMemoryAllocation,cudaMalloc\n"
				   "1,35,cudaErrorInsufficientDriver,cudaLaunchKernel\n";
	char path[128], *buf = NULL;
	size_t len = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cols.bst", tmp_dir);
	if (!ASSERT_EQ(write_cuda_trace(path), 0, "write trace"))
		return;
	f = open_memstream(&buf, &len);
	ASSERT_EQ(stats__run(path, "cuda_launch_sum,cuda_memcpy_sum,cuda_err_sum", STATS_FORMAT_CSV,
			     f),
		  EXIT_READ_OK, "csv status");
	fclose(f);
	/* Compared by hand: the expected text is longer than unit.h's message buffer. */
	if (strcmp(buf ? buf : "", want))
		unit_fail("csv differs from the expected text; got:\n%.400s", buf ? buf : "(null)");
	free(buf);
	unlink(path);
}

/* The entry probe copies stack words only for functions that have more than 6. */
static void test_cookie_stack_words(void)
{
	/* func, grid (2 words), block (2 words), args, shared memory, stream: 8 words. */
	ASSERT_EQ(ucall_api__cookie(&cuda_table, fn_of("cudaLaunchKernel")) & BS_UCOOKIE_STACK,
		  BS_UCOOKIE_STACK, "cudaLaunchKernel has stack words");
	/* f, 3 grid, 3 block, shared, stream, params, extra: 11 words. */
	ASSERT_EQ(ucall_api__cookie(&cuda_table, fn_of("cuLaunchKernel")) & BS_UCOOKIE_STACK,
		  BS_UCOOKIE_STACK, "cuLaunchKernel has stack words");
	ASSERT_EQ(ucall_api__cookie(&cuda_table, fn_of("cudaMalloc")) & BS_UCOOKIE_STACK, 0,
		  "cudaMalloc has none");
	ASSERT_EQ(ucall_api__cookie(&cuda_table, fn_of("cudaMemcpyAsync")) & BS_UCOOKIE_STACK, 0,
		  "cudaMemcpyAsync: 5 words");
	ASSERT_EQ(ucall_api__cookie(&cuda_table, fn_of("cudaMemcpy2DAsync")) & BS_UCOOKIE_STACK,
		  BS_UCOOKIE_STACK, "cudaMemcpy2DAsync: 8 words");
}

int main(void)
{
	snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/bpfsight-unit-XXXXXX");
	if (!mkdtemp(tmp_dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN_TEST(test_cookie_stack_words);
	RUN_TEST(test_decode_records);
	RUN_TEST(test_decode_garbage);
	RUN_TEST(test_reports);
	RUN_TEST(test_report_columns);
	rmdir(tmp_dir);
	return UNIT_EXIT();
}
