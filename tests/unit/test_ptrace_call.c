// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ptrace_call tests: the rt_sigreturn stub search (bytes, and glibc's own sa_restorer), and
 * a whole borrowed call: a forked child waiting in read() on a pipe is made to call a
 * function of this program with a string; the function writes it to another pipe, the
 * child's read then returns the byte the test sends (never EINTR), its registers, FPU state
 * and signal mask as before (it checks them itself and exits 0 only if all hold).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "ptrace_call.h"
#include "unit.h"

static const unsigned char stub[] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05 };

static void test_find_restorer(void)
{
	unsigned char buf[256];

	memset(buf, 0x90, sizeof(buf));
	if (!ASSERT_EQ(ptrace_call__find_restorer(buf, sizeof(buf)), -1, "absent"))
		return;
	memcpy(buf + 100, stub, sizeof(stub));
	if (!ASSERT_EQ(ptrace_call__find_restorer(buf, sizeof(buf)), 100, "in the middle"))
		return;
	memset(buf, 0x90, sizeof(buf));
	memcpy(buf + sizeof(buf) - sizeof(stub), stub, sizeof(stub));
	if (!ASSERT_EQ(ptrace_call__find_restorer(buf, sizeof(buf)),
		       (long)(sizeof(buf) - sizeof(stub)), "at the very end"))
		return;
	ASSERT_EQ(ptrace_call__find_restorer(buf, sizeof(buf) - 1), -1, "cut by the end");
}

static void on_usr2(int sig)
{
}

/* glibc's sa_restorer, as the kernel keeps it: where a signal handler returns to. */
static unsigned long glibc_restorer(void)
{
	struct {
		unsigned long handler, flags, restorer, mask;
	} old;
	struct sigaction sa = { .sa_handler = on_usr2 };

	sigaction(SIGUSR2, &sa, NULL);
	if (syscall(SYS_rt_sigaction, SIGUSR2, NULL, &old, 8))
		return 0;
	signal(SIGUSR2, SIG_DFL);
	return old.restorer;
}

static void test_glibc_restorer(void)
{
	unsigned long r = glibc_restorer();

	if (!ASSERT_TRUE(r != 0, "rt_sigaction gives the restorer"))
		return;
	ASSERT_EQ(ptrace_call__find_restorer((const unsigned char *)r, sizeof(stub)), 0,
		  "glibc's restorer is mov $15,%rax; syscall");
}

static int called_fd = -1;

/* What the borrowed thread runs: the string and the second argument go to the test. */
__attribute__((noinline)) static void *called(const char *s, unsigned long x)
{
	char line[128];
	int n = snprintf(line, sizeof(line), "%s %lu", s, x);

	if (write(called_fd, line, (size_t)n) < 0)
		return NULL;
	return (void *)1;
}

/* The child: waits in read(); exit 0 when the read got the byte and nothing moved. */
static void child(int in, int out)
{
	volatile double keep = 3.25; /* in an SSE register across the call, with luck */
	sigset_t mask, now;
	char c = 0;
	ssize_t n;

	called_fd = out;
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR1);
	sigprocmask(SIG_SETMASK, &mask, NULL);
	n = read(in, &c, 1);
	sigprocmask(SIG_SETMASK, NULL, &now);
	_exit(n == 1 && c == 'x' && keep == 3.25 && sigismember(&now, SIGUSR1) &&
			      !sigismember(&now, SIGUSR2)
		      ? 0
		      : (n < 0 && errno == EINTR ? 3 : 4));
}

/* waitpid PID for at most 60 s: 1 when it exited (STATUS), 0 when it still runs. */
static int wait_exit(pid_t pid, int *status)
{
	for (int i = 0; i < 6000; i++) {
		if (waitpid(pid, status, WNOHANG) == pid)
			return 1;
		usleep(10000);
	}
	return 0;
}

static void test_borrowed_call(void)
{
	struct ptrace_call c = { .arg = "hello", .arg2 = 42, .timeout_s = 5 };
	struct ptrace_call_result r;
	int to_child[2], from_call[2], status;
	char msg[256], got[64] = "";
	ssize_t n;
	pid_t pid;

	if (geteuid()) {
		UNIT_SKIP("needs root");
		return;
	}
	c.restorer = glibc_restorer();
	c.func = (unsigned long)called;
	if (!ASSERT_TRUE(c.restorer && !pipe(to_child) && !pipe(from_call), "setup"))
		return;
	pid = fork();
	if (pid == 0)
		child(to_child[0], from_call[1]);
	/* The child's ends are the child's: should it die, our reads see it instead of hanging. */
	close(to_child[0]);
	close(from_call[1]);
	c.pid = pid;
	/*
	 * Until the child sits in its read (the call is meant for a waiting thread), within 60 s.
	 * A runnable child's line is "running", which atoi() reads as 0, SYS_read: taken for the
	 * read, the call was borrowed before the child had set called_fd, and its answer never
	 * came (a full run's last lane failed so, twice).
	 */
	for (int i = 0; i < 6000; i++) {
		char fn[64], buf[32] = "";
		FILE *f;

		snprintf(fn, sizeof(fn), "/proc/%d/syscall", pid);
		f = fopen(fn, "r");
		if (f && fgets(buf, sizeof(buf), f) && buf[0] >= '0' && buf[0] <= '9' &&
		    atoi(buf) == SYS_read) {
			fclose(f);
			break;
		}
		if (f)
			fclose(f);
		usleep(10000);
	}
	if (!ASSERT_EQ(ptrace_call__run(&c, &r, msg, sizeof(msg)), 0, msg))
		goto out;
	if (!ASSERT_EQ(r.tid, pid, "the thread borrowed"))
		goto out;
	{
		struct pollfd pf = { .fd = from_call[0], .events = POLLIN };

		n = poll(&pf, 1, 60000) == 1 ? read(from_call[0], got, sizeof(got) - 1) : -1;
	}
	got[n > 0 ? n : 0] = 0;
	if (!ASSERT_STREQ(
		    got, "hello 42",
		    "what the call received within 60 s (nothing: the child died or never ran it)"))
		goto out;
	if (write(to_child[1], "x", 1) != 1)
		goto out;
	if (!ASSERT_TRUE(wait_exit(pid, &status), "the child exits within 60 s of its byte"))
		goto out;
	pid = 0;
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		    "the child's read returned its byte, its state intact (exit 0; 3: EINTR)");
out:
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	close(to_child[1]);
	close(from_call[0]);
}

/* The state letter of /proc/PID/stat (Z: a zombie), or 0. */
static char proc_state(pid_t pid)
{
	char fn[64], buf[256], *rp;
	FILE *f;
	size_t n;

	snprintf(fn, sizeof(fn), "/proc/%d/stat", pid);
	f = fopen(fn, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' ? rp[2] : 0;
}

/* A process killed while it is being injected: a zombie, "exited", not "SEIZE refused". */
static void test_a_dead_target_is_said_to_have_exited(void)
{
	struct ptrace_call c = { .arg = "hello", .timeout_s = 5 };
	struct ptrace_call_result r;
	char msg[256] = "", want[64];
	int status, err;
	pid_t pid = fork();

	if (!pid)
		_exit(0);
	for (int i = 0; i < 500 && proc_state(pid) != 'Z'; i++)
		usleep(10000);
	if (!ASSERT_EQ(proc_state(pid), 'Z', "a zombie"))
		goto out;
	c.pid = pid;
	c.func = (unsigned long)called;
	err = ptrace_call__run(&c, &r, msg, sizeof(msg));
	ASSERT_EQ(err, -ESRCH, msg);
	snprintf(want, sizeof(want), "pid %d exited", pid);
	ASSERT_STREQ(msg, want, "the reason");
out:
	waitpid(pid, &status, 0);
}

int main(void)
{
	RUN_TEST(test_find_restorer);
	RUN_TEST(test_glibc_restorer);
	RUN_TEST(test_borrowed_call);
	RUN_TEST(test_a_dead_target_is_said_to_have_exited);
	return UNIT_EXIT();
}
