// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* `bpfsight top`'s screen thread (top_ui.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/signalfd.h>
#include "human.h"
#include "mono_clock.h"
#include "top.h"
#include "top_screen.h"
#include "top_term.h"
#include "top_ui.h"
#include "msg.h"
#include "recorder.h"

#define MESSAGE_NS	  5000000000ull /* how long a line from stderr stays on the last line */
#define LOG_MAX		  (256 << 10) /* what stderr got while the screen was up, kept for after */
#define STARTING_MS	  100	      /* redraw period before the first frame */
#define BATCH_WIDTH	  80	      /* batch lines without $COLUMNS */
#define LAST_FRAME_MIN_NS 50000000ull /* a batch's last frame: not one of a few ms */

struct top_ui {
	struct top_ui_opts o;
	pthread_t thread;
	int started;
	int wake[2]; /* the recording ended */
	int batch;
	struct top_term term;
	struct top_view view;
	struct top_frame frame;
	int have_frame;
	__u32 frames;
	int quitting;	  /* q, or -n frames: the stop was asked for */
	int stop_pending; /* and is still to be sent (send_stop) */
	char why[96];	  /* what stopped it, for the recording's end line */
	__u64 message_until;
	char *log; /* stderr's text while the screen was up */
	size_t log_len;
	int log_cut; /* its start was dropped (more than LOG_MAX) */
};

/*
 * Stop the recording as Ctrl-C would (recorder.c's stop thread takes it), once the recording
 * catches SIGINT: a q in its first milliseconds must not kill top with the terminal taken.
 */
static void send_stop(struct top_ui *ui)
{
	struct sigaction sa;

	if (!ui->stop_pending || sigaction(SIGINT, NULL, &sa) || sa.sa_handler == SIG_DFL)
		return;
	ui->stop_pending = 0;
	recorder__stop(ui->why);
}

/* Stop: WHY ("q pressed") says what happened, with the frames shown, in the end line. */
static void quit(struct top_ui *ui, const char *why)
{
	if (ui->quitting)
		return;
	snprintf(ui->why, sizeof(ui->why), "%u frame%s shown%s%s", ui->frames,
		 ui->frames == 1 ? "" : "s", why ? ", " : "", why ? why : "");
	ui->quitting = ui->stop_pending = 1;
	send_stop(ui);
}

int top_ui__batch_width(void)
{
	int w = human__term_width(STDOUT_FILENO); /* $COLUMNS, else the terminal's */

	return w > 0 ? w : BATCH_WIDTH;
}

static void draw(struct top_ui *ui)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	__u64 live = top__live_since(ui->o.t), now = mono_now_ns();

	if (!f)
		return;
	ui->view.live_ns = live && now > live ? now - live : 0;
	if (ui->view.message[0] && now > ui->message_until)
		ui->view.message[0] = 0;
	if (ui->batch) {
		top_screen__render(f, ui->have_frame ? &ui->frame : NULL, &ui->view,
				   top_ui__batch_width(), 0);
		fputc('\n', f); /* frames apart */
	} else {
		top_screen__render(f, ui->have_frame ? &ui->frame : NULL, &ui->view, ui->term.cols,
				   ui->term.rows);
	}
	fclose(f);
	if (ui->batch) {
		/* A reader that went away (| head): stop, as a full disk stops record. */
		if (fwrite(text, 1, len, stdout) != len || fflush(stdout))
			quit(ui, "the output was closed");
	} else if (!ui->quitting) {
		top_term__draw(&ui->term, text, len);
	}
	free(text);
}

/* < and >: the column shown left or right of the sort column. */
static void move_sort(struct top_ui *ui, int dir)
{
	if (ui->have_frame)
		ui->view.sort = top_screen__next_col(&ui->frame, ui->view.sort, dir);
}

/* The function view's own keys (py-spy top's). 1 when K was one. */
static int function_key(struct top_ui *ui, char k)
{
	struct top_view *v = &ui->view;

	switch (k) {
	case '1':
	case '2':
	case '3':
	case '4':
		v->fsort = k - '1';
		return 1;
	case '<':
	case ',':
		v->fsort = (v->fsort + TOP_FSORTS - 1) % TOP_FSORTS;
		return 1;
	case '>':
	case '.':
		v->fsort = (v->fsort + 1) % TOP_FSORTS;
		return 1;
	case 'l':
	case 'L':
		v->by_func = !v->by_func;
		return 1;
	case 'c':
		v->cumulative = !v->cumulative;
		return 1;
	case 'r':
	case 'R':
		top__reset_functions(ui->o.t);
		return 1;
	}
	return 0;
}

static void key(struct top_ui *ui, char k)
{
	if (ui->view.help) { /* any key leaves the help */
		ui->view.help = 0;
		if (k != 'q' && k != 'Q' && k != 3)
			return;
	}
	if (ui->view.functions && function_key(ui, k))
		return;
	switch (k) {
	case 'q':
	case 'Q':
	case 3: /* Ctrl-C: the terminal sends it as a key here */
		quit(ui, k == 3 ? "Ctrl-C pressed" : "q pressed");
		top_term__restore(&ui->term); /* at once: the stop takes a moment */
		break;
	case '<':
	case ',':
		move_sort(ui, -1);
		break;
	case '>':
	case '.':
		move_sort(ui, 1);
		break;
	case 't':
	case 'H':
		ui->view.threads = !ui->view.threads;
		break;
	case 'i':
		ui->view.idle = !ui->view.idle;
		break;
	case 'f':
		ui->view.functions = !ui->view.functions;
		top__want_functions(ui->o.t, ui->view.functions);
		break;
	case 'w':
		ui->view.ledger = !ui->view.ledger;
		top__want_ledger(ui->o.t, ui->view.ledger);
		break;
	case 'h':
	case '?':
		ui->view.help = 1;
		break;
	}
}

static void read_keys(struct top_ui *ui)
{
	char buf[64];
	ssize_t n = read(ui->term.in, buf, sizeof(buf));

	if (n == 0) /* the terminal hung up */
		quit(ui, "the terminal hung up");
	for (ssize_t i = 0; i < n; i++)
		key(ui, buf[i]);
}

/* Keep what stderr got; its last line goes on the screen's last line for a while. */
static void read_stderr(struct top_ui *ui)
{
	char buf[4096];
	ssize_t n;

	while ((n = read(ui->term.err_pipe[0], buf, sizeof(buf))) > 0) {
		char *end, *start;

		if (ui->log_len + n > LOG_MAX) { /* the oldest half goes */
			size_t drop = ui->log_len / 2;

			memmove(ui->log, ui->log + drop, ui->log_len - drop);
			ui->log_len -= drop;
			ui->log_cut = 1;
		}
		memcpy(ui->log + ui->log_len, buf, n);
		ui->log_len += n;
		ui->log[ui->log_len] = 0;
		/* The last whole line, printable characters only. */
		end = ui->log + ui->log_len;
		while (end > ui->log && end[-1] == '\n')
			end--;
		for (start = end; start > ui->log && start[-1] != '\n';)
			start--;
		snprintf(ui->view.message, sizeof(ui->view.message), "%.*s", (int)(end - start),
			 start);
		for (char *p = ui->view.message; *p; p++)
			if (*p < 0x20 || *p > 0x7e)
				*p = ' ';
		ui->message_until = mono_now_ns() + MESSAGE_NS;
	}
}

static void resized(struct top_ui *ui)
{
	struct signalfd_siginfo si;

	while (read(ui->term.winch, &si, sizeof(si)) > 0)
		;
	top_term__size(&ui->term);
}

/* Wait for what comes first until NEXT: a key, a resize, a message, the end. 1 at the end. */
static int wait_events(struct top_ui *ui, __u64 next)
{
	struct pollfd p[4] = { { ui->wake[0], POLLIN, 0 } };
	__u64 now = mono_now_ns();
	int n = 1, redraw = 0;

	if (!ui->batch) {
		p[n++] = (struct pollfd){ ui->term.keys && !ui->quitting ? ui->term.in : -1,
					  POLLIN };
		p[n++] = (struct pollfd){ ui->term.winch, POLLIN };
		p[n++] = (struct pollfd){ ui->term.err_pipe[0], POLLIN };
	}
	if (poll(p, n, next > now ? (int)((next - now) / 1000000 + 1) : 0) <= 0)
		return 0;
	if (p[0].revents)
		return 1;
	if (n > 1 && (p[1].revents & POLLIN)) {
		read_keys(ui);
		redraw = 1;
	} else if (n > 1 && (p[1].revents & (POLLHUP | POLLERR))) {
		quit(ui, "the terminal hung up");
	}
	if (n > 2 && p[2].revents) {
		resized(ui);
		redraw = 1;
	}
	if (n > 3 && p[3].revents) {
		read_stderr(ui);
		redraw = 1;
	}
	if (redraw && !ui->batch)
		draw(ui);
	return 0;
}

static void *ui_main(void *arg)
{
	struct top_ui *ui = arg;
	__u64 next = 0, live, now;
	sigset_t stops;

	/* The stop signals are the recording's (its stop thread): never this thread's. */
	sigemptyset(&stops);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stops, NULL);
	if (!ui->batch)
		draw(ui);
	for (;;) {
		live = top__live_since(ui->o.t);
		now = mono_now_ns();
		if (live && !next)
			next = live + ui->o.interval_ns;
		if (next && now >= next && !ui->quitting) {
			ui->have_frame = !top__cut(ui->o.t, now, &ui->frame);
			ui->frames++;
			next += ui->o.interval_ns;
			if (next <=
			    now) /* late (a stopped process, a loaded machine): skip ahead */
				next = now + ui->o.interval_ns;
			draw(ui);
			if (ui->o.iterations && ui->frames >= ui->o.iterations)
				quit(ui, NULL);
			continue;
		}
		if (wait_events(ui, next && !ui->quitting ? next : now + STARTING_MS * 1000000ull))
			break;
		send_stop(ui);
		if (!next && !ui->batch)
			draw(ui); /* the starting screen: messages as they come */
	}
	/*
	 * Batch: the recording ended by itself (-d, the targets gone): its last, shorter frame,
	 * unless one was cut a moment ago.
	 */
	now = mono_now_ns();
	if (ui->batch && !ui->quitting && top__live_since(ui->o.t) &&
	    (!ui->frames || now - (next - ui->o.interval_ns) >= LAST_FRAME_MIN_NS)) {
		ui->have_frame = !top__cut(ui->o.t, now, &ui->frame);
		draw(ui);
	}
	top_term__restore(&ui->term);
	if (!ui->batch)
		read_stderr(ui);
	return NULL;
}

struct top_ui *top_ui__start(const struct top_ui_opts *o)
{
	struct top_ui *ui = calloc(1, sizeof(*ui));
	int err;

	if (!ui || pipe2(ui->wake, O_CLOEXEC)) {
		pr_err("out of memory\n");
		free(ui);
		return NULL;
	}
	ui->o = *o;
	ui->batch = o->batch;
	ui->term.out = -1;
	ui->view = (struct top_view){ .sort = o->sort,
				      .threads = o->threads,
				      .target = o->target,
				      .interval_ns = o->interval_ns,
				      .keys = !o->batch,
				      .functions = o->functions,
				      .fsort = o->fsort,
				      .funcs_hint = o->funcs_hint,
				      .ledger = o->ledger };
	top__want_functions(o->t, o->functions);
	top__want_ledger(o->t, o->ledger);
	if (!ui->batch) {
		ui->log = malloc(LOG_MAX + 4096 + 1);
		err = ui->log ? top_term__open(&ui->term) : -ENOMEM;
		if (err) {
			pr_err("cannot use the terminal: %s\n", strerror(-err));
			goto fail;
		}
	}
	if (pthread_create(&ui->thread, NULL, ui_main, ui)) {
		top_term__restore(&ui->term);
		top_term__release_stderr(&ui->term);
		pr_err("cannot start its screen thread\n");
		goto fail;
	}
	ui->started = 1;
	return ui;
fail:
	close(ui->wake[0]);
	close(ui->wake[1]);
	free(ui->log);
	free(ui);
	return NULL;
}

void top_ui__stop(struct top_ui *ui)
{
	if (!ui)
		return;
	if (ui->started) {
		if (write(ui->wake[1], "", 1) < 0)
			pthread_cancel(ui->thread);
		pthread_join(ui->thread, NULL);
	}
	if (!ui->batch) {
		top_term__release_stderr(&ui->term);
		if (ui->log_cut)
			pr_info("(earlier messages dropped)\n");
		if (ui->log_len)
			fwrite(ui->log, 1, ui->log_len, stderr);
	}
	close(ui->wake[0]);
	close(ui->wake[1]);
	top_frame__free(&ui->frame);
	free(ui->log);
	free(ui);
}
