// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Clock snapshots and the file header's TLVs (see trace_format.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>
#include "trace_format.h"
#include "trace_meta_io.h"

int trace_meta__has_family(const struct trace_meta *meta, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = meta ? meta->families : NULL; p && *p;
	     p += strcspn(p, ","), p += *p == ',')
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return 1;
	return 0;
}

const char *trace_meta__gpu_model(const char *gpus, char *buf, size_t len)
{
	const char *model = NULL;
	size_t mlen = 0;

	for (const char *p = gpus; p && *p; p += strcspn(p, "\n"), p += *p == '\n') {
		const char *m = p + strcspn(p, " \n"); /* "BUS MODEL" */
		size_t n;

		m += *m == ' ';
		n = strcspn(m, "\n");
		if (!n || (model && (n != mlen || strncmp(m, model, n))))
			return NULL;
		model = m;
		mlen = n;
	}
	if (!model || !len)
		return NULL;
	snprintf(buf, len, "%.*s", (int)mlen, model);
	return buf;
}

static __u64 clock_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts))
		return 0;
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/*
 * One clock read between two MONOTONIC reads, as the narrowest of a few brackets: a read
 * preempted between its brackets (a loaded machine: tens or hundreds of us) would put the
 * other clock that far from the MONOTONIC time it is paired with, and merge would take that
 * error for the hosts' clock offset. Returns ID's time; *MONO is the bracket's midpoint.
 */
#define CLOCK_BRACKETS 16

static __u64 bracketed(clockid_t id, __u64 *mono)
{
	__u64 best = ~0ull, at = 0;

	for (int i = 0; i < CLOCK_BRACKETS; i++) {
		__u64 m0 = clock_ns(CLOCK_MONOTONIC), t = clock_ns(id),
		      m1 = clock_ns(CLOCK_MONOTONIC);

		if (m1 - m0 < best) {
			best = m1 - m0;
			at = t;
			*mono = m0 + (m1 - m0) / 2;
		}
	}
	return at;
}

void trace_clocks__now(struct trace_clocks *c)
{
	__u64 mono_boot;

	c->realtime_ns = bracketed(CLOCK_REALTIME, &c->mono_ns);
	/* BOOTTIME - MONOTONIC moves only across a suspend: carried to the same instant. */
	c->boottime_ns = bracketed(CLOCK_BOOTTIME, &mono_boot) - (mono_boot - c->mono_ns);
}

struct tlv_text {
	__u16 key;
	size_t off; /* of the char * in struct trace_meta */
};

static const struct tlv_text tlv_texts[] = {
	{ BS_META_HOSTNAME, offsetof(struct trace_meta, hostname) },
	{ BS_META_KERNEL, offsetof(struct trace_meta, kernel) },
	{ BS_META_BOOT_ID, offsetof(struct trace_meta, boot_id) },
	{ BS_META_CMDLINE, offsetof(struct trace_meta, cmdline) },
	{ BS_META_FAMILIES, offsetof(struct trace_meta, families) },
	{ BS_META_TARGET, offsetof(struct trace_meta, target) },
	{ BS_META_VERSION, offsetof(struct trace_meta, tool_version) },
	{ BS_META_OPTIONS, offsetof(struct trace_meta, options) },
	{ BS_META_GPUS, offsetof(struct trace_meta, gpus) },
};

#define NTEXTS	   (sizeof(tlv_texts) / sizeof(tlv_texts[0]))
#define TLV_HDR	   8
#define CLOCKS_LEN 24

static char **text_field(struct trace_meta *m, size_t off)
{
	return (char **)((char *)m + off);
}

static size_t put_tlv(__u8 *p, __u16 key, const void *val, __u32 len)
{
	put_le16(p, key);
	put_le16(p + 2, 0);
	put_le32(p + 4, len);
	memcpy(p + TLV_HDR, val, len);
	return TLV_HDR + len;
}

int trace_meta__encode_header(const struct trace_meta *meta, __u8 **bufp, size_t *lenp)
{
	size_t meta_len = TLV_HDR + CLOCKS_LEN, slen[NTEXTS] = { 0 }, n, i;
	const char *s[NTEXTS] = { NULL };
	__u8 clocks[CLOCKS_LEN], *buf;

	for (i = 0; meta && i < NTEXTS; i++) {
		s[i] = *text_field((struct trace_meta *)meta, tlv_texts[i].off);
		slen[i] = s[i] ? strlen(s[i]) : 0;
		if (!slen[i])
			continue;
		meta_len += TLV_HDR + slen[i];
	}
	if (meta_len > BS_META_MAX)
		return -E2BIG;

	buf = malloc(BS_FILE_HDR_FIXED + meta_len + 4);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, BS_FILE_MAGIC, 8);
	put_le32(buf + 8, BS_FILE_VERSION);
	put_le32(buf + 12, (__u32)meta_len);
	n = BS_FILE_HDR_FIXED;
	for (i = 0; i < NTEXTS; i++)
		if (slen[i])
			n += put_tlv(buf + n, tlv_texts[i].key, s[i], (__u32)slen[i]);
	put_le64(clocks, meta ? meta->start.mono_ns : 0);
	put_le64(clocks + 8, meta ? meta->start.realtime_ns : 0);
	put_le64(clocks + 16, meta ? meta->start.boottime_ns : 0);
	n += put_tlv(buf + n, BS_META_CLOCKS, clocks, CLOCKS_LEN);
	put_le32(buf + n, (__u32)crc32(0, buf, (uInt)n));
	*bufp = buf;
	*lenp = n + 4;
	return 0;
}

int trace_meta__decode_tlvs(struct trace_meta *meta, const __u8 *buf, size_t len, char *err,
			    size_t errlen)
{
	size_t off = 0, i;

	while (off < len) {
		__u32 vlen;
		__u16 key;

		if (len - off < TLV_HDR) {
			snprintf(err, errlen, "corrupt file header (TLV header out of bounds)");
			return -EBADMSG;
		}
		key = get_le16(buf + off);
		vlen = get_le32(buf + off + 4);
		off += TLV_HDR;
		if (vlen > len - off) {
			snprintf(err, errlen, "corrupt file header (TLV %u longer than the header)",
				 key);
			return -EBADMSG;
		}
		if (key == BS_META_CLOCKS) {
			/* Later versions may append clocks; the first three keep their meaning. */
			if (vlen < CLOCKS_LEN) {
				snprintf(err, errlen, "corrupt file header (clocks TLV too short)");
				return -EBADMSG;
			}
			meta->start.mono_ns = get_le64(buf + off);
			meta->start.realtime_ns = get_le64(buf + off + 8);
			meta->start.boottime_ns = get_le64(buf + off + 16);
		}
		for (i = 0; i < NTEXTS; i++) {
			char **f = text_field(meta, tlv_texts[i].off);

			if (tlv_texts[i].key != key)
				continue;
			free(*f);
			*f = strndup((const char *)buf + off, vlen);
			if (!*f) {
				snprintf(err, errlen, "out of memory");
				return -ENOMEM;
			}
		}
		off += vlen;
	}
	return 0;
}

void trace_meta__clear(struct trace_meta *meta)
{
	size_t i;

	if (!meta)
		return;
	for (i = 0; i < NTEXTS; i++)
		free(*text_field(meta, tlv_texts[i].off));
	memset(meta, 0, sizeof(*meta));
}
