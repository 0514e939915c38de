/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which ClickHouse release a server is: asked once (`SELECT version()`) before bpfsight sends
 * it anything else, so that ship and --from say it (-v) and refuse a server older than the
 * oldest release bpfsight's SQL is tested on, and the schema is made with what the release
 * has (ch_schema.h). docs/CLICKHOUSE.md, "Versions tested".
 */
#ifndef BPFSIGHT_CH_VERSION_H
#define BPFSIGHT_CH_VERSION_H

/* The oldest release tested: Debian 12's clickhouse-server. */
#define CH_OLDEST_MAJOR 18
#define CH_OLDEST_MINOR 16
#define CH_OLDEST	"18.16"

struct ch_version {
	unsigned major, minor; /* 0.0: not asked yet */
	char text[32];	       /* as the server says it: "26.7.2.1" */
};

/* TEXT ("18.16.1", "26.7.2.1\n") into V: 0, or -EINVAL when it is no version. */
int ch_version__parse(const char *text, struct ch_version *v);
/* Is V MAJOR.MINOR or later? */
int ch_version__at_least(const struct ch_version *v, unsigned major, unsigned minor);

struct ch_server;
/*
 * S's version into S->version, asked once (later calls return at once): 0; -EPROTO when it
 * is older than CH_OLDEST or says no version (S->error says which, and what to do); or
 * ch_server__run's error. S->verbose: said on stderr ("ClickHouse 26.7.2.1 at HOST:PORT").
 * What sends the server anything asks it first (ship_send.h, ch_schema.h, stats --from).
 */
int ch_version__ask(struct ch_server *s);

#endif /* BPFSIGHT_CH_VERSION_H */
