/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One ship of a file at a time across spools and hosts, decided in the server: before sending
 * a file's rows a ship claims it (a row of bpfsight.claims, a partition of its own), reads
 * the file's live claims back, and the claim whose part the server numbered first wins. A
 * MergeTree numbers each insert's part as it makes it visible, under one lock, so a claim
 * that loses saw the winner's before reading, and the winner, reading, saw none earlier:
 * never two winners, whatever the clocks. The loser drops its claim and stops, nothing
 * sent; the winner drops its claims once the file's ledger row is written. A claim is its
 * spool's (the host and the spool's path): a ship of the same spool tried again after a cut
 * holds it still (the spool's lock, ship_lock.h, keeps that one at a time). A claim left by a
 * spool that is gone (its host down) is taken over on request (--take-over), never by itself.
 */
#ifndef BPFSIGHT_SHIP_CLAIM_H
#define BPFSIGHT_SHIP_CLAIM_H

#include "ch_http.h"

struct ship_claim {
	const char *claimant; /* "HOST:SPOOL": whose claims are this ship's */
	int take_over;	      /* drop the others' claims of the file first (theirs are gone) */
	char holder[512]; /* when lost: who holds the file ("host H, spool S, pid P, since T") */
};

/* The read of a file's claims in order, a printf format of its job and content id. */
extern const char ship_claim__order_sql[];

/* CLAIMANT for the spool DIR on this host into BUF: 0, or a negative errno. */
int ship_claim__claimant(const char *dir, char *buf, size_t len);
/*
 * Claim JOB's file ID for C: 1 it is C's to send, 0 another claimant holds it (C->holder
 * says whom; C's claim dropped), or ch_server__run's errors.
 */
int ship_claim__take(struct ch_server *s, const char *job, const char *id, struct ship_claim *c);
/* Drop C's claims of JOB's file ID (once its ledger row is written): 0 or run's errors. */
int ship_claim__drop(struct ch_server *s, const char *job, const char *id,
		     const struct ship_claim *c);

#endif /* BPFSIGHT_SHIP_CLAIM_H */
