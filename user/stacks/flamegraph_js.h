/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The script every flame graph carries (flamegraph_js.c): zoom, search, details. */
#ifndef BPFSIGHT_FLAMEGRAPH_JS_H
#define BPFSIGHT_FLAMEGRAPH_JS_H

extern const char flamegraph_js[];

#endif /* BPFSIGHT_FLAMEGRAPH_JS_H */
