// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The recorder's side of the uprobe broker's protocol (uprobe_broker__reply), against a peer
 * that answers as the broker does, and as a broker that died or misbehaves would: the answer's
 * descriptor comes back; an answer that is not one is refused (-EPROTO) and every descriptor it
 * carried is closed; a read that fails closes nothing, above all none of the recorder's own
 * (the reply's control buffer was not initialized and was parsed after a failed read: a
 * descriptor number in the stack's garbage would have been closed, the trace file, a BPF map);
 * a signal during the wait does not make the answer the next request's. A real socket pair,
 * real descriptors passed with SCM_RIGHTS.
 */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include "uprobe_broker.h"
#include "unit.h"

/* Send ERR as N bytes of the answer, with FDS (NFDS of them) as SCM_RIGHTS. */
static int answer(int sock, int err, size_t n, const int *fds, int nfds)
{
	char cbuf[CMSG_SPACE(2 * sizeof(int))] = { 0 };
	struct iovec iov = { &err, n };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;

	if (nfds) {
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	return sendmsg(sock, &mh, 0) == (ssize_t)n ? 0 : -errno;
}

/* How many descriptors this process holds. */
static int open_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

static int pair(int sv[2])
{
	return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv);
}

static void test_the_answers_descriptor_comes_back(void)
{
	int sv[2], fd, got, inode_same;
	struct stat a, b;

	if (!ASSERT_EQ(pair(sv), 0, "socketpair"))
		return;
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ASSERT_EQ(answer(sv[1], 0, sizeof(int), &fd, 1), 0, "answer sent");
	got = uprobe_broker__reply(sv[0]);
	ASSERT_TRUE(got >= 0, "a descriptor");
	inode_same = got >= 0 && !fstat(got, &a) && !fstat(fd, &b) && a.st_ino == b.st_ino;
	ASSERT_TRUE(inode_same, "the very file the broker sent");
	if (got >= 0)
		close(got);
	close(fd);
	close(sv[0]);
	close(sv[1]);
}

static void test_an_answer_that_is_not_one_closes_what_it_carried(void)
{
	struct {
		const char *what;
		int err;
		size_t n;
		int nfds;
		int want;
	} cases[] = {
		{ "an error with a descriptor", -EACCES, sizeof(int), 1, -EACCES },
		{ "success without a descriptor", 0, sizeof(int), 0, -EPROTO },
		{ "a short answer with a descriptor", 0, 2, 1, -EPROTO },
		{ "two descriptors", 0, sizeof(int), 2, -EPROTO },
		{ "a positive error", 7, sizeof(int), 1, -EPROTO },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int sv[2], fds[2], before, got;

		if (!ASSERT_EQ(pair(sv), 0, "socketpair"))
			return;
		fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		fds[1] = open("/dev/zero", O_RDONLY | O_CLOEXEC);
		before = open_fds();
		ASSERT_EQ(answer(sv[1], cases[i].err, cases[i].n, fds, cases[i].nfds), 0, "sent");
		got = uprobe_broker__reply(sv[0]);
		if (!ASSERT_EQ(got, cases[i].want, cases[i].what))
			break;
		/* What came with the answer is closed; the sender's own copies are untouched. */
		if (!ASSERT_EQ(open_fds(), before, cases[i].what))
			break;
		ASSERT_TRUE(fcntl(fds[0], F_GETFD) >= 0 && fcntl(fds[1], F_GETFD) >= 0,
			    "the descriptors the test holds stay open");
		close(fds[0]);
		close(fds[1]);
		close(sv[0]);
		close(sv[1]);
	}
}

static void test_a_failed_read_closes_nothing_of_the_recorders(void)
{
	struct timeval tv = { 0, 50000 };
	int sv[2], before, got;

	if (!ASSERT_EQ(pair(sv), 0, "socketpair"))
		return;
	/* A broker that never answers: the read ends with EAGAIN after 50 ms. */
	setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	before = open_fds();
	got = uprobe_broker__reply(sv[0]);
	ASSERT_EQ(got, -EAGAIN, "the read's own error");
	ASSERT_EQ(open_fds(), before, "no descriptor closed, none opened");
	/* A broker that died: its end closed, the read sees the end, nothing comes. */
	close(sv[1]);
	ASSERT_EQ(uprobe_broker__reply(sv[0]), -EPROTO, "an empty answer is none");
	ASSERT_EQ(open_fds(), before - 1, "only the broker's end went");
	close(sv[0]);
}

static volatile int alarms;

static void on_alarm(int sig)
{
	alarms++;
}

/*
 * The recorder's handlers do not restart system calls: a stop signal during the wait for an
 * answer once ended the read with an error, and the answer, when it came, was read as the
 * next request's: the next probe went on the last one's site. The read goes on.
 */
static void test_a_signal_during_the_wait_does_not_shift_the_answers(void)
{
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	struct itimerval it = { .it_value = { 0, 20000 } };
	int sv[2], fd, got;
	struct stat a, b;
	pid_t peer;

	if (!ASSERT_EQ(pair(sv), 0, "socketpair"))
		return;
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	peer = fork();
	if (peer == 0) { /* the broker: answers after 150 ms */
		usleep(150000);
		_exit(answer(sv[1], 0, sizeof(int), &fd, 1) ? 1 : 0);
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, &old); /* no SA_RESTART, as the recorder's */
	alarms = 0;
	setitimer(ITIMER_REAL, &it, NULL);
	got = uprobe_broker__reply(sv[0]);
	sigaction(SIGALRM, &old, NULL);
	waitpid(peer, NULL, 0);
	ASSERT_EQ(alarms, 1, "the signal came during the wait");
	ASSERT_TRUE(got >= 0 && !fstat(got, &a) && !fstat(fd, &b) && a.st_ino == b.st_ino,
		    "the answer is the one the broker sent, read after the signal");
	if (got >= 0)
		close(got);
	close(fd);
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	RUN_TEST(test_the_answers_descriptor_comes_back);
	RUN_TEST(test_an_answer_that_is_not_one_closes_what_it_carried);
	RUN_TEST(test_a_failed_read_closes_nothing_of_the_recorders);
	RUN_TEST(test_a_signal_during_the_wait_does_not_shift_the_answers);
	return UNIT_EXIT();
}
