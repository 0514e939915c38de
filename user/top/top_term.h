/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The terminal top draws on (top_term.c): keys one at a time without echo, the alternate
 * screen, the size and its changes (SIGWINCH), and stderr kept off the screen while it is
 * drawn (the recording's messages come back once the terminal is given back). Only the
 * escape sequences every terminal since the VT100 knows (and xterm's alternate screen).
 */
#ifndef BPFSIGHT_TOP_TERM_H
#define BPFSIGHT_TOP_TERM_H

#include <stddef.h>
#include <termios.h>

struct top_term {
	int in, out; /* the terminal (stdin, stdout) */
	int keys;    /* stdin is the terminal: keys are read */
	struct termios saved;
	int winch;     /* signalfd of SIGWINCH (blocked in every thread), or -1 */
	int err_saved; /* stderr as it was, while it goes to err_pipe; -1 when not taken */
	int err_pipe[2];
	int rows, cols;
};

/*
 * 1 when the screen can be drawn on: stdout is a terminal that is not TERM=dumb (else top
 * writes batch frames).
 */
int top_term__usable(void);
/* Take the terminal: raw keys, the alternate screen, stderr captured. 0 or -errno. */
int top_term__open(struct top_term *tt);
/* Its size now (80x24 when it does not say). */
void top_term__size(struct top_term *tt);
/* Draw TEXT (lines ending with '\n') from the top left, clearing what was there. */
void top_term__draw(struct top_term *tt, const char *text, size_t len);
/* Give the terminal back as it was (idempotent; also on a fatal signal). */
void top_term__restore(struct top_term *tt);
/* stderr back where it was (what it got meanwhile was read from err_pipe[0] by then). */
void top_term__release_stderr(struct top_term *tt);

#endif /* BPFSIGHT_TOP_TERM_H */
