/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * nsys profile's command line, read by bpfsight (docs/USAGE.md, "Coming from nsys"): a user
 * who replaces `nsys profile` with `bpfsight profile` (or `bpfsight record`) keeps the
 * options they pass. Before record parses its options, the ones spelled as nsys spells them
 * are rewritten into bpfsight's (-s cpu: the cpu family; --cudabacktrace: --stacks=cuda;
 * -f true: --force; ...), one line on stderr for each that bpfsight does differently; an
 * nsys option bpfsight has no equivalent for is an error that names it. An option's value
 * is never taken for the command (-f true, -x true, -w true).
 *
 * `profile` reads the line as nsys does: its -t names mean nsys's (cuda: the API calls and
 * the GPU work, which are bpfsight's cuda and gpu families), and its defaults are nsys's
 * (CPU sampling and context switches of the process tree: the cpu and sched families;
 * -t cuda,nvtx,osrt without -t; -o NAME gets ".bst" without an extension). `record` keeps its
 * own meaning of -t and its defaults, and takes nsys's other options.
 */
#ifndef BPFSIGHT_NSYS_ARGS_H
#define BPFSIGHT_NSYS_ARGS_H

struct nsys_args {
	int argc;
	char **argv;  /* the rewritten command line: argv[0], bpfsight's options, CMD... */
	char **owned; /* the strings made for it, freed with it */
	int nowned;
	/* What nsys does once the file is written, bpfsight too (profile and record). */
	int stats;	   /* --stats=true: the reports, printed */
	int export_sqlite; /* --export=sqlite: FILE's stem + .sqlite beside it */
};

/*
 * Rewrite ARGV (record's: argv[0] is "record" or "profile") into N. PROFILE: nsys's meaning of
 * -t and its defaults. 0, or 1 after saying what is wrong (an exit status).
 */
int nsys_args__rewrite(struct nsys_args *n, const char *cmd, int profile, int argc, char **argv);
void nsys_args__free(struct nsys_args *n);
/*
 * nsys's -t name NAME: 1 with *OURS what bpfsight records for it (a list of families,
 * "cuda,gpu"; "" for none; NULL when nsys traces it and bpfsight has no family for it), 0 when
 * nsys has no such name. The families say their names (struct family_record.nsys_trace):
 * `profile` reads -t through it, and record's -t (record_args.h) takes the names it does not
 * have itself from it. *OURS stays valid until the next call.
 */
int nsys_args__trace(const char *name, const char **ours);

#endif /* BPFSIGHT_NSYS_ARGS_H */
