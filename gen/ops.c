/* ops.c - op_table: the rows of ops.h as data, for the stages that read them. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"

/* A NaN made quiet (its quiet bit set, sign and payload kept: what widening
 * an f32 to double does), any other value as it is. */
static double quiet_f64(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    if (x != x)
        u |= (uint64_t)1 << 51;
    memcpy(&x, &u, sizeof u);
    return x;
}

static float quiet_f32(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if (x != x)
        u |= (uint32_t)1 << 22;
    memcpy(&x, &u, sizeof u);
    return x;
}

/* The C library's functions of two arguments (MATH2), called with their
 * NaN arguments made quiet: glibc's fmin, fmax and hypot tell a signaling
 * NaN from a quiet one (fminf(0, sNaN) is NaN where fminf(0, qNaN) is 0;
 * hypot(inf, sNaN) NaN where hypot(inf, qNaN) is inf), and the evaluator's
 * f32, f16 and bf16 values reach them quiet (widened to double) where the
 * JIT's came raw from memory: fmin(c, b) over a bf16 sNaN b and a bool c
 * gave NaN in the JIT and 0 in the evaluator (fuzz-diff, the wide
 * generator).  The evaluator, the JIT's libtcc code (jit.c hands it these
 * for fmin, fminf ...) and the microkernels (quiet_f32/f64 there) all call
 * them so: any NaN is ignored by fmin and fmax and loses to an infinity in
 * hypot, as docs/semantics.md says (NumPy's own fmin gives either: NaN
 * from its scalar loop, 0 from its vector one).  The emitted C calls the
 * C library's own.  Called through volatile pointers, as the microkernels
 * do: gcc expands a direct fmin inline, and its expansion gives the other
 * zero of -0.0 and +0.0 than glibc's (fmin(b, a), b f32 -0.0, a i32 0:
 * +0.0 in the JIT's microkernel, -0.0 here; fuzz-diff seed 9401). */
#define QUIET2(name)                                                                \
    static double (*volatile const libm2_##name)(double, double) = name;             \
    static float (*volatile const libm2_##name##f)(float, float) = name##f;          \
    static double quiet2_##name(double x, double y)                                  \
    {                                                                                \
        return libm2_##name(quiet_f64(x), quiet_f64(y));                             \
    }                                                                                \
    static float quiet2_##name##f(float x, float y)                                  \
    {                                                                                \
        return libm2_##name##f(quiet_f32(x), quiet_f32(y));                          \
    }
QUIET2(atan2)
QUIET2(hypot)
QUIET2(copysign)
QUIET2(nextafter)
QUIET2(fmod)
QUIET2(fmin)
QUIET2(fmax)
#undef QUIET2

#define NO_MATH NULL, NULL, NULL, false, NULL, NULL, false
#define MATH(name, transcendental) #name, name, name##f, transcendental, NULL, NULL, false
#define MATH2(name, transcendental) #name, NULL, NULL, transcendental, quiet2_##name, \
                                    quiet2_##name##f, false
#define OWN(transcendental) NULL, NULL, NULL, transcendental, NULL, NULL, true
#define OP(id, symbol, word, call, params, arity, rule, math, tile) \
    {symbol, word, call, params, arity, rule, math, tile},

const op_info op_table[OP_COUNT] = {
#include "ops.h"
};

#undef OP
#undef MATH2
#undef MATH
#undef NO_MATH
#undef OWN

bcg_dtype op_fixed_dtype(expr_op op)
{
    switch (op) {
    case OP_MUL_Q7: return BCG_I8;
    case OP_MUL_Q15: return BCG_I16;
    case OP_MUL_Q31: return BCG_I32;
    default: return BCG_DTYPE_COUNT;
    }
}

int op_fixed_fraction_bits(expr_op op)
{
    bcg_dtype t = op_fixed_dtype(op);
    return t == BCG_DTYPE_COUNT ? 0 : dtype_bits(t) - 1;
}
