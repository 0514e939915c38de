/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What bpfsight writes under sudo belongs to the user who ran sudo (SUDO_UID:SUDO_GID), as
 * the files a user makes are theirs: `sudo bpfsight record -o run.bst` then `bpfsight info
 * run.bst` works. Root run from a root shell (no SUDO_UID, or SUDO_UID=0) keeps its files.
 * Modes stay as made (0600 for traces): the file is private to that user.
 */
#ifndef BPFSIGHT_SUDO_OWNER_H
#define BPFSIGHT_SUDO_OWNER_H

/* FD's file given to the user who ran sudo; nothing when not under sudo. Best effort. */
void sudo_owner__give_fd(int fd);

/* PATH (a file or a directory, never followed when a link) given the same way. */
void sudo_owner__give_path(const char *path);

#endif /* BPFSIGHT_SUDO_OWNER_H */
