// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gpu family, reading side: the decoders against the dump contract (docs/GPU.md), CUPTI's
 * result names against CUDA 13's header, and the reports against numbers computed by hand
 * from a trace written with the real trace writer: kernel and memory-operation summaries
 * (even counts, stddev, time_pct), the launch join behind cuda_kern_exec_sum, GPU idle gaps
 * with kernels overlapping on two streams, and the shim summary.
 */
#include <errno.h>
#include <stdio.h>
#include "commands.h"
#include "cuda.h"
#include "gpu_decode.h"
#include "json.h"
#include "stats.h"
#include "trace_build.h"

#if __has_include("/usr/local/cuda/include/cupti_result.h")
#define HAVE_CUPTI_HEADER 1
#include "/usr/local/cuda/include/cupti_result.h"
#include "gpu_records.h"
#include "ucall_fn.h"
#endif

#define PID  100
#define TID  101
#define TID2 102

static char tmp_dir[64];

static int fn_of(const char *name)
{
	return ucall_fn(&cuda_table, name);
}

static void put_kernel(struct tb *b, __u32 tid, __u64 ts, __u64 dur, const char *name,
		       __u64 call_ts, __u16 flags, __u32 device, __u32 stream)
{
	struct bs_gpu_kernel k = {
		.h = { .type = BS_REC_GPU_KERNEL,
		       .size = sizeof(k),
		       .pid = PID,
		       .tid = tid,
		       .ts = ts },
		.dur = dur,
		.call_ts = call_ts,
		.correlation = (__u32)ts,
		.name_id = tb_str(b, name),
		.device = device,
		.context = 1,
		.stream = stream,
		.grid = { 1, 1, 1 },
		.block = { 32, 1, 1 },
		.flags = flags,
	};

	tb_put(b, &k);
}

static void put_memcpy(struct tb *b, __u64 ts, __u64 dur, __u64 bytes, __u8 kind, __u32 device)
{
	struct bs_gpu_memcpy c = {
		.h = { .type = BS_REC_GPU_MEMCPY,
		       .size = sizeof(c),
		       .pid = PID,
		       .tid = TID,
		       .ts = ts },
		.dur = dur,
		.bytes = bytes,
		.device = device,
		.stream = 9,
		.copy_kind = kind,
		.src_device = device,
		.dst_device = device,
	};

	tb_put(b, &c);
}

static void put_memset(struct tb *b, __u64 ts, __u64 dur, __u64 bytes)
{
	struct bs_gpu_memset s = {
		.h = { .type = BS_REC_GPU_MEMSET,
		       .size = sizeof(s),
		       .pid = PID,
		       .tid = TID,
		       .ts = ts },
		.dur = dur,
		.bytes = bytes,
		.stream = 7,
		.mem_kind = 3,
	};

	tb_put(b, &s);
}

static void put_launch(struct tb *b, __u32 tid, __u64 ts, __u64 dur)
{
	struct bs_ucall u = {
		.h = { .type = BS_REC_CUDA_CALL,
		       .size = sizeof(u),
		       .pid = PID,
		       .tid = tid,
		       .ts = ts },
		.dur = dur,
		.fn = fn_of("cudaLaunchKernel"),
	};

	tb_put(b, &u);
}

static void put_api(struct tb *b, __u32 tid, __u64 ts, __u64 dur, const char *name, __u16 flags,
		    __u64 call_ts)
{
	struct bs_gpu_api a = {
		.h = { .type = BS_REC_GPU_API,
		       .size = sizeof(a),
		       .pid = PID,
		       .tid = tid,
		       .ts = ts },
		.dur = dur,
		.call_ts = call_ts,
		.correlation = 77,
		.cbid = 211,
		.name_id = tb_str(b, name),
		.domain = 2,
		.flags = flags,
	};

	tb_put(b, &a);
}

static void put_status(struct tb *b, __u32 event, __u32 state, __s32 result, const char *detail,
		       __u64 dropped, __u64 seq, __u32 version)
{
	struct bs_shim_status s = {
		.h = { .type = BS_REC_SHIM_STATUS, .size = sizeof(s), .pid = PID, .tid = PID },
		.state = state,
		.event = event,
		.cupti_result = result,
		.detail_id = tb_str(b, detail),
		.dropped = dropped,
		.seq = seq,
		.cupti_version = version,
	};

	tb_put(b, &s);
}

/* ---- Decoders ---- */

static void test_decode_kernel(void)
{
	struct bs_gpu_kernel k = {
		.h = { .type = BS_REC_GPU_KERNEL,
		       .size = sizeof(k),
		       .pid = PID,
		       .tid = TID,
		       .ts = 5000 },
		.dur = 1234,
		.call_ts = 4000,
		.correlation = 42,
		.device = 1,
		.context = 3,
		.stream = 14,
		.grid = { 64, 2, 1 },
		.block = { 256, 1, 4 },
		.shmem_dynamic = 1024,
		.shmem_static = 48,
		.registers = 40,
		.flags = BS_GPU_CALL_CUDA | BS_GPU_GRAPH,
		.graph_id = 5,
		.graph_node_id = 0x100000007ull,
	};
	const struct event_arg *a;
	struct event ev;
	struct tb b;

	if (!ASSERT_EQ(tb_open(&b, NULL, "gpu"), 0, "builder"))
		return;
	k.name_id = tb_str(&b, "void gemm<float>(float const*, int)");
	ASSERT_EQ(tb_decode(&b, &k, &ev), 1, "kernel is an event");
	ASSERT_STREQ(ev.kind, "gpu_kernel", "kind");
	ASSERT_STREQ(ev.name, "void gemm<float>(float const*, int)", "name: the demangled name");
	ASSERT_EQ(ev.ts, 5000, "ts: GPU start");
	ASSERT_EQ(ev.dur, 1234, "dur");
	ASSERT_EQ(ev.tid, TID, "tid: the launching thread");
	ASSERT_ARG_U64(&ev, "device", 1);
	ASSERT_ARG_U64(&ev, "context", 3);
	ASSERT_ARG_U64(&ev, "stream", 14);
	ASSERT_ARG_U64(&ev, "correlation", 42);
	a = tb_arg(&ev, "grid");
	ASSERT_TRUE(a && a->kind == EVENT_ARG_DIM3 && a->dim[0] == 64 && a->dim[1] == 2 &&
			    a->dim[2] == 1,
		    "grid [64, 2, 1]");
	a = tb_arg(&ev, "block");
	ASSERT_TRUE(a && a->kind == EVENT_ARG_DIM3 && a->dim[0] == 256 && a->dim[2] == 4,
		    "block [256, 1, 4]");
	ASSERT_ARG_U64(&ev, "shmem_dynamic", 1024);
	ASSERT_ARG_U64(&ev, "shmem_static", 48);
	ASSERT_ARG_U64(&ev, "registers", 40);
	ASSERT_ARG_U64(&ev, "graph_id", 5);
	ASSERT_ARG_U64(&ev, "graph_node_id", 0x100000007ull);
	ASSERT_ARG_U64(&ev, "call_ts", 4000);
	ASSERT_ARG_STR(&ev, "link", "cuda");
	ASSERT_EQ(ev.nargs, 13, "13 args");

	/* Not a graph node, no call known, a name the trace lacks. */
	k.flags = 0;
	k.call_ts = 0;
	k.name_id = 99;
	ASSERT_EQ(tb_decode(&b, &k, &ev), 1, "kernel is an event");
	ASSERT_STREQ(ev.name, GPU_UNKNOWN_KERNEL, "missing name");
	ASSERT_NO_ARG(&ev, "graph_id");
	ASSERT_NO_ARG(&ev, "graph_node_id");
	ASSERT_NO_ARG(&ev, "call_ts");
	ASSERT_ARG_STR(&ev, "link", "none");
	k.flags = BS_GPU_CALL_API;
	k.call_ts = 4100;
	tb_decode(&b, &k, &ev);
	ASSERT_ARG_STR(&ev, "link", "api");
	ASSERT_ARG_U64(&ev, "call_ts", 4100);
	/* Shorter than the type: the walk sets it aside, family__decode refuses it. */
	k.h.size = sizeof(k) - 8;
	ASSERT_EQ(tb_decode(&b, &k, &ev), -EINVAL, "short record refused");
	tb_close(&b, 0);
}

static void test_decode_memcpy_memset(void)
{
	struct bs_gpu_memcpy c = {
		.h = { .type = BS_REC_GPU_MEMCPY,
		       .size = sizeof(c),
		       .pid = PID,
		       .tid = TID,
		       .ts = 10 },
		.dur = 20,
		.call_ts = 5,
		.bytes = 1 << 20,
		.correlation = 8,
		.device = 0,
		.context = 1,
		.stream = 7,
		.copy_kind = 10, /* PtoP */
		.src_kind = 3,
		.dst_kind = 6,
		.async = 1,
		.flags = BS_GPU_CALL_CUDA,
		.src_device = 0,
		.dst_device = 2,
	};
	struct bs_gpu_memset s = {
		.h = { .type = BS_REC_GPU_MEMSET,
		       .size = sizeof(s),
		       .pid = PID,
		       .tid = 0,
		       .ts = 30 },
		.dur = 3,
		.bytes = 4096,
		.value = 0xab,
		.mem_kind = 5,
		.flags = BS_GPU_GRAPH,
		.graph_id = 2,
		.graph_node_id = 9,
	};
	static const char *const ops[] = {
		"[CUDA memcpy Unknown]",	  "[CUDA memcpy Host-to-Device]",
		"[CUDA memcpy Device-to-Host]",	  "[CUDA memcpy Host-to-Array]",
		"[CUDA memcpy Array-to-Host]",	  "[CUDA memcpy Array-to-Array]",
		"[CUDA memcpy Array-to-Device]",  "[CUDA memcpy Device-to-Array]",
		"[CUDA memcpy Device-to-Device]", "[CUDA memcpy Host-to-Host]",
		"[CUDA memcpy Peer-to-Peer]",	  "[CUDA memcpy Unknown]",
	};
	static const char *const kinds[] = {
		"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
		"AtoD",	   "DtoA", "DtoD", "HtoH", "PtoP", "unknown",
	};
	struct event ev;
	struct tb b;

	if (!ASSERT_EQ(tb_open(&b, NULL, "gpu"), 0, "builder"))
		return;
	ASSERT_EQ(tb_decode(&b, &c, &ev), 1, "copy is an event");
	ASSERT_STREQ(ev.kind, "gpu_memcpy", "kind");
	ASSERT_STREQ(ev.name, "[CUDA memcpy Peer-to-Peer]", "nsys's name");
	ASSERT_ARG_U64(&ev, "bytes", 1 << 20);
	ASSERT_ARG_STR(&ev, "copy_kind", "PtoP");
	ASSERT_ARG_STR(&ev, "src_kind", "device");
	ASSERT_ARG_STR(&ev, "dst_kind", "device_static");
	ASSERT_ARG_BOOL(&ev, "async", 1);
	ASSERT_ARG_U64(&ev, "src_device", 0);
	ASSERT_ARG_U64(&ev, "dst_device", 2);
	ASSERT_ARG_U64(&ev, "call_ts", 5);
	ASSERT_ARG_STR(&ev, "link", "cuda");
	ASSERT_EQ(ev.nargs, 13, "13 args: no graph ids");
	for (__u8 k = 0; k < 12; k++) {
		c.copy_kind = k;
		tb_decode(&b, &c, &ev);
		ASSERT_STREQ(ev.name, ops[k], "copy name by kind");
		ASSERT_ARG_STR(&ev, "copy_kind", kinds[k]);
	}
	c.src_kind = 0;
	c.dst_kind = 8;
	c.async = 0;
	tb_decode(&b, &c, &ev);
	ASSERT_ARG_STR(&ev, "src_kind", "unknown");
	ASSERT_ARG_STR(&ev, "dst_kind", "unknown");
	ASSERT_ARG_BOOL(&ev, "async", 0);

	ASSERT_EQ(tb_decode(&b, &s, &ev), 1, "memset is an event");
	ASSERT_STREQ(ev.kind, "gpu_memset", "kind");
	ASSERT_STREQ(ev.name, "[CUDA memset]", "nsys's name");
	ASSERT_EQ(ev.tid, 0, "launching thread unknown");
	ASSERT_ARG_U64(&ev, "bytes", 4096);
	ASSERT_ARG_U64(&ev, "value", 0xab);
	ASSERT_ARG_STR(&ev, "mem_kind", "managed");
	ASSERT_ARG_U64(&ev, "graph_id", 2);
	ASSERT_ARG_U64(&ev, "graph_node_id", 9);
	ASSERT_NO_ARG(&ev, "call_ts");
	ASSERT_ARG_STR(&ev, "link", "none");
	tb_close(&b, 0);
}

static void test_decode_api_status(void)
{
	struct bs_gpu_api a = {
		.h = { .type = BS_REC_GPU_API,
		       .size = sizeof(a),
		       .pid = PID,
		       .tid = TID,
		       .ts = 50 },
		.dur = 7,
		.call_ts = 45,
		.correlation = 3,
		.cbid = 307,
		.ret = (__u32)-1,
		.domain = 1,
		.flags = BS_GPU_CALL_CUDA,
	};
	struct bs_shim_status s = {
		.h = { .type = BS_REC_SHIM_STATUS, .size = sizeof(s), .pid = PID, .tid = TID },
		.state = BS_SHIM_ST_CUDA_INJECTED | BS_SHIM_ST_GPU_ON | BS_SHIM_ST_CUPTI_BUSY |
			 BS_SHIM_ST_PRELOADED | (1u << 11),
		.event = BS_SHIM_EV_CUPTI_ERROR,
		.cupti_result = 999,
		.dropped = 4,
		.seq = 17,
		.cupti_version = 130000,
	};
	const struct event_arg *st;
	char buf[16];
	struct event ev;
	struct tb b;

	if (!ASSERT_EQ(tb_open(&b, NULL, "gpu"), 0, "builder"))
		return;
	a.name_id = tb_str(&b, "cuLaunchKernel");
	ASSERT_EQ(tb_decode(&b, &a, &ev), 1, "api record is an event");
	ASSERT_STREQ(ev.kind, "gpu_api", "kind");
	ASSERT_STREQ(ev.name, "cuLaunchKernel", "name");
	ASSERT_EQ(ev.dur, 7, "dur");
	ASSERT_ARG_U64(&ev, "correlation", 3);
	ASSERT_ARG_U64(&ev, "cbid", 307);
	ASSERT_ARG_STR(&ev, "domain", "driver");
	ASSERT_ARG_S64(&ev, "ret", -1);
	ASSERT_ARG_U64(&ev, "call_ts", 45);
	a.flags = 0;
	a.domain = 2;
	a.name_id = 0;
	tb_decode(&b, &a, &ev);
	ASSERT_STREQ(ev.name, "cbid_307", "no name: the callback id");
	ASSERT_ARG_STR(&ev, "domain", "runtime");
	ASSERT_NO_ARG(&ev, "call_ts");

	s.detail_id = tb_str(&b, "cuptiActivityEnable");
	ASSERT_EQ(tb_decode(&b, &s, &ev), 1, "status is an event");
	ASSERT_STREQ(ev.kind, "shim_status", "kind");
	ASSERT_STREQ(ev.name, "cupti_error", "event name");
	ASSERT_EQ(ev.dur, 0, "an instant");
	st = tb_arg(&ev, "state");
	if (ASSERT_TRUE(st && st->kind == EVENT_ARG_FLAGS, "state is a list")) {
		ASSERT_EQ(st->flags.bits, s.state, "state bits");
		ASSERT_STREQ(event_flags__name(&st->flags, 0, buf, sizeof(buf)), "cuda_injected",
			     "bit 0");
		ASSERT_STREQ(event_flags__name(&st->flags, 2, buf, sizeof(buf)), "gpu_on", "bit 2");
		ASSERT_STREQ(event_flags__name(&st->flags, 4, buf, sizeof(buf)), "cupti_busy",
			     "bit 4");
		ASSERT_STREQ(event_flags__name(&st->flags, 6, buf, sizeof(buf)), "nvtx_chained",
			     "bit 6");
		ASSERT_STREQ(event_flags__name(&st->flags, 9, buf, sizeof(buf)), "preloaded",
			     "bit 9");
		ASSERT_STREQ(event_flags__name(&st->flags, 11, buf, sizeof(buf)), "bit_11",
			     "a newer shim's bit");
	}
	ASSERT_ARG_S64(&ev, "cupti_result", 999);
	ASSERT_ARG_STR(&ev, "detail", "cuptiActivityEnable");
	ASSERT_ARG_U64(&ev, "dropped", 4);
	ASSERT_ARG_U64(&ev, "seq", 17);
	ASSERT_ARG_U64(&ev, "cupti_version", 130000);
	for (__u32 e = 1; e <= 10; e++) {
		static const char *const names[] = {
			NULL,	"attach",  "state", "cupti_error", "drained",  "dropped",
			"exit", "no_shim", "torch", "join",	   "event_31",
		};

		s.event = e < 10 ? e : 31; /* one no family names */
		s.detail_id = 0;
		tb_decode(&b, &s, &ev);
		ASSERT_STREQ(ev.name, names[e], "status event name");
		ASSERT_ARG_STR(&ev, "detail", "");
	}
	tb_close(&b, 0);
}

static void test_cupti_result_names(void)
{
#ifdef HAVE_CUPTI_HEADER
	ASSERT_STREQ(cupti_result_name(CUPTI_SUCCESS), "CUPTI_SUCCESS", "success");
	ASSERT_STREQ(cupti_result_name(CUPTI_ERROR_NOT_INITIALIZED), "CUPTI_ERROR_NOT_INITIALIZED",
		     "not initialized");
	ASSERT_STREQ(cupti_result_name(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED),
		     "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED", "another subscriber");
	ASSERT_STREQ(cupti_result_name(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES),
		     "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES", "privileges");
	ASSERT_STREQ(cupti_result_name(CUPTI_ERROR_INVALID_CHIP_NAME),
		     "CUPTI_ERROR_INVALID_CHIP_NAME", "the last numbered one");
	ASSERT_STREQ(cupti_result_name(CUPTI_ERROR_UNKNOWN), "CUPTI_ERROR_UNKNOWN", "unknown");
	ASSERT_TRUE(!cupti_result_name(CUPTI_ERROR_INVALID_CHIP_NAME + 1), "past the table: NULL");
#else
	printf("# no cupti_result.h: names checked against literals only\n");
	ASSERT_STREQ(cupti_result_name(999), "CUPTI_ERROR_UNKNOWN", "unknown");
#endif
	ASSERT_TRUE(!cupti_result_name(-1), "negative: NULL");
}

/* How dump (and Chrome) write the arg kinds the gpu and nvtx decoders brought. */
static void test_event_json_args(void)
{
	static const char *const names[] = { "a", NULL, "c" };
	const __u32 dim[3] = { 4, 2, 1 };
	char *buf = NULL;
	size_t len = 0;
	struct event ev;
	struct json j;
	FILE *f;

	event__init(&ev, NULL, "test");
	event__arg_bool(&ev, "yes", 7);
	event__arg_bool(&ev, "no", 0);
	event__arg_double(&ev, "tenth", 0.1);
	event__arg_double(&ev, "third", 1.0 / 3);
	event__arg_double(&ev, "big", -1.5e300);
	event__arg_double(&ev, "nan", NAN);
	event__arg_dim3(&ev, "grid", dim);
	event__arg_flags(&ev, "bits", 0x80000007, names, 3);
	event__arg_flags(&ev, "none", 0, names, 3);
	f = open_memstream(&buf, &len);
	json__init(&j, f, 0);
	event__json_args(&ev, &j);
	fclose(f);
	ASSERT_STREQ(buf,
		     "{\"yes\":true,\"no\":false,\"tenth\":0.1,\"third\":0.3333333333333333,"
		     "\"big\":-1.5e+300,\"nan\":null,\"grid\":[4,2,1],"
		     "\"bits\":[\"a\",\"bit_1\",\"c\",\"bit_31\"],\"none\":[]}",
		     "dump's JSON");
	free(buf);
}

static void test_flow_id(void)
{
	__u64 a = gpu_flow_id(PID, TID, 1000), b = gpu_flow_id(PID, TID, 1001);

	ASSERT_TRUE(a && a < (1ull << 53), "53 bits, never 0");
	ASSERT_TRUE(a != b, "another call, another id");
	ASSERT_EQ(gpu_flow_id(PID, TID, 1000), a, "a function of (pid, tid, call_ts)");
	ASSERT_TRUE(gpu_flow_id(PID, TID2, 1000) != a, "another thread, another id");
}

/* ---- Reports over a written trace ---- */

/*
 * Device 0 of PID: gemm x4 on stream 7 and relu on stream 8 overlapping them, copies on
 * stream 9, memsets; device 1: one peer copy. Launching calls for the exec summary.
 */
static int write_gpu_trace(const char *path)
{
	struct tb b;

	if (tb_open(&b, path, "cuda,gpu"))
		return -EIO;
	/* Launches: two cuda calls, one CUPTI record only, one call lost, relu's call. */
	put_launch(&b, TID, 500, 100);
	put_launch(&b, TID, 700, 200);
	put_api(&b, TID, 1900, 50, "cudaLaunchKernel", 0, 0);
	put_launch(&b, TID2, 1000, 100);
	/* gemm: 100, 300, 200, 400 ns (median of an even count: 250). */
	put_kernel(&b, TID, 1000, 100, "gemm", 500, BS_GPU_CALL_CUDA, 0, 7);
	put_kernel(&b, TID, 1200, 300, "gemm", 700, BS_GPU_CALL_CUDA, 0, 7);
	put_kernel(&b, TID, 2000, 200, "gemm", 1900, BS_GPU_CALL_API, 0, 7);
	put_kernel(&b, TID, 5000, 400, "gemm", 4000, BS_GPU_CALL_CUDA, 0, 7); /* call lost */
	/* relu on stream 8 covers [1050, 2550): it started before its call returned. */
	put_kernel(&b, TID2, 1050, 1500, "relu", 1000, BS_GPU_CALL_CUDA, 0, 8);
	put_memcpy(&b, 10000, 500, 4096, 1, 0);
	put_memcpy(&b, 11000, 100, 1024, 1, 0);
	put_memcpy(&b, 12000, 200, 2048, 2, 0);
	put_memset(&b, 13000, 50, 512);
	put_memset(&b, 1013050, 50, 256); /* after a gap of exactly 1 ms */
	put_memcpy(&b, 4000, 300, 8192, 8, 1);
	/* The shim's story. */
	put_status(&b, BS_SHIM_EV_ATTACH, BS_SHIM_ST_CUDA_INJECTED | BS_SHIM_ST_GPU_ON, 0, NULL, 0,
		   1, 130000);
	/* A note, no failure (another recording's NVTX semaphore): not a CUPTI error. */
	put_status(&b, BS_SHIM_EV_CUPTI_ERROR, BS_SHIM_ST_CUDA_INJECTED | BS_SHIM_ST_GPU_ON, 0,
		   "nvtx: no initialized NVTX instance with symbols in the process (yet)", 0, 1, 0);
	put_status(&b, BS_SHIM_EV_CUPTI_ERROR, BS_SHIM_ST_CUDA_INJECTED | BS_SHIM_ST_GPU_ON, 999,
		   "cuptiActivityEnable", 0, 2, 0);
	put_status(&b, BS_SHIM_EV_DROPPED, BS_SHIM_ST_CUDA_INJECTED | BS_SHIM_ST_GPU_ON, 0, NULL, 5,
		   3, 0);
	put_status(&b, BS_SHIM_EV_DROPPED, BS_SHIM_ST_CUDA_INJECTED | BS_SHIM_ST_GPU_ON, 0, NULL, 7,
		   4, 0);
	put_status(&b, BS_SHIM_EV_EXIT, BS_SHIM_ST_CUDA_INJECTED, 0, NULL, 0, 9, 0);
	return tb_close(&b, 2000000);
}

static void check_kern_sum(const struct table *t)
{
	int g = tb_row(t, "name", "gemm", NULL, NULL), r = tb_row(t, "name", "relu", NULL, NULL);

	if (!ASSERT_EQ(table__nrows(t), 2, "two kernels") || !ASSERT_TRUE(g >= 0 && r >= 0, "rows"))
		return;
	ASSERT_EQ(r, 0, "relu first: most time");
	ASSERT_EQ(U64_AT(t, g, "count"), 4, "gemm instances");
	ASSERT_EQ(U64_AT(t, g, "total_ns"), 1000, "gemm total");
	ASSERT_NEAR(DBL_AT(t, g, "avg_ns"), 250, 1e-9, "gemm avg");
	ASSERT_NEAR(DBL_AT(t, g, "med_ns"), 250, 1e-9, "gemm median of 100,200,300,400");
	ASSERT_EQ(U64_AT(t, g, "min_ns"), 100, "gemm min");
	ASSERT_EQ(U64_AT(t, g, "max_ns"), 400, "gemm max");
	ASSERT_NEAR(DBL_AT(t, g, "stddev_ns"), sqrt(12500.0), 1e-6, "gemm population stddev");
	ASSERT_NEAR(DBL_AT(t, g, "time_pct"), 40.0, 1e-9, "gemm time_pct: 1000 of 2500");
	ASSERT_NEAR(DBL_AT(t, r, "time_pct"), 60.0, 1e-9, "relu time_pct");
	ASSERT_EQ(U64_AT(t, r, "count"), 1, "relu instances");
	ASSERT_NEAR(DBL_AT(t, r, "stddev_ns"), 0, 1e-9, "one sample: stddev 0");
}

static void check_mem_sums(const struct table *t, const struct table *sz)
{
	const char *htod = "[CUDA memcpy Host-to-Device]", *dtoh = "[CUDA memcpy Device-to-Host]";
	const char *dtod = "[CUDA memcpy Device-to-Device]", *ms = "[CUDA memset]";
	int r;

	ASSERT_EQ(table__nrows(t), 4, "four operations");
	ASSERT_STREQ(STR_AT(t, 0, "name"), htod, "HtoD first: 600 ns");
	r = tb_row(t, "name", htod, NULL, NULL);
	ASSERT_EQ(U64_AT(t, r, "count"), 2, "HtoD count");
	ASSERT_EQ(U64_AT(t, r, "total_ns"), 600, "HtoD total");
	ASSERT_NEAR(DBL_AT(t, r, "med_ns"), 300, 1e-9, "HtoD median of two");
	ASSERT_NEAR(DBL_AT(t, r, "stddev_ns"), 200, 1e-9, "HtoD stddev");
	ASSERT_NEAR(DBL_AT(t, r, "time_pct"), 50, 1e-9, "HtoD 600 of 1200");
	r = tb_row(t, "name", dtod, NULL, NULL);
	ASSERT_NEAR(DBL_AT(t, r, "time_pct"), 25, 1e-9, "DtoD (device 1) 300 of 1200");
	r = tb_row(t, "name", dtoh, NULL, NULL);
	ASSERT_NEAR(DBL_AT(t, r, "time_pct"), 100.0 * 200 / 1200, 1e-9, "DtoH");
	r = tb_row(t, "name", ms, NULL, NULL);
	ASSERT_EQ(U64_AT(t, r, "count"), 2, "memsets");
	ASSERT_EQ(U64_AT(t, r, "total_ns"), 100, "memset total");

	ASSERT_EQ(table__nrows(sz), 4, "four operations by size");
	ASSERT_STREQ(STR_AT(sz, 0, "name"), dtod, "by total bytes: DtoD 8192");
	ASSERT_STREQ(STR_AT(sz, 1, "name"), htod, "HtoD 5120");
	ASSERT_STREQ(STR_AT(sz, 2, "name"), dtoh, "DtoH 2048");
	ASSERT_STREQ(STR_AT(sz, 3, "name"), ms, "memset 768");
	ASSERT_EQ(U64_AT(sz, 1, "total_bytes"), 5120, "HtoD bytes");
	ASSERT_EQ(U64_AT(sz, 1, "count"), 2, "HtoD copies");
	ASSERT_NEAR(DBL_AT(sz, 1, "avg_bytes"), 2560, 1e-9, "HtoD avg");
	ASSERT_NEAR(DBL_AT(sz, 1, "med_bytes"), 2560, 1e-9, "HtoD median");
	ASSERT_EQ(U64_AT(sz, 1, "min_bytes"), 1024, "HtoD min");
	ASSERT_EQ(U64_AT(sz, 1, "max_bytes"), 4096, "HtoD max");
	ASSERT_NEAR(DBL_AT(sz, 1, "stddev_bytes"), 1536, 1e-9, "HtoD stddev");
	ASSERT_NEAR(DBL_AT(sz, 3, "stddev_bytes"), 128, 1e-9, "memset stddev of 512, 256");
}

static void check_exec_sum(const struct table *t)
{
	int a = tb_row(t, "name", "gemm", "api_name", "cudaLaunchKernel");
	int n = tb_row(t, "name", "gemm", "api_name", "(none)");
	int r = tb_row(t, "name", "relu", "api_name", "cudaLaunchKernel");

	if (!ASSERT_EQ(table__nrows(t), 3, "three (api, kernel) rows") ||
	    !ASSERT_TRUE(a >= 0 && n >= 0 && r >= 0, "rows"))
		return;
	ASSERT_EQ(r, 0, "by kernel time: relu first");
	/* gemm by cudaLaunchKernel: two cuda-linked (api 100, 200; queue 1000-600, 1200-900)
	 * and one CUPTI-linked (api 50; queue 2000-1950). */
	ASSERT_EQ(U64_AT(t, a, "count"), 3, "linked gemm launches");
	ASSERT_NEAR(DBL_AT(t, a, "api_avg_ns"), 350.0 / 3, 1e-9, "api avg");
	ASSERT_NEAR(DBL_AT(t, a, "api_med_ns"), 100, 1e-9, "api median");
	ASSERT_NEAR(DBL_AT(t, a, "queue_avg_ns"), 250, 1e-9, "queue avg of 400, 300, 50");
	ASSERT_NEAR(DBL_AT(t, a, "queue_med_ns"), 300, 1e-9, "queue median");
	ASSERT_NEAR(DBL_AT(t, a, "kernel_avg_ns"), 200, 1e-9, "kernel avg");
	ASSERT_EQ(U64_AT(t, a, "kernel_total_ns"), 600, "kernel total");
	/* The kernel whose call is not in the trace: no API or queue numbers. */
	ASSERT_EQ(U64_AT(t, n, "count"), 1, "unlinked gemm");
	ASSERT_EQ(U64_AT(t, n, "kernel_total_ns"), 400, "unlinked kernel time");
	ASSERT_TRUE(!SET_AT(t, n, "api_avg_ns") && !SET_AT(t, n, "queue_avg_ns"),
		    "no call: api and queue unset");
	/* relu started before its call returned: queue 0, not negative. */
	ASSERT_NEAR(DBL_AT(t, r, "api_avg_ns"), 100, 1e-9, "relu api");
	ASSERT_NEAR(DBL_AT(t, r, "queue_avg_ns"), 0, 1e-9, "relu queue clamped at 0");
}

static void check_idle_sum(const struct table *t)
{
	if (!ASSERT_EQ(table__nrows(t), 2, "two devices"))
		return;
	/* Device 0: busy [1000, 2550) (gemm and relu overlap on two streams), [5000, 5400),
	 * [10000, 10500), [11000, 11100), [12000, 12200), [13000, 13050), [1013050, 1013100). */
	ASSERT_EQ(U64_AT(t, 0, "device"), 0, "device 0 first");
	ASSERT_EQ(U64_AT(t, 0, "pid"), PID, "its process");
	ASSERT_EQ(U64_AT(t, 0, "ops"), 10, "operations");
	ASSERT_EQ(U64_AT(t, 0, "span_ns"), 1013100 - 1000, "span");
	ASSERT_EQ(U64_AT(t, 0, "busy_ns"), 1550 + 400 + 500 + 100 + 200 + 50 + 50,
		  "busy: the union, overlap counted once");
	ASSERT_EQ(U64_AT(t, 0, "idle_ns"), 1012100 - 2850, "idle");
	ASSERT_NEAR(DBL_AT(t, 0, "idle_pct"), 100.0 * (1012100 - 2850) / 1012100, 1e-9, "idle_pct");
	ASSERT_EQ(U64_AT(t, 0, "gaps"), 6, "gaps");
	ASSERT_EQ(U64_AT(t, 0, "gaps_1ms"), 1, "gaps of 1 ms or more");
	ASSERT_EQ(U64_AT(t, 0, "max_gap_ns"), 1000000, "longest gap");
	ASSERT_EQ(U64_AT(t, 0, "max_gap_ts"), 13050, "it began at the memset's end");
	/* Device 1: one copy, never idle. */
	ASSERT_EQ(U64_AT(t, 1, "device"), 1, "device 1");
	ASSERT_EQ(U64_AT(t, 1, "span_ns"), 300, "span");
	ASSERT_EQ(U64_AT(t, 1, "busy_ns"), 300, "busy");
	ASSERT_EQ(U64_AT(t, 1, "gaps"), 0, "no gap");
	ASSERT_TRUE(!SET_AT(t, 1, "max_gap_ts"), "no gap: no time");
}

static void check_shim_sum(const struct table *t)
{
	if (!ASSERT_EQ(table__nrows(t), 1, "one process"))
		return;
	ASSERT_EQ(U64_AT(t, 0, "pid"), PID, "pid");
	ASSERT_STREQ(STR_AT(t, 0, "state"), "cuda_injected", "the last state");
	ASSERT_EQ(U64_AT(t, 0, "cupti_version"), 130000, "CUPTI's version");
	ASSERT_EQ(U64_AT(t, 0, "attaches"), 1, "attaches");
	ASSERT_EQ(U64_AT(t, 0, "cupti_errors"), 1, "CUPTI errors");
	ASSERT_STREQ(STR_AT(t, 0, "last_error"), "cuptiActivityEnable: CUPTI_ERROR_UNKNOWN (999)",
		     "the error, named");
	ASSERT_EQ(U64_AT(t, 0, "dropped"), 12, "dropped records add up");
	ASSERT_EQ(U64_AT(t, 0, "seq"), 9, "last batch");
	ASSERT_EQ(U64_AT(t, 0, "exited"), 1, "exited");
	ASSERT_EQ(U64_AT(t, 0, "kernels"), 5, "kernels");
	ASSERT_EQ(U64_AT(t, 0, "memcpys"), 4, "copies");
	ASSERT_EQ(U64_AT(t, 0, "memsets"), 2, "memsets");
	ASSERT_EQ(U64_AT(t, 0, "gpu_api"), 1, "API records");
	ASSERT_EQ(U64_AT(t, 0, "nvtx_ranges"), 0, "no NVTX");
}

static void test_reports(void)
{
	struct stats *s;
	char path[128];
	int status;

	snprintf(path, sizeof(path), "%s/gpu.bst", tmp_dir);
	if (!ASSERT_EQ(write_gpu_trace(path), 0, "write trace"))
		return;
	s = stats__collect(path, NULL, &status);
	if (!ASSERT_TRUE(s, "collect") || !ASSERT_EQ(status, EXIT_READ_OK, "status"))
		goto out;
	ASSERT_TRUE(stats__table(s, "cuda_gpu_kern_sum") && stats__table(s, "shim_sum") &&
			    stats__table(s, "gpu_idle_sum"),
		    "the gpu family's reports run by default");
	check_kern_sum(stats__table(s, "cuda_gpu_kern_sum"));
	check_mem_sums(stats__table(s, "cuda_gpu_mem_time_sum"),
		       stats__table(s, "cuda_gpu_mem_size_sum"));
	check_exec_sum(stats__table(s, "cuda_kern_exec_sum"));
	check_idle_sum(stats__table(s, "gpu_idle_sum"));
	check_shim_sum(stats__table(s, "shim_sum"));
out:
	stats__free(s);
	unlink(path);
}

/* The reports on a trace with no GPU record: empty tables, never a failure. */
static void test_reports_empty(void)
{
	static const char *const names[] = { "cuda_gpu_kern_sum",     "cuda_gpu_mem_time_sum",
					     "cuda_gpu_mem_size_sum", "cuda_kern_exec_sum",
					     "gpu_idle_sum",	      "shim_sum" };
	struct stats *s;
	char path[128];
	struct tb b;
	int status;

	snprintf(path, sizeof(path), "%s/empty.bst", tmp_dir);
	if (!ASSERT_EQ(tb_open(&b, path, "gpu"), 0, "open") ||
	    !ASSERT_EQ(tb_close(&b, 5000), 0, "close"))
		return;
	s = stats__collect(path,
			   "cuda_gpu_kern_sum,cuda_gpu_mem_time_sum,cuda_gpu_mem_size_sum,"
			   "cuda_kern_exec_sum,gpu_idle_sum,shim_sum",
			   &status);
	if (ASSERT_TRUE(s, "collect"))
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			ASSERT_EQ(table__nrows(stats__table(s, names[i])), 0, names[i]);
	stats__free(s);
	unlink(path);
}

int main(void)
{
	if (tb_tmp_dir(tmp_dir, sizeof(tmp_dir)))
		return 1;
	RUN_TEST(test_decode_kernel);
	RUN_TEST(test_decode_memcpy_memset);
	RUN_TEST(test_decode_api_status);
	RUN_TEST(test_cupti_result_names);
	RUN_TEST(test_event_json_args);
	RUN_TEST(test_flow_id);
	RUN_TEST(test_reports);
	RUN_TEST(test_reports_empty);
	rmdir(tmp_dir);
	return UNIT_EXIT();
}
