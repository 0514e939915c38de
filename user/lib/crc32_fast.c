// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CRC-32 (IEEE 802.3, bit-reflected, as zlib) by folding (crc32_fast.h). The buffer is a
 * polynomial over GF(2): four 128-bit lanes are each carried 64 bytes on (multiplied by
 * x^n mod P for that distance: K1, K2) and xored into the next 64 bytes, until one lane
 * remains; it is folded 16 bytes at a time (K3, K4), reduced to 64 then 32 bits (K5), and
 * the last 32 bits taken modulo P by Barrett reduction (POLY, MU). All of it bit-reflected,
 * as zlib's CRC is, so no byte is swapped. The method and the meaning of its constants:
 * Gopal et al., "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ" (Intel, 2009).
 */
#include <zlib.h>
#include "crc32_fast.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define K1   0x154442bd4ull /* x^(4*128+32) mod P, reflected: 64 bytes on, low halves */
#define K2   0x1c6e41596ull /* x^(4*128-32) mod P: high halves */
#define K3   0x1751997d0ull /* x^(128+32) mod P: 16 bytes on, low halves */
#define K4   0x0ccaa009eull /* x^(128-32) mod P: high halves */
#define K5   0x163cd6124ull /* x^64 mod P: 64 bits to 32 */
#define POLY 0x1db710641ull /* P, reflected, with its x^32 term */
#define MU   0x1f7011641ull /* floor(x^64 / P), reflected: Barrett's quotient */

#define CLMUL __attribute__((target("pclmul,sse4.1")))

/* X carried on by K (its halves by K's halves), into NEXT. */
CLMUL static __m128i fold(__m128i x, __m128i k, __m128i next)
{
	return _mm_xor_si128(
		_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)),
		next);
}

static __m128i load(const unsigned char *p)
{
	return _mm_loadu_si128((const __m128i *)p);
}

/* The CRC register (not inverted) after LEN bytes of P; LEN >= 64, a multiple of 16. */
CLMUL static unsigned int folded(unsigned int crc, const unsigned char *p, size_t len)
{
	const __m128i k12 = _mm_set_epi64x((long long)K2, (long long)K1);
	const __m128i k34 = _mm_set_epi64x((long long)K4, (long long)K3);
	const __m128i k5 = _mm_set_epi64x(0, (long long)K5);
	const __m128i pmu = _mm_set_epi64x((long long)MU, (long long)POLY);
	const __m128i low32 = _mm_set_epi32(0, 0, 0, -1);
	__m128i x0 = _mm_xor_si128(load(p), _mm_cvtsi32_si128((int)crc)), x1 = load(p + 16),
		x2 = load(p + 32), x3 = load(p + 48), t;

	for (p += 64, len -= 64; len >= 64; p += 64, len -= 64) {
		x0 = fold(x0, k12, load(p));
		x1 = fold(x1, k12, load(p + 16));
		x2 = fold(x2, k12, load(p + 32));
		x3 = fold(x3, k12, load(p + 48));
	}
	x0 = fold(x0, k34, x1);
	x0 = fold(x0, k34, x2);
	x0 = fold(x0, k34, x3);
	for (; len >= 16; p += 16, len -= 16)
		x0 = fold(x0, k34, load(p));
	/* 128 bits to 64: the low half times K4, into the high half. */
	x0 = _mm_xor_si128(_mm_clmulepi64_si128(x0, k34, 0x10), _mm_srli_si128(x0, 8));
	/* 64 to 32: the low 32 bits times K5, into the rest. */
	t = _mm_srli_si128(x0, 4);
	x0 = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x0, low32), k5, 0x00), t);
	/* Barrett: the quotient's low 32 bits times P, taken off the value. */
	t = x0;
	x0 = _mm_clmulepi64_si128(_mm_and_si128(x0, low32), pmu, 0x10);
	x0 = _mm_clmulepi64_si128(_mm_and_si128(x0, low32), pmu, 0x00);
	return (unsigned int)_mm_extract_epi32(_mm_xor_si128(x0, t), 1);
}

unsigned int crc32_fast(unsigned int crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	size_t head = len & ~(size_t)15;

	if (len < 64 || !__builtin_cpu_supports("pclmul") || !__builtin_cpu_supports("sse4.1"))
		return (unsigned int)crc32_z(crc, p, len);
	/* zlib's value is the register inverted before and after. */
	crc = ~folded(~crc, p, head);
	return (unsigned int)crc32_z(crc, p + head, len - head);
}
#else
unsigned int crc32_fast(unsigned int crc, const void *buf, size_t len)
{
	return (unsigned int)crc32_z(crc, buf, len);
}
#endif
