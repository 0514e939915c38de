// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A file per --capture-range range, without BPF: records appended as record_ctx__write does
 * with chosen times, ranges closed as the gate closes them, the files read back. Each file
 * begins with every record that names things, starts where the range before it ended, holds
 * the events that started in its range (late ones too, while its file is open), and an event
 * of a range whose file is closed is refused (counted by the caller), never misfiled.
 */
#include <stdlib.h>
#include <unistd.h>
#include "unit.h"
#include "capture_files.h"
#include "capture_gate.h"
#include "mono_clock.h"
#include "trace_reader.h"
#include "trace_writer.h"
#include "osrt_records.h"

static char dir[] = "/tmp/bpfsight-unit-capture-XXXXXX";

struct named_string {
	struct bs_string s;
	char text[8];
};

static int put_string(struct capture_files *cf, struct trace_writer *w, __u32 id, __u64 ts)
{
	struct named_string r = { { { BS_REC_STRING, sizeof(r), 0, 0, 0, ts }, id, 4 }, "name" };

	return capture_files__append(cf, w, &r.s.h);
}

static int put_syscall(struct capture_files *cf, struct trace_writer *w, __u64 ts)
{
	struct bs_syscall r = {
		.h = { .type = BS_REC_SYSCALL, .size = sizeof(r), .pid = 7, .tid = 7, .ts = ts },
		.dur = 10,
		.nr = 1
	};

	return capture_files__append(cf, w, &r.h);
}

/* The records of PATH by type: strings and syscalls, their times; its start. */
struct file_sum {
	int strings, syscalls, clean;
	__u64 first_string_ts, start, syscall_ts[8];
};

/* Range K's file, read back into S: 0, or -1 (a failed assertion). */
static int read_back(const struct capture_files *cf, __u32 k, struct file_sum *s)
{
	const struct bs_hdr *h;
	struct trace_reader *r;
	char err[256], path[256];
	int e;

	memset(s, 0, sizeof(*s));
	capture_files__path_of(cf, k, path, sizeof(path));
	r = trace_reader__open(path, err, sizeof(err), &e);
	if (!ASSERT_TRUE(r, path))
		return -1;
	s->start = trace_reader__meta(r)->start.mono_ns;
	while (trace_reader__next(r, &h) == 1) {
		if (h->type == BS_REC_STRING && !s->strings++)
			s->first_string_ts = h->ts;
		if (h->type == BS_REC_SYSCALL && s->syscalls < 8)
			s->syscall_ts[s->syscalls++] = h->ts;
	}
	s->clean = trace_reader__status(r)->clean_close;
	trace_reader__free(r);
	return 0;
}

static void test_a_file_per_range(void)
{
	struct capture_gate *g = capture_gate__new();
	struct trace_meta meta = { .version = 1, .start = { 100, 100, 100 } };
	struct trace_writer *w1 = NULL, *w2 = NULL, *w3 = NULL;
	struct capture_files *cf = NULL;
	struct trace_clocks end;
	char out[128], path[256];
	struct file_sum s;
	int err;

	snprintf(out, sizeof(out), "%s/t.bst", dir);
	if (!ASSERT_TRUE(g, "gate") ||
	    !ASSERT_TRUE(cf = capture_files__new(out, &meta, 0, 2, g), "capture files"))
		goto out;
	capture_files__path_of(cf, 2, path, sizeof(path));
	ASSERT_STREQ(strrchr(path, '/'), "/t-2.bst", "the second range's name");
	ASSERT_STREQ(strrchr(capture_files__path(cf), '/'), "/t-1.bst", "the first file");
	w1 = trace_writer__open(capture_files__path(cf), &meta, 0, &err);
	if (!ASSERT_TRUE(w1, "file 1"))
		goto out;
	ASSERT_EQ(put_string(cf, w1, 1, 200), 0, "a name before the range");
	capture_gate__open(g, 1000);
	ASSERT_EQ(put_syscall(cf, w1, 1500), 0, "an event of range 1");
	capture_gate__close(g, 2000);
	ASSERT_EQ(capture_files__next(cf, w1, 2000, &w2), 0, "range 1 closed");
	if (!ASSERT_TRUE(w2, "file 2 opened"))
		goto out;
	ASSERT_STREQ(strrchr(capture_files__path(cf), '/'), "/t-2.bst", "file 2 is the current");
	ASSERT_EQ(put_syscall(cf, w2, 1900), 0, "range 1's event, late");
	ASSERT_EQ(put_string(cf, w2, 2, 2100), 0, "a name after range 1");
	ASSERT_EQ(capture_files__current_opened(cf), 0, "range 2 not opened yet");
	capture_gate__open(g, 3000);
	ASSERT_EQ(capture_files__current_opened(cf), 1, "range 2 opened");
	ASSERT_EQ(put_syscall(cf, w2, 3500), 0, "an event of range 2");
	/* Range 1's file closes once its late events' time is over: later ones are refused. */
	ASSERT_EQ(capture_files__tick(cf, mono_now_ns() + 2 * CAPTURE_LATE_NS), 0, "file 1 closed");
	ASSERT_EQ(put_syscall(cf, w2, 1950), 1, "range 1's event, after its file closed");
	capture_gate__close(g, 4000);
	ASSERT_EQ(capture_files__next(cf, w2, 4000, &w3), 0, "the last range closed");
	ASSERT_TRUE(!w3, "no file after the last range");
	ASSERT_EQ(capture_files__finish(cf), 0, "finish");
	trace_clocks__now(&end);
	ASSERT_EQ(trace_writer__close(w2, &end), 0, "file 2 closed");
	w2 = NULL;

	if (read_back(cf, 1, &s))
		goto out;
	ASSERT_EQ(s.clean, 1, "file 1 whole");
	ASSERT_EQ(s.strings, 2, "file 1: its name and the one written while it was open");
	ASSERT_EQ(s.syscalls, 2, "file 1: range 1's events, the late one too");
	ASSERT_EQ(s.syscall_ts[0] + s.syscall_ts[1], 1500 + 1900, "file 1's events");
	if (read_back(cf, 2, &s))
		goto out;
	ASSERT_EQ(s.clean, 1, "file 2 whole");
	ASSERT_EQ(s.start, 2000, "file 2 starts where range 1 ended");
	ASSERT_EQ(s.strings, 2, "file 2: the name kept, written again, then the new one");
	ASSERT_EQ(s.first_string_ts, 2000, "the kept names at its start");
	ASSERT_EQ(s.syscalls, 1, "file 2: range 2's event only");
	ASSERT_EQ(s.syscall_ts[0], 3500, "file 2's event");
out:
	trace_writer__free(w2);
	capture_files__free(cf);
	capture_gate__free(g);
}

static void test_kept_time(void)
{
	struct capture_gate *g = capture_gate__new();

	if (!ASSERT_TRUE(g, "gate"))
		return;
	capture_gate__open(g, 1000);
	capture_gate__close(g, 1500);
	capture_gate__open(g, 2000);
	ASSERT_EQ(capture_gate__kept_ns(g, 2200), 700, "a closed range and the open one");
	ASSERT_EQ(capture_gate__judges(g, BS_REC_SYSCALL), 1, "events are judged");
	ASSERT_EQ(capture_gate__judges(g, BS_REC_STRING), 0, "names are not");
	capture_gate__free(g);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN_TEST(test_a_file_per_range);
	RUN_TEST(test_kept_time);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd))
			fprintf(stderr, "could not remove %s\n", dir);
	}
	return UNIT_EXIT();
}
