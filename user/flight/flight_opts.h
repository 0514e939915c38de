/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The flight recorder's options (`--flight-recorder`, `--trigger`, ...), parsed here so
 * every subcommand that keeps a flight recorder (record, monitor) takes the same ones.
 */
#ifndef BPFSIGHT_FLIGHT_OPTS_H
#define BPFSIGHT_FLIGHT_OPTS_H

#include <getopt.h>
#include <linux/types.h>

#define FLIGHT_MAX_TRIGGERS	   16
#define FLIGHT_DEFAULT_SIZE	   (256ull << 20)
#define FLIGHT_DEFAULT_COOLDOWN_NS (10 * 1000000000ull)
#define FLIGHT_DEFAULT_MAX_DUMPS   10
#define FLIGHT_MIN_SIZE		   (1ull << 20)	      /* about one chunk of compressed records */
#define FLIGHT_HANG_MIN_NS	   (100 * 1000000ull) /* the hang trigger looks every 100 ms */

/*
 * --trigger=FAMILY:NAME>DUR: an event of FAMILY named NAME ("*": any) lasting over DUR; or
 * FAMILY:NAME, a trigger FAMILY offers (struct family_trigger): every record of its type.
 * (--trigger hang:DUR is no family's: flight_opts.hang_ns.)
 */
struct flight_trigger {
	int family;	  /* index in families[] */
	char name[64];	  /* the event's name or kind; "*" = any */
	__u64 min_dur_ns; /* fires when the event's duration is > this */
	__u16 type;	  /* a family's own trigger: every record of this type; 0: by name */
	const char *text; /* as given, for messages and the dump's options */
	/* @WHO: only a process's events: its pid, else its name (comm); neither: anyone's */
	__u32 pid;
	char comm[16];
};

struct flight_opts {
	__u64 window_ns; /* --flight-recorder DUR; 0 = no flight recorder */
	/*
	 * ,SIZE: memory for the window (compressed chunks + metadata). On top, whatever SIZE
	 * and the rate: the writer's open chunk and zstd (~4 MiB), and while a dump is written
	 * its writer and the cut of its first chunk (~5 MiB): docs/PRODUCTION.md.
	 */
	__u64 size_bytes;
	__u64 after_ns;	   /* --trigger-after: keep recording this long before writing */
	__u64 cooldown_ns; /* --trigger-cooldown: no new dump this long after one is written */
	__u32 max_dumps;   /* --max-dumps: 0 = no limit */
	__u32 ntriggers;
	struct flight_trigger triggers[FLIGHT_MAX_TRIGGERS];
	/*
	 * --trigger hang:DUR: a process of the job made no progress for DUR (a call entered and
	 * not left, no step ended): flight_hang.h. 0 = none.
	 */
	__u64 hang_ns;
	const char *hang_text; /* as given */
	const char *text;      /* --flight-recorder as given */
};

/* Which option flight_opts__parse takes (record_options.c lists them for record and monitor). */
enum {
	OPT_FLIGHT = 0x400,
	OPT_FLIGHT_TRIGGER,
	OPT_FLIGHT_AFTER,
	OPT_FLIGHT_COOLDOWN,
	OPT_FLIGHT_MAX_DUMPS,
};

/* Defaults (no flight recorder until --flight-recorder). */
void flight_opts__init(struct flight_opts *fo);
/*
 * Take option OPT (one of OPT_FLIGHT*) with ARG. Returns 1 when OPT is not a flight option,
 * 0 when taken, -EINVAL after printing what is wrong (prefixed with CMD).
 */
int flight_opts__parse(struct flight_opts *fo, int opt, const char *arg, const char *cmd);
/* After every option: the combination makes sense (triggers need the recorder...). */
int flight_opts__check(const struct flight_opts *fo, const char *cmd);
/* "fr.bst" -> "fr-N.bst" (the stem of OUTPUT, N): snprintf's return. */
int flight_opts__dump_path(const char *output, __u32 n, char *buf, size_t len);

#endif /* BPFSIGHT_FLIGHT_OPTS_H */
