/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Flame graphs of the CPU samples (export --format svg, bpfsight report): the samples'
 * stacks merged into a tree (root first, a frame per name; a stack deeper than FOLD_DEPTH
 * with its middle folded into one frame), drawn as SVG: width = samples, callers below
 * callees, a tooltip per frame (its samples and share), and an inline script (flamegraph.js)
 * to zoom into a frame and search.
 *
 * The tree's struct is in flamegraph_tree.h; flamegraph_svg.c draws it as flamegraph.pl does
 * (a <g> per frame: tooltip, rectangle, label, and its place and width in the graph's unit as
 * data-x/data-n). The interactivity (zoom, search, details line, labels fitted to the width
 * shown) is flamegraph.js, a file of its own that flamegraph_js.c embeds with .incbin and
 * every graph carries inline; tests/e2e/flame_probe.js drives it in headless chromium.
 */
#ifndef BPFSIGHT_FLAMEGRAPH_H
#define BPFSIGHT_FLAMEGRAPH_H

#include <stdio.h>
#include <linux/types.h>

struct trace_model;
struct trace_stack;
struct flamegraph;

/* UNIT names what the widths count ("samples", "us of GIL waits"); it must outlive G. */
struct flamegraph *flamegraph__new(const char *unit);
void flamegraph__free(struct flamegraph *g);
/* COUNT (in the graph's unit) of stack S (NULL: none could be read); KERNEL: a [kernel] leaf. */
int flamegraph__add(struct flamegraph *g, const struct trace_stack *s, int kernel, __u64 count,
		    const struct trace_model *m);
__u64 flamegraph__samples(const struct flamegraph *g);
/*
 * Draw it 1200 pixels wide. STANDALONE: a whole SVG document (else an <svg> element for an
 * HTML page, sized by its container: the script lays it out again at the width shown).
 * Frames narrower than a tenth of a pixel (standalone) or half a pixel (embedded: the page's
 * size is bounded by its width) are left out, the footer line says how many. 0, or -EIO when
 * writing failed.
 */
int flamegraph__svg(const struct flamegraph *g, FILE *f, const char *title, int standalone);

#endif /* BPFSIGHT_FLAMEGRAPH_H */
