/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Closing uprobe links off the recording's thread. A uprobe_multi link's close waits for the
 * kernel's grace periods (the consumers it unregisters: uprobe_unregister_sync), ~20 ms each
 * here however few its probes, while closes made on several threads at once share them
 * (bench/RESULTS.md, "Probes per process"). A process of the job that exits takes a link per
 * group of probes it was placed in: closed here, by a few threads, the recording goes on.
 * Until then a link of an exited process does nothing (its filter is its own process's mm,
 * gone: a recycled pid is another process).
 */
#ifndef BPFSIGHT_UPROBE_CLOSER_H
#define BPFSIGHT_UPROBE_CLOSER_H

struct uprobe_closer;

struct uprobe_closer *uprobe_closer__new(void);
/* FD closed in the background (at once, here, when no thread could be started). */
void uprobe_closer__close(struct uprobe_closer *c, int fd);
/* Returns once every fd handed over is closed. */
void uprobe_closer__drain(struct uprobe_closer *c);
/* Drains, then ends the threads. NULL is fine. */
void uprobe_closer__free(struct uprobe_closer *c);

#endif /* BPFSIGHT_UPROBE_CLOSER_H */
