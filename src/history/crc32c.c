/* crc32c.c - CRC32C (Castagnoli, reflected polynomial 0x82F63B78).
 *
 * Two implementations that must agree bit for bit: slicing-by-8 tables in
 * plain C, and the SSE4.2 crc32 instruction when the CPU has it (chosen once,
 * at the first call).  The tests compare them on every length and alignment
 * they can think of, so the table code stays exercised on machines that never
 * run it for real. */
#include "log.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define CRC_HAVE_X86 1
#endif

#define CRC_POLY 0x82F63B78u

/* crc_table[k][b]: the CRC of byte b followed by k zero bytes.  Filled once
 * under crc_once; read-only afterwards. */
static uint32_t crc_table[8][256];
static bool crc_hw;
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
	for (uint32_t b = 0; b < 256; b++) {
		uint32_t c = b;

		for (int i = 0; i < 8; i++)
			c = (c & 1) ? (c >> 1) ^ CRC_POLY : c >> 1;
		crc_table[0][b] = c;
	}
	for (uint32_t b = 0; b < 256; b++)
		for (int k = 1; k < 8; k++)
			crc_table[k][b] = (crc_table[k - 1][b] >> 8) ^
					  crc_table[0][crc_table[k - 1][b] & 0xff];
#ifdef CRC_HAVE_X86
	crc_hw = __builtin_cpu_supports("sse4.2");
#endif
}

static inline uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* c is the running, already inverted CRC. */
static uint32_t crc_sw(uint32_t c, const unsigned char *p, size_t n)
{
	while (n > 0 && ((uintptr_t)p & 7) != 0) {
		c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xff];
		n--;
	}
	while (n >= 8) {
		uint32_t lo = c ^ le32(p), hi = le32(p + 4);

		c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		    crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		    crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
		    crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
		p += 8;
		n -= 8;
	}
	while (n-- > 0)
		c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xff];
	return c;
}

#ifdef CRC_HAVE_X86
/* One stream of crc32q: about 8 bytes per 3 cycles, far past what the log
 * asks (records are written, not checksummed, at disk speed).  The
 * instruction folds little-endian words, as the tables do. */
__attribute__((target("sse4.2")))
static uint32_t crc_x86(uint32_t c, const unsigned char *p, size_t n)
{
	uint64_t c64;

	while (n > 0 && ((uintptr_t)p & 7) != 0) {
		c = _mm_crc32_u8(c, *p++);
		n--;
	}
	c64 = c;
	while (n >= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		c64 = _mm_crc32_u64(c64, w);
		p += 8;
		n -= 8;
	}
	c = (uint32_t)c64;
	while (n-- > 0)
		c = _mm_crc32_u8(c, *p++);
	return c;
}
#endif

uint32_t hist_crc32c(uint32_t crc, const void *p, size_t n)
{
	pthread_once(&crc_once, crc_init);
#ifdef CRC_HAVE_X86
	if (crc_hw)
		return ~crc_x86(~crc, p, n);
#endif
	return ~crc_sw(~crc, p, n);
}

uint32_t hist_crc32c_sw(uint32_t crc, const void *p, size_t n)
{
	pthread_once(&crc_once, crc_init);
	return ~crc_sw(~crc, p, n);
}

bool hist_crc32c_hw(void)
{
	pthread_once(&crc_once, crc_init);
	return crc_hw;
}
