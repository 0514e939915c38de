// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Thread names: Python's (THREAD_NAME records) over comm, unless threading made the name up
 * and the program gave the thread an OS name of its own (user/core/thread_name.h); the
 * trace model picks so from a trace's records, and forgets Python's name with the thread.
 */
#include <stdlib.h>
#include <string.h>
#include "records.h"
#include "thread_name.h"
#include "trace_model.h"
#include "unit.h"

static void test_made_up(void)
{
	ASSERT_TRUE(thread_name__made_up("MainThread"), "MainThread");
	ASSERT_TRUE(thread_name__made_up("Thread-12"), "Thread-N");
	ASSERT_TRUE(thread_name__made_up("Thread-3 (loader)"), "Thread-N (target)");
	ASSERT_TRUE(thread_name__made_up("Dummy-1"), "Dummy-N");
	ASSERT_TRUE(!thread_name__made_up("cpu-0"), "cpu-0");
	ASSERT_TRUE(!thread_name__made_up("Thread-"), "Thread-");
	ASSERT_TRUE(!thread_name__made_up("Thread-x"), "Thread-x");
	ASSERT_TRUE(!thread_name__made_up("Thread-3 loader"), "Thread-3 loader");
	ASSERT_TRUE(!thread_name__made_up("ThreadPoolExecutor-0_0"), "the executor's names");
}

static void test_pick(void)
{
	const char *cmd = "/usr/bin/python3.11 train.py --epochs 3";

	ASSERT_STREQ(thread_name__pick("cpu-0", "python3.11", cmd, NULL), "cpu-0", "given");
	ASSERT_STREQ(thread_name__pick("cpu-0", "trainer", cmd, NULL), "cpu-0", "given, renamed");
	ASSERT_STREQ(thread_name__pick("MainThread", "python3.11", cmd, NULL), "MainThread",
		     "made up, the program's comm");
	ASSERT_STREQ(thread_name__pick("MainThread", "trainer", cmd, NULL), "trainer",
		     "made up, renamed");
	ASSERT_STREQ(thread_name__pick("Dummy-1", "pt_autograd_0", cmd, NULL), "pt_autograd_0",
		     "a C++ thread's name");
	ASSERT_STREQ(thread_name__pick(NULL, "python3.11", cmd, NULL), "python3.11", "no Python");
	ASSERT_STREQ(
		thread_name__pick("Thread-1", "python3", "python3 x.py", "/usr/bin/python3.11"),
		"Thread-1", "argv[0] names it");
	ASSERT_STREQ(
		thread_name__pick("Thread-1", "python3.11", "python3 x.py", "/usr/bin/python3.11"),
		"Thread-1", "the executable names it");
	/* comm keeps 15 bytes of the file name */
	ASSERT_STREQ(thread_name__pick("MainThread", "a_long_program_", "/opt/a_long_program_name",
				       NULL),
		     "MainThread", "a cut file name");
	ASSERT_STREQ(thread_name__pick("MainThread", "trainer", NULL, NULL), "MainThread",
		     "nothing says it was renamed");
}

static __u32 string(struct trace_model *m, __u32 id, const char *s)
{
	__u64 buf[16] = {};
	struct bs_string *r = (void *)buf;

	r->h = (struct bs_hdr){ .type = BS_REC_STRING, .size = sizeof(*r) + 64 };
	r->id = id;
	r->len = strlen(s);
	memcpy(r + 1, s, r->len);
	trace_model__observe(m, &r->h);
	return id;
}

static void test_model(void)
{
	struct trace_model *m = trace_model__new();
	struct bs_process p = {
		.h = { .type = BS_REC_PROCESS, .size = sizeof(p), .pid = 10, .tid = 10 }
	};
	struct bs_thread t = {
		.h = { .type = BS_REC_THREAD, .size = sizeof(t), .pid = 10, .tid = 11 }
	};
	struct bs_thread_name n = {
		.h = { .type = BS_REC_THREAD_NAME, .size = sizeof(n), .pid = 10, .tid = 11 },
		.source = BS_THREAD_NAME_PYTHON
	};
	struct bs_comm c = {
		.h = { .type = BS_REC_COMM, .size = sizeof(c), .pid = 10, .tid = 11 }
	};
	struct bs_fork f = { .h = { .type = BS_REC_FORK, .size = sizeof(f), .pid = 10, .tid = 10 },
			     .child_pid = 10,
			     .child_tid = 11 };

	p.cmdline_id = string(m, 1, "/usr/bin/python3.11 job.py");
	memcpy(p.comm, "python3.11", 11);
	trace_model__observe(m, &p.h);
	memcpy(t.name, "python3.11", 11);
	trace_model__observe(m, &t.h);
	ASSERT_STREQ(trace_model__thread_name(m, 11), "python3.11", "comm before");
	n.name_id = string(m, 2, "Thread-1 (loader)");
	trace_model__observe(m, &n.h);
	ASSERT_STREQ(trace_model__thread_name(m, 11), "Thread-1 (loader)", "Python's");
	memcpy(c.comm, "loader", 7);
	trace_model__observe(m, &c.h);
	ASSERT_STREQ(trace_model__thread_name(m, 11), "loader", "renamed by the program");
	n.name_id = string(m, 3, "cpu-1");
	trace_model__observe(m, &n.h);
	ASSERT_STREQ(trace_model__thread_name(m, 11), "cpu-1", "given by Python");
	ASSERT_STREQ(trace_model__process_name(m, 10), "python3.11", "the process keeps its name");
	memcpy(f.comm, "python3.11", 11);
	trace_model__observe(m, &f.h);
	ASSERT_STREQ(trace_model__thread_name(m, 11), "python3.11", "a new thread of that tid");
	trace_model__free(m);
}

int main(void)
{
	RUN_TEST(test_made_up);
	RUN_TEST(test_pick);
	RUN_TEST(test_model);
	return UNIT_EXIT();
}
