/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The NVIDIA GPUs of the machine, as the driver lists them in procfs: one directory per GPU
 * under /proc/driver/nvidia/gpus, named by its PCI address, whose "information" file says
 * "Model: \t\t NAME" and "Bus Location: \t 0000:18:00.0" (the driver's nv-procfs.c). A
 * recording keeps them in its header (BS_META_GPUS), so that a reader knows the GPU's peak.
 */
#ifndef BPFSIGHT_NV_GPUS_H
#define BPFSIGHT_NV_GPUS_H

#include <stddef.h>

#define NV_GPUS_DIR "/proc/driver/nvidia/gpus"

/*
 * Into BUF: a line "BUS MODEL" per GPU of DIR (NV_GPUS_DIR but in the tests), sorted by bus,
 * "\n" between them; "" when DIR is absent (no NVIDIA driver) or lists none. Returns the GPUs
 * written (those that fit in LEN).
 */
int nv_gpus__read(const char *dir, char *buf, size_t len);

/* An information file's text: its Model into MODEL and Bus Location into BUS; -EINVAL if absent. */
int nv_gpus__parse(const char *text, char *model, size_t model_len, char *bus, size_t bus_len);

#endif /* BPFSIGHT_NV_GPUS_H */
