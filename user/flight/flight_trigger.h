/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* --trigger conditions, evaluated on every record as it arrives (flight_recorder.c). */
#ifndef BPFSIGHT_FLIGHT_TRIGGER_H
#define BPFSIGHT_FLIGHT_TRIGGER_H

#include <linux/types.h>
#include "flight_opts.h"
#include "records.h"

struct flight_triggers;

/* NULL when FO has no --trigger (nothing to evaluate) or out of memory (*err). */
struct flight_triggers *flight_triggers__new(const struct flight_opts *fo, int *err);
void flight_triggers__free(struct flight_triggers *ft);
/*
 * The first condition REC meets (its event lasted over the condition's DUR), or NULL. One
 * event meets a condition once: each instance is one record.
 */
const struct flight_trigger *flight_triggers__match(struct flight_triggers *ft,
						    const struct bs_hdr *rec);

#endif /* BPFSIGHT_FLIGHT_TRIGGER_H */
