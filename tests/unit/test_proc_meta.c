// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * proc_meta: the /proc/PID/stat parse behind -p's liveness check, and the start-time
 * comparison that tells a -p target from a later process that got its recycled pid.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
#include "proc_meta.h"
#include "unit.h"

static void test_parse_stat(void)
{
	/* A comm with spaces and parens: fields count from the last ')'. */
	const char *line = "4242 (a (b) c) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 "
			   "0 987654 1000 100 18446744073709551615";
	__u64 start = 0;
	__u32 ppid = 0;
	char state = 0;

	ASSERT_EQ(proc_meta__parse_stat(line, &ppid, &start, &state), 0, "parses");
	ASSERT_EQ(state, 'S', "state");
	ASSERT_EQ(ppid, 17, "ppid");
	ASSERT_EQ(start, 987654, "starttime (field 22)");
	ASSERT_EQ(proc_meta__parse_stat("4242 (x) S 17 1 2", &ppid, &start, &state), -EINVAL,
		  "truncated before field 22");
	ASSERT_EQ(proc_meta__parse_stat("4242 x S 17", &ppid, &start, &state), -EINVAL, "no comm");
}

static void test_alive_since(void)
{
	__u64 start = 0, child_start = 0;
	pid_t child;
	int status;

	ASSERT_EQ(proc_meta__start(getpid(), &start), 0, "this process is alive");
	ASSERT_TRUE(proc_meta__alive_since(getpid(), start), "alive since its own start");
	ASSERT_TRUE(!proc_meta__alive_since(getpid(), start + 1),
		    "another start time: a recycled pid, not the target");
	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	ASSERT_EQ(proc_meta__start(child, &child_start), 0, "child alive");
	ASSERT_TRUE(proc_meta__alive_since(child, child_start), "child alive since its start");
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	ASSERT_TRUE(!proc_meta__alive_since(child, child_start), "reaped: gone");
	ASSERT_EQ(proc_meta__start(child, &child_start), -ESRCH, "reaped: -ESRCH");
}

int main(void)
{
	RUN_TEST(test_parse_stat);
	RUN_TEST(test_alive_since);
	return UNIT_EXIT();
}
