/* kernels_portable.c -- the portable C twins of the NASM kernels: same signatures, same
 * contracts, same results.  They build everywhere and are what runs where nasm or AVX2 is
 * missing; the tests run them side by side with the asm. */
#include <string.h>

#include "kernels.h"

size_t mnemo_pairscan_c(const uint16_t *tok, size_t n, uint32_t a, uint32_t b,
                        int64_t *out, size_t cap) {
    size_t hits = 0;
    if (n < 2 || cap == 0) return 0;
    a &= 0xffff;
    b &= 0xffff;
    for (size_t i = 0; i + 1 < n; i++) {
        if (tok[i] == a && tok[i + 1] == b) {
            out[hits++] = (int64_t)i;
            if (hits == cap) break;
        }
    }
    return hits;
}

static uint64_t load8(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

int mnemo_memeq_c(const uint8_t *a, const uint8_t *b, size_t n, size_t room) {
    if (n >= 8) {
        size_t last = n - 8, i = 0;
        for (; i < last; i += 8)
            if (load8(a + i) != load8(b + i)) return 0;
        return load8(a + last) == load8(b + last);
    }
    if (n == 0) return 1;
    if (room >= 8 - n) {
        /* The 8 bytes that end where the range ends; on a little-endian machine the 8 - n
         * bytes before the range are the low bits, so shift RIGHT to drop them (see
         * memeq_avx2.asm for the bug that shifting left was).  On a big-endian machine they
         * are the high bits, so shift left there. */
        uint64_t x = load8(a + n - 8) ^ load8(b + n - 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        return (x << (8 * (8 - n))) == 0;
#else
        return (x >> (8 * (8 - n))) == 0;
#endif
    }
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

void mnemo_classmask_c(const uint8_t *text, size_t n, const uint8_t *table, uint64_t *out) {
    for (size_t base = 0; base < n; base += 64, out += 8) {
        uint64_t m[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        size_t len = n - base < 64 ? n - base : 64;
        for (size_t j = 0; j < len; j++) {
            unsigned props = table[text[base + j]];
            for (int p = 0; p < 8; p++) m[p] |= (uint64_t)((props >> p) & 1u) << j;
        }
        memcpy(out, m, sizeof m);
    }
}
