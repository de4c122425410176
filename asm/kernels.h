/* kernels.h -- the kernel signatures shared by the NASM objects, the portable C twins and
 * the shim.  Every kernel takes pointers and lengths, follows the System V C calling
 * convention and allocates nothing.  See the .asm files for the exact contracts. */
#ifndef MNEMO_KERNELS_H
#define MNEMO_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* Every i in [0, n-1) with tok[i] == a && tok[i+1] == b, in increasing order, written to
 * out[0..cap).  Returns the number written; stops early when it reaches cap. */
typedef size_t (*mnemo_pairscan_fn)(const uint16_t *tok, size_t n, uint32_t a, uint32_t b,
                                    int64_t *out, size_t cap);

/* 1 if a[0..n) == b[0..n), else 0.  `room` is how many bytes may be read just before a and
 * before b (used by short ranges; see memeq_avx2.asm). */
typedef int (*mnemo_memeq_fn)(const uint8_t *a, const uint8_t *b, size_t n, size_t room);

/* Per 64-byte block k of text[0..n): out[8k + p] bit j = bit p of table[text[64k + j]], for the
 * ceil(n / 64) blocks; bits past n in the last block are 0.  table has 256 entries. */
typedef void (*mnemo_classmask_fn)(const uint8_t *text, size_t n, const uint8_t *table,
                                   uint64_t *out);

size_t mnemo_pairscan_c(const uint16_t *tok, size_t n, uint32_t a, uint32_t b,
                        int64_t *out, size_t cap);
int mnemo_memeq_c(const uint8_t *a, const uint8_t *b, size_t n, size_t room);
void mnemo_classmask_c(const uint8_t *text, size_t n, const uint8_t *table, uint64_t *out);

#ifdef MNEMO_HAVE_ASM
size_t mnemo_pairscan_avx2(const uint16_t *tok, size_t n, uint32_t a, uint32_t b,
                           int64_t *out, size_t cap);
int mnemo_memeq_avx2(const uint8_t *a, const uint8_t *b, size_t n, size_t room);
void mnemo_classmask_avx2(const uint8_t *text, size_t n, const uint8_t *table, uint64_t *out);
#endif

#endif
