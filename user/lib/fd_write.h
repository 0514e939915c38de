/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Writing a whole buffer to a file descriptor. */
#ifndef BPFSIGHT_FD_WRITE_H
#define BPFSIGHT_FD_WRITE_H

#include <stddef.h>

/*
 * All N bytes of BUF to FD, write after write (a pipe or a terminal may take part of it; a
 * signal may interrupt it): 0, or -errno (-EIO when a write took nothing). Only write(2):
 * fine in a signal handler.
 */
int fd__write_all(int fd, const void *buf, size_t n);

#endif /* BPFSIGHT_FD_WRITE_H */
