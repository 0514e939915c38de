// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * One parse of the kernel's BTF per process. libbpf 1.1 reads and parses
 * /sys/kernel/btf/vmlinux again for every object it loads (bpf_object__load_vmlinux_btf) and
 * frees it when the load ends; a recording loads a dozen objects. bpfsight's static link wraps
 * both calls (the Makefile's BTF_WRAP): the first parse is kept for the life of the process
 * and libbpf's frees of it are skipped. libbpf only reads it (CO-RE candidates, attach
 * targets, the base of module BTFs), as does kernel_features.c.
 *
 * Linked into bpfsight only: the unit tests and fuzzers link libbpf.so, whose calls between
 * its own files no link can wrap.
 */
#include <errno.h>
#include <pthread.h>
#include <bpf/btf.h>

struct btf *__real_btf__load_vmlinux_btf(void);
void __real_btf__free(struct btf *btf);
struct btf *__wrap_btf__load_vmlinux_btf(void);
void __wrap_btf__free(struct btf *btf);

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static struct btf *shared;

struct btf *__wrap_btf__load_vmlinux_btf(void)
{
	struct btf *btf;
	int err = 0;

	pthread_mutex_lock(&shared_lock);
	/* A failed parse is not kept: the next caller tries again and sees its errno. */
	if (!shared) {
		btf = __real_btf__load_vmlinux_btf();
		err = errno;
		__atomic_store_n(&shared, btf, __ATOMIC_RELEASE);
	}
	btf = shared;
	pthread_mutex_unlock(&shared_lock);
	if (!btf)
		errno = err;
	return btf;
}

void __wrap_btf__free(struct btf *btf)
{
	if (btf && btf == __atomic_load_n(&shared, __ATOMIC_ACQUIRE))
		return;
	__real_btf__free(btf);
}
