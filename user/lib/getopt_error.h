/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What every command says when getopt_long refuses an argument: one line, the option
 * misspelled and the one meant ("did you mean --format?"), a missing value, an ambiguous
 * abbreviation, instead of getopt's words followed by the whole --help.
 */
#ifndef BPFSIGHT_GETOPT_ERROR_H
#define BPFSIGHT_GETOPT_ERROR_H

#include <getopt.h>

/*
 * Call with opterr = 0, when getopt_long(ARGC, ARGV, SHORTS, LONGS) returned '?': prints
 * "bpfsight CMD: ..." on stderr, ending with where the options are listed.
 */
void getopt_error__print(const char *cmd, int argc, char **argv, const char *shorts,
			 const struct option *longs);
/* The long option LONGS names closest to NAME (a typo's distance), or NULL. */
const char *getopt_error__closest(const char *name, const struct option *longs);
/* The same among WORDS (NULL-terminated): a family, a command. */
const char *getopt_error__closest_word(const char *name, const char *const *words);

#endif /* BPFSIGHT_GETOPT_ERROR_H */
