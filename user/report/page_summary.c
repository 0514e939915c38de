// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The verdict and the headline figures at the top of the report's page; see page_summary.h. */
#include <string.h>
#include "human.h"
#include "page.h"
#include "page_ledger.h"
#include "page_summary.h"
#include "stats.h"
#include "verdict.h"

#define MAX_LINES 32

/* A claim's report ("osrt_sum --tid 618") as a link to its table on the page. */
static void claim_link(FILE *f, const char *report)
{
	int len = (int)strcspn(report, " ");

	fprintf(f, " <a href=\"#r-%.*s\">-r ", len, report);
	page__esc(f, report);
	fprintf(f, "</a>");
}

void page_summary__verdict(FILE *f, const struct stats *s)
{
	page_summary__verdict_of(f, stats__verdict(s));
}

void page_summary__verdict_of(FILE *f, const struct verdict *v)
{
	struct verdict_line l[MAX_LINES];
	char head[1200];
	int n, more;

	fprintf(f, "<section id=\"verdict\"><h2>Verdict</h2>\n");
	if (!v || !verdict__headline(v, head, sizeof(head))[0]) {
		fprintf(f, "<p class=\"headline nothing\">");
		page__esc(f, v ? verdict__nothing(v, head, sizeof(head)) : "no verdict");
		fprintf(f, "</p>\n");
		if (v && verdict__unjudged(v, head, sizeof(head))[0]) {
			fprintf(f, "<p class=\"more\">");
			page__esc(f, head);
			fprintf(f, "</p>\n");
		}
		fprintf(f, "</section>\n");
		return;
	}
	fprintf(f, "<p class=\"headline\">");
	page__esc(f, head);
	fprintf(f, "</p>\n");
	page_ledger__bar(f, v);
	fprintf(f, "<ul class=\"claims\">\n");
	n = verdict__lines(v, l, MAX_LINES, &more);
	for (int i = 0; i < n; i++) {
		fprintf(f, "<li class=\"%s\"><span class=\"mark\">%s</span><span class=\"kind\">",
			l[i].detail ? "detail" : "claim", l[i].holds ? "*" : "");
		page__esc(f, l[i].kind);
		fprintf(f, "</span><span class=\"share\">");
		if (l[i].share >= 0)
			fprintf(f, "%.1f%%", l[i].share * 100);
		fprintf(f, "</span><span class=\"text\">");
		page__esc(f, l[i].text);
		if (l[i].report[0])
			claim_link(f, l[i].report);
		fprintf(f, "</span></li>\n");
	}
	fprintf(f, "</ul>\n");
	if (more)
		fprintf(f,
			"<p class=\"more\">%d more claims: <code>bpfsight stats</code> lists "
			"them</p>\n",
			more);
	/* a verdict from a server's answers: the families it could not judge there */
	if (verdict__unjudged(v, head, sizeof(head))[0]) {
		fprintf(f, "<p class=\"more\">");
		page__esc(f, head);
		fprintf(f, "</p>\n");
	}
	fprintf(f, "<p class=\"legend-note\">");
	page__esc(f, verdict__legend);
	fprintf(f, "</p></section>\n");
}

void page__figure(FILE *f, const char *label, const char *value, const char *exact,
		  const char *href)
{
	if (href)
		fprintf(f, "<a class=\"fig\" href=\"%s\">", href);
	else
		fprintf(f, "<div class=\"fig\">");
	fprintf(f, "<span class=\"v\"");
	if (exact) {
		fprintf(f, " title=\"");
		page__esc(f, exact);
		fprintf(f, "\"");
	}
	fprintf(f, ">");
	page__esc(f, value);
	fprintf(f, "</span><span class=\"l\">");
	page__esc(f, label);
	fprintf(f, "</span>%s\n", href ? "</a>" : "</div>");
}

void page_summary__focus(struct page *p, const struct stats *s, const struct trace_model *m)
{
	const struct verdict *v = stats__verdict(s);
	__u32 pid = 0, tid = 0;

	p->focus[0] = 0;
	if (v && !verdict__focus(v, &pid, &tid))
		verdict__thread_in(m, pid, tid, p->focus, sizeof(p->focus));
}

/* The focus thread's share of its life spent WHAT, as a figure, when it spent any. */
static void focus_share(FILE *f, const struct page *p, const struct verdict *v,
			enum verdict_time what, const char *doing, const char *href)
{
	char label[256], value[32], exact[96], a[32], b[32];
	__u32 pid = 0, tid = 0;
	__u64 ns, life;
	double share;

	if (!v || verdict__focus(v, &pid, &tid))
		return;
	ns = verdict__time(v, pid, tid, what);
	life = verdict__life(v, pid, tid);
	if (!ns || !life)
		return;
	snprintf(label, sizeof(label), "%s: %s", doing, p->focus);
	share = 100.0 * (double)ns / (double)life;
	snprintf(value, sizeof(value), share < 0.1 ? "%.2g%%" : "%.1f%%", share);
	snprintf(exact, sizeof(exact), "%s of %s (%llu of %llu ns)",
		 human__ns((double)ns, a, sizeof(a)), human__ns((double)life, b, sizeof(b)),
		 (unsigned long long)ns, (unsigned long long)life);
	page__figure(f, label, value, exact, href);
}

void page_summary__figures(FILE *f, const struct page *p, const struct stats *s)
{
	const struct verdict *v = stats__verdict(s);
	unsigned long long lost = stats__lost(s);
	char value[32], exact[64];

	human__ns((double)(p->end - p->origin), value, sizeof(value));
	snprintf(exact, sizeof(exact), "%llu ns", (unsigned long long)(p->end - p->origin));
	page__figure(f, "recorded", value, exact, "#timelines");
	focus_share(f, p, v, VERDICT_GIL_WAIT, "waiting for the GIL", "#tl-gil");
	if (lost)
		snprintf(value, sizeof(value), "%llu", lost);
	page__figure(f, "events lost", lost ? value : "none", NULL, "#tl-loss");
}
