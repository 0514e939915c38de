// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* --capture-range's gate: which records are kept for which ranges, and the SYMBOL model. */
#include "capture_gate.h"
#include "trace_model.h"
#include "unit.h"
#include "cuda_records.h"
#include "osrt_records.h"
#include "sched_records.h"

static struct bs_hdr rec(__u16 type, __u64 ts)
{
	return (struct bs_hdr){ .type = type, .size = sizeof(struct bs_hdr), .ts = ts };
}

static int keep(struct capture_gate *g, __u16 type, __u64 ts)
{
	struct bs_hdr h = rec(type, ts);

	return capture_gate__keep(g, &h);
}

static void test_ranges(void)
{
	struct capture_gate *g = capture_gate__new();

	if (!ASSERT_TRUE(g, "new"))
		return;
	/* Before any range: events dropped, metadata kept. */
	ASSERT_EQ(keep(g, BS_REC_CUDA_CALL, 100), 0, "event before the first range");
	ASSERT_EQ(keep(g, BS_REC_SYSCALL, 100), 0, "syscall before the first range");
	ASSERT_EQ(keep(g, BS_REC_STRING, 100), 1, "string kept");
	ASSERT_EQ(keep(g, BS_REC_SYMBOL, 100), 1, "symbol kept");
	ASSERT_EQ(keep(g, BS_REC_LOSS, 100), 1, "loss kept");
	ASSERT_EQ(keep(g, BS_REC_SYSCALL_AGG, 100), 1, "aggregates kept");
	ASSERT_EQ(keep(g, BS_REC_EXIT, 100), 1, "lifecycle kept");
	capture_gate__open(g, 1000);
	ASSERT_EQ(keep(g, BS_REC_CUDA_CALL, 999), 0, "started before the range");
	ASSERT_EQ(keep(g, BS_REC_CUDA_CALL, 1000), 1, "started at the range start");
	ASSERT_EQ(keep(g, BS_REC_OFFCPU, 1500), 1, "inside the open range");
	/* A nested start does not restart the range; only the last stop closes it. */
	capture_gate__open(g, 1600);
	capture_gate__close(g, 1700);
	ASSERT_EQ(keep(g, BS_REC_CUDA_CALL, 1800), 1, "still open after an inner stop");
	capture_gate__close(g, 2000);
	/* Records arrive when calls return: one that started inside is kept afterwards. */
	ASSERT_EQ(keep(g, BS_REC_CUDA_CALL, 1999), 1, "started inside, arrives after the stop");
	ASSERT_EQ(keep(g, BS_REC_CUDA_CALL, 2001), 0, "after the range");
	capture_gate__close(g, 2500); /* a stop without a start is ignored */
	capture_gate__open(g, 3000);
	capture_gate__close(g, 4000);
	ASSERT_EQ(keep(g, BS_REC_CUDA_CALL, 3500), 1, "second range");
	ASSERT_EQ(keep(g, BS_REC_CUDA_CALL, 1200), 1, "late record of the first range");
	ASSERT_EQ(keep(g, BS_REC_CUDA_CALL, 2500), 0, "between the ranges");
	ASSERT_EQ(capture_gate__dropped(g), 5, "dropped events counted");
	capture_gate__free(g);
}

static void test_symbol_model(void)
{
	struct trace_model *m = trace_model__new();
	struct {
		struct bs_string s;
		char text[8];
	} str = { { { BS_REC_STRING, sizeof(str), 0, 0, 0, 1 }, 7, 6 }, "kern_a" };
	struct bs_symbol sym = {
		{ BS_REC_SYMBOL, sizeof(sym), 0, 42, 42, 2 }, 0x401000, 7, BS_SYM_HOST_FUNC
	};

	trace_model__observe(m, &str.s.h);
	trace_model__observe(m, &sym.h);
	ASSERT_STREQ(trace_model__symbol(m, 42, 0x401000), "kern_a", "named in its process");
	ASSERT_TRUE(!trace_model__symbol(m, 43, 0x401000), "not in another process");
	ASSERT_TRUE(!trace_model__symbol(m, 42, 0x401001), "not at another address");
	sym.h.size = sizeof(sym) - 8; /* truncated: ignored, never read past its end */
	sym.addr = 0x402000;
	trace_model__observe(m, &sym.h);
	ASSERT_TRUE(!trace_model__symbol(m, 42, 0x402000), "short record ignored");
	trace_model__free(m);
}

int main(void)
{
	RUN_TEST(test_ranges);
	RUN_TEST(test_symbol_model);
	return UNIT_EXIT();
}
