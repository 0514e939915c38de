// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The terminal top draws on (top_term.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include "fd_write.h"
#include "top_term.h"

#define ENTER "\033[?1049h\033[?25l\033[H\033[2J" /* alternate screen, no cursor, cleared */
#define LEAVE "\033[?25h\033[?1049l"		  /* cursor back, the screen of before */

static struct top_term *taken; /* for the fatal-signal handler */

int top_term__usable(void)
{
	const char *term = getenv("TERM");

	return isatty(STDOUT_FILENO) && term && *term && strcmp(term, "dumb");
}

void top_term__size(struct top_term *tt)
{
	struct winsize ws = { 0 };

	tt->rows = 24;
	tt->cols = 80;
	if (!ioctl(tt->out, TIOCGWINSZ, &ws) && ws.ws_row && ws.ws_col) {
		tt->rows = ws.ws_row;
		tt->cols = ws.ws_col;
	}
}

void top_term__restore(struct top_term *tt)
{
	if (!tt || tt->out < 0)
		return;
	fd__write_all(tt->out, LEAVE, strlen(LEAVE)); /* a terminal gone: nothing to draw on */
	if (tt->keys)
		tcsetattr(tt->in, TCSAFLUSH, &tt->saved);
	tt->keys = 0;
	tt->out = -1;
}

/* A crash must not leave the terminal without echo on the other screen: restore, then die. */
static void on_fatal(int sig)
{
	top_term__restore(taken);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void catch_fatal(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL };
	struct sigaction sa = { .sa_handler = on_fatal, .sa_flags = SA_RESETHAND };

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

/* stderr into a pipe while the screen is drawn: a message would scribble over it. */
static int capture_stderr(struct top_term *tt)
{
	if (pipe2(tt->err_pipe, O_CLOEXEC))
		return -errno;
	fcntl(tt->err_pipe[0], F_SETFL, O_NONBLOCK);
	tt->err_saved = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	if (tt->err_saved < 0 || dup2(tt->err_pipe[1], STDERR_FILENO) < 0) {
		int e = -errno;

		close(tt->err_pipe[0]);
		close(tt->err_pipe[1]);
		if (tt->err_saved >= 0)
			close(tt->err_saved);
		tt->err_saved = -1;
		return e;
	}
	return 0;
}

int top_term__open(struct top_term *tt)
{
	struct termios raw;
	sigset_t winch;
	int err;

	*tt = (struct top_term){
		.in = STDIN_FILENO, .out = STDOUT_FILENO, .winch = -1, .err_saved = -1
	};
	sigemptyset(&winch);
	sigaddset(&winch, SIGWINCH);
	tt->winch = signalfd(-1, &winch, SFD_CLOEXEC | SFD_NONBLOCK);
	if (isatty(tt->in) && !tcgetattr(tt->in, &tt->saved)) {
		raw = tt->saved;
		/* Keys one at a time, no echo; Ctrl-C is a key too (q's twin): no signals. */
		raw.c_lflag &= ~(ICANON | ECHO | ISIG | IEXTEN);
		raw.c_iflag &= ~(IXON | ICRNL);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		if (!tcsetattr(tt->in, TCSAFLUSH, &raw))
			tt->keys = 1;
	}
	err = capture_stderr(tt);
	if (err) {
		top_term__restore(tt);
		return err;
	}
	taken = tt;
	catch_fatal();
	top_term__size(tt);
	fd__write_all(tt->out, ENTER, strlen(ENTER));
	return 0;
}

void top_term__draw(struct top_term *tt, const char *text, size_t len)
{
	size_t cap = len * 5 + 16, n = 0; /* a newline becomes 5 bytes */
	char *buf = tt->out >= 0 ? malloc(cap) : NULL;

	if (!buf)
		return;
	memcpy(buf, "\033[H", 3);
	n = 3;
	/* Each line cleared to its end; no newline after the last, so the screen never scrolls. */
	for (size_t i = 0; i < len; i++) {
		if (text[i] != '\n') {
			buf[n++] = text[i];
			continue;
		}
		memcpy(buf + n, "\033[K", 3);
		n += 3;
		if (i + 1 < len) {
			memcpy(buf + n, "\r\n", 2);
			n += 2;
		}
	}
	memcpy(buf + n, "\033[J", 3);
	n += 3;
	fd__write_all(tt->out, buf, n);
	free(buf);
}

void top_term__release_stderr(struct top_term *tt)
{
	if (tt->err_saved < 0)
		return;
	dup2(tt->err_saved, STDERR_FILENO);
	close(tt->err_saved);
	close(tt->err_pipe[0]);
	close(tt->err_pipe[1]);
	tt->err_saved = -1;
	if (tt->winch >= 0)
		close(tt->winch);
	tt->winch = -1;
	taken = NULL;
}
