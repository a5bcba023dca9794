/* half.h - portable conversions between float/double and the two 16-bit
 * float formats, float16 (IEEE binary16, NumPy's float16) and bfloat16,
 * shared by the generator (gen/eval.c, gen/type.c, gen/npy.c, the public
 * bcg_f16_* functions in gen/dtype.c) and the runtime's scalar paths
 * (runtime/microkernels.c).  The emitted kernels carry the same algorithms
 * as C text (templates/ops.c.tmpl, the half_* helpers); the differential
 * tests hold the copies to each other and to NumPy.
 *
 * Every narrowing rounds to nearest, ties to even, with subnormals, and
 * overflows to infinity.  NaNs stay NaNs with their sign, made quiet, with
 * the top payload bits kept: what x86's F16C instructions do, so the
 * vectorised and the scalar paths agree bit for bit.  Widening is exact
 * (float16 NaNs are made quiet, as F16C's vcvtph2ps does; bfloat16 widens
 * by a shift).  double to bfloat16 rounds through float (what PyTorch and
 * ml_dtypes do); double to float16 rounds once (NumPy's npy_double_to_half).
 * Everything is plain integer arithmetic on the bit patterns: no FPU mode
 * or compiler feature is assumed. */
#ifndef BCGEN_HALF_H
#define BCGEN_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t half_float_bits(float x)
{
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    return bits;
}

static inline float half_bits_float(uint32_t bits)
{
    float x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

static inline uint16_t half_from_float(float x)
{
    uint32_t f = half_float_bits(x);
    uint32_t sign = (f >> 16) & 0x8000u, a = f & 0x7fffffffu;
    if (a >= 0x7f800000u) /* inf, or NaN made quiet */
        return (uint16_t)(sign | (a > 0x7f800000u ? 0x7e00u | ((a >> 13) & 0x3ffu) : 0x7c00u));
    if (a >= 0x477ff000u) /* 65520 and above round to inf */
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x38800000u) { /* below 2^-14: a subnormal or zero */
        if (a <= 0x33000000u) /* up to 2^-25 (a tie, to the even 0) */
            return (uint16_t)sign;
        uint32_t exponent = a >> 23, mantissa = (a & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - exponent; /* 14 .. 23: the value in units of 2^-24 */
        uint32_t h = mantissa >> shift, rest = mantissa & ((1u << shift) - 1);
        uint32_t tie = 1u << (shift - 1);
        if (rest > tie || (rest == tie && (h & 1)))
            h++;
        return (uint16_t)(sign | h);
    }
    a -= 0x38000000u; /* rebias the exponent, 127 to 15 */
    a += 0xfffu + ((a >> 13) & 1u);
    return (uint16_t)(sign | (a >> 13));
}

static inline float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
    if (exponent == 31)
        return half_bits_float(sign | 0x7f800000u | (mantissa << 13) |
                               (mantissa ? 0x400000u : 0));
    if (exponent == 0) { /* zero or subnormal: mantissa * 2^-24, exact in float */
        float v = (float)mantissa * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return half_bits_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

static inline uint16_t half_from_double(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    uint32_t sign = (uint32_t)(b >> 48) & 0x8000u;
    uint64_t a = b & UINT64_C(0x7fffffffffffffff);
    if (a >= UINT64_C(0x7ff0000000000000))
        return (uint16_t)(sign | (a > UINT64_C(0x7ff0000000000000)
                                      ? 0x7e00u | (uint32_t)((a >> 42) & 0x3ffu) : 0x7c00u));
    if (a >= UINT64_C(0x40effe0000000000)) /* 65520 */
        return (uint16_t)(sign | 0x7c00u);
    if (a < UINT64_C(0x3f10000000000000)) { /* below 2^-14 */
        if (a <= UINT64_C(0x3e60000000000000)) /* up to 2^-25 */
            return (uint16_t)sign;
        uint64_t exponent = a >> 52;
        uint64_t mantissa = (a & UINT64_C(0xfffffffffffff)) | (UINT64_C(1) << 52);
        unsigned shift = (unsigned)(1051 - exponent); /* 43 .. 52 */
        uint64_t h = mantissa >> shift, rest = mantissa & ((UINT64_C(1) << shift) - 1);
        uint64_t tie = UINT64_C(1) << (shift - 1);
        if (rest > tie || (rest == tie && (h & 1)))
            h++;
        return (uint16_t)(sign | (uint32_t)h);
    }
    a -= UINT64_C(0x3f00000000000000); /* rebias, 1023 to 15 */
    a += (UINT64_C(1) << 41) - 1 + ((a >> 42) & 1);
    return (uint16_t)(sign | (uint32_t)(a >> 42));
}

static inline uint16_t bfloat_from_float(float x)
{
    uint32_t f = half_float_bits(x);
    if ((f & 0x7fffffffu) > 0x7f800000u) /* NaN made quiet */
        return (uint16_t)((f >> 16) | 0x40u);
    return (uint16_t)((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
}

static inline float bfloat_to_float(uint16_t h) { return half_bits_float((uint32_t)h << 16); }

#endif
