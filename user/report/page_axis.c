// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The report page's time axis; see page_axis.h. */
#include "page.h"
#include "page_axis.h"

void page_axis__secs(char *buf, size_t len, double s)
{
	if (s >= 100)
		snprintf(buf, len, "%.0f s", s);
	else if (s >= 1 || s == 0)
		snprintf(buf, len, "%.3g s", s);
	else
		snprintf(buf, len, "%.3g ms", s * 1e3);
}

void page_axis__open(FILE *f, const struct page *p, int plot_h, double top, const char *unit)
{
	double secs = (double)(p->end - p->origin) / 1e9;
	int h = PLOT_Y + plot_h + AXIS_H;
	char buf[32];

	fprintf(f,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" role=\"img\">\n",
		SVG_W, h);
	fprintf(f, "<g class=\"axis\"><line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>", PLOT_X,
		PLOT_Y + plot_h, PLOT_X + PLOT_W, PLOT_Y + plot_h);
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>", PLOT_X, PLOT_Y, PLOT_X,
		PLOT_Y + plot_h);
	for (int t = 0; t <= 4; t++) {
		page_axis__secs(buf, sizeof(buf), secs * t / 4);
		fprintf(f,
			"<text class=\"tick\" data-f=\"%.2f\" x=\"%d\" y=\"%d\" text-anchor=\"%s\">%s</text>",
			t / 4.0, PLOT_X + PLOT_W * t / 4, h - 8,
			t == 0	 ? "start"
			: t == 4 ? "end"
				 : "middle",
			buf);
	}
	if (unit) {
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.*f%s</text>", PLOT_X - 4,
			PLOT_Y + 10, top >= 100 ? 0 : 2, top, unit);
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">0</text>", PLOT_X - 4,
			PLOT_Y + plot_h);
	}
	fprintf(f,
		"</g>\n<svg class=\"plot\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
		"viewBox=\"%d %d %d %d\" preserveAspectRatio=\"none\">\n",
		PLOT_X, PLOT_Y, PLOT_W, plot_h, PLOT_X, PLOT_Y, PLOT_W, plot_h);
}

void page_axis__close_plot(FILE *f)
{
	fprintf(f, "</svg>\n");
}
