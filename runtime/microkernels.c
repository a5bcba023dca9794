/* microkernels.c - the per-element work of long inner runs, compiled by gcc
 * with optimisation and vectorisation, called by tcc-compiled kernels.
 *
 * tcc compiles the specialised outer structure of a kernel in well under a
 * millisecond but does not vectorise; gen/emit.c therefore hands each long
 * contiguous inner run (in tiles, see emit.c) to these functions, one call
 * per operation per tile, and gen/jit.c gives tcc their addresses.  Every
 * function exists in an AVX2 clone and a baseline x86-64 clone
 * (target_clones): the loader picks one by the CPU at run time.
 *
 * The call ABI is kept plain so that tcc's SysV calls need nothing special:
 *
 *   binary   void bcg_mk_OP_T(T *out, const T *a, long sa, const T *b, long sb, long n)
 *   compare  void bcg_mk_OP_T(u8 *out, const T *a, long sa, const T *b, long sb, long n)
 *   where    void bcg_mk_where_T(T *out, const u8 *c, long sc, const T *a, long sa,
 *                                const T *b, long sb, long n)
 *   unary    void bcg_mk_OP_T(T *out, const T *a, long sa, long n)
 *
 * `out` is contiguous; each input has a stride in elements: 1 (contiguous),
 * 0 (one value for the whole run) or anything else (strided).  Each
 * function branches once on the strides to a loop gcc vectorises.  `out`
 * may be exactly one of the inputs (in-place kernels, or a temporary
 * reused), never a partial overlap.
 *
 * Results are those of docs/semantics.md, bit for bit the straight-line
 * code's: integer arithmetic wraps (computed in the unsigned type),
 * minimum/maximum propagate NaN and return B when equal, comparisons give 0
 * or 1, `where` takes any non-zero condition byte as true.  IEEE + - * /,
 * sqrt, floor and ceil are correctly rounded whether vectorised or not; the
 * other functions (exp, log, sin, cos, tanh) call the C library per element,
 * so they return exactly what libm returns to the straight-line code.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "../gen/internal.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CLONES
#endif

/* ---- the loop shapes ------------------------------------------------------ */

/* out[i] = EXPR(x, y) over the four stride cases of two inputs. */
#define BINARY(NAME, T, OUT_T, EXPR)                                                        \
    CLONES void bcg_mk_##NAME(OUT_T *out, const T *a, long sa, const T *b, long sb, long n) \
    {                                                                                       \
        if (sa == 1 && sb == 1) {                                                           \
            for (long i = 0; i < n; i++) {                                                  \
                T x = a[i], y = b[i];                                                       \
                out[i] = (OUT_T)(EXPR);                                                     \
            }                                                                               \
        } else if (sa == 1 && sb == 0) {                                                    \
            const T y = b[0];                                                               \
            for (long i = 0; i < n; i++) {                                                  \
                T x = a[i];                                                                 \
                out[i] = (OUT_T)(EXPR);                                                     \
            }                                                                               \
        } else if (sa == 0 && sb == 1) {                                                    \
            const T x = a[0];                                                               \
            for (long i = 0; i < n; i++) {                                                  \
                T y = b[i];                                                                 \
                out[i] = (OUT_T)(EXPR);                                                     \
            }                                                                               \
        } else {                                                                            \
            for (long i = 0; i < n; i++) {                                                  \
                T x = a[i * sa], y = b[i * sb];                                             \
                out[i] = (OUT_T)(EXPR);                                                     \
            }                                                                               \
        }                                                                                   \
    }

#define UNARY(NAME, T, EXPR)                                              \
    CLONES void bcg_mk_##NAME(T *out, const T *a, long sa, long n)        \
    {                                                                     \
        if (sa == 1) {                                                    \
            for (long i = 0; i < n; i++) {                                \
                T x = a[i];                                               \
                out[i] = (T)(EXPR);                                       \
            }                                                             \
        } else {                                                          \
            for (long i = 0; i < n; i++) {                                \
                T x = a[i * sa];                                          \
                out[i] = (T)(EXPR);                                       \
            }                                                             \
        }                                                                 \
    }

/* The condition is read as bytes; the common case is a contiguous
 * comparison result with both values contiguous or one a scalar. */
#define WHERE(SUFFIX, T)                                                                      \
    CLONES void bcg_mk_where_##SUFFIX(T *out, const uint8_t *c, long sc, const T *a, long sa, \
                                      const T *b, long sb, long n)                            \
    {                                                                                         \
        if (sc == 1 && sa == 1 && sb == 1) {                                                  \
            for (long i = 0; i < n; i++)                                                      \
                out[i] = c[i] != 0 ? a[i] : b[i];                                             \
        } else if (sc == 1 && sa == 1 && sb == 0) {                                           \
            const T y = b[0];                                                                 \
            for (long i = 0; i < n; i++)                                                      \
                out[i] = c[i] != 0 ? a[i] : y;                                                \
        } else if (sc == 1 && sa == 0 && sb == 1) {                                           \
            const T x = a[0];                                                                 \
            for (long i = 0; i < n; i++)                                                      \
                out[i] = c[i] != 0 ? x : b[i];                                                \
        } else {                                                                              \
            for (long i = 0; i < n; i++)                                                      \
                out[i] = c[i * sc] != 0 ? a[i * sa] : b[i * sb];                              \
        }                                                                                     \
    }

/* ---- the operations per dtype --------------------------------------------------- */

/* The integer types: + - * minimum maximum, the six comparisons, where,
 * negation.  U is the unsigned type the arithmetic wraps in. */
#define COMMON(SUFFIX, T, U)                                                        \
    BINARY(add_##SUFFIX, T, T, (U)x + (U)y)                                         \
    BINARY(sub_##SUFFIX, T, T, (U)x - (U)y)                                         \
    BINARY(mul_##SUFFIX, T, T, (U)x * (U)y)                                         \
    BINARY(minimum_##SUFFIX, T, T, x < y ? x : y)                                   \
    BINARY(maximum_##SUFFIX, T, T, x > y ? x : y)                                   \
    BINARY(eq_##SUFFIX, T, uint8_t, x == y)                                         \
    BINARY(ne_##SUFFIX, T, uint8_t, x != y)                                         \
    BINARY(lt_##SUFFIX, T, uint8_t, x < y)                                          \
    BINARY(le_##SUFFIX, T, uint8_t, x <= y)                                         \
    BINARY(gt_##SUFFIX, T, uint8_t, x > y)                                          \
    BINARY(ge_##SUFFIX, T, uint8_t, x >= y)                                         \
    WHERE(SUFFIX, T)                                                                \
    UNARY(neg_##SUFFIX, T, (U)0 - (U)x)

#define INTEGER(SUFFIX, T, U)                 \
    COMMON(SUFFIX, T, U)                      \
    BINARY(bitand_##SUFFIX, T, T, x & y)      \
    BINARY(bitor_##SUFFIX, T, T, x | y)       \
    BINARY(bitxor_##SUFFIX, T, T, x ^ y)

/* Negation of a float is a sign flip (-x), not 0 - x (which gives +0 for +0). */
#define FLOAT(SUFFIX, T, F)                          \
    BINARY(add_##SUFFIX, T, T, x + y)                \
    BINARY(sub_##SUFFIX, T, T, x - y)                \
    BINARY(mul_##SUFFIX, T, T, x * y)                \
    BINARY(div_##SUFFIX, T, T, x / y)                \
    BINARY(minimum_##SUFFIX, T, T, (x < y || x != x) ? x : y) \
    BINARY(maximum_##SUFFIX, T, T, (x > y || x != x) ? x : y) \
    BINARY(eq_##SUFFIX, T, uint8_t, x == y)          \
    BINARY(ne_##SUFFIX, T, uint8_t, x != y)          \
    BINARY(lt_##SUFFIX, T, uint8_t, x < y)           \
    BINARY(le_##SUFFIX, T, uint8_t, x <= y)          \
    BINARY(gt_##SUFFIX, T, uint8_t, x > y)           \
    BINARY(ge_##SUFFIX, T, uint8_t, x >= y)          \
    WHERE(SUFFIX, T)                                 \
    UNARY(neg_##SUFFIX, T, -x)                       \
    UNARY(abs_##SUFFIX, T, fabs##F(x))               \
    UNARY(sqrt_##SUFFIX, T, sqrt##F(x))              \
    UNARY(floor_##SUFFIX, T, floor##F(x))            \
    UNARY(ceil_##SUFFIX, T, ceil##F(x))              \
    UNARY(exp_##SUFFIX, T, exp##F(x))                \
    UNARY(log_##SUFFIX, T, log##F(x))                \
    UNARY(sin_##SUFFIX, T, sin##F(x))                \
    UNARY(cos_##SUFFIX, T, cos##F(x))                \
    UNARY(tanh_##SUFFIX, T, tanh##F(x))

/* The integer types wrap in unsigned int at least (C promotes narrower
 * operands to int, where a product could overflow). */
INTEGER(i8, int8_t, unsigned int)
INTEGER(i16, int16_t, unsigned int)
INTEGER(i32, int32_t, uint32_t)
INTEGER(i64, int64_t, uint64_t)
INTEGER(u8, uint8_t, unsigned int)
INTEGER(u16, uint16_t, unsigned int)
INTEGER(u32, uint32_t, uint32_t)
INTEGER(u64, uint64_t, uint64_t)
FLOAT(f32, float, f)
FLOAT(f64, double, )

/* ---- the symbol table jit.c hands to tcc ------------------------------------------ */

#define ENTRY(NAME) {"bcg_mk_" #NAME, (const void *)bcg_mk_##NAME},
#define COMMON_ENTRIES(S)                                                                  \
    ENTRY(add_##S) ENTRY(sub_##S) ENTRY(mul_##S) ENTRY(minimum_##S) ENTRY(maximum_##S)    \
    ENTRY(eq_##S) ENTRY(ne_##S) ENTRY(lt_##S) ENTRY(le_##S) ENTRY(gt_##S) ENTRY(ge_##S)   \
    ENTRY(where_##S) ENTRY(neg_##S)
#define INTEGER_ENTRIES(S) COMMON_ENTRIES(S) ENTRY(bitand_##S) ENTRY(bitor_##S) ENTRY(bitxor_##S)
#define FLOAT_ENTRIES(S)                                                                  \
    COMMON_ENTRIES(S) ENTRY(div_##S) ENTRY(abs_##S) ENTRY(sqrt_##S) ENTRY(floor_##S)      \
    ENTRY(ceil_##S) ENTRY(exp_##S) ENTRY(log_##S) ENTRY(sin_##S) ENTRY(cos_##S)           \
    ENTRY(tanh_##S)

const microkernel_symbol microkernel_symbols[] = {
    INTEGER_ENTRIES(i8) INTEGER_ENTRIES(i16) INTEGER_ENTRIES(i32) INTEGER_ENTRIES(i64)
    INTEGER_ENTRIES(u8) INTEGER_ENTRIES(u16) INTEGER_ENTRIES(u32) INTEGER_ENTRIES(u64)
    FLOAT_ENTRIES(f32) FLOAT_ENTRIES(f64)
};
const int microkernel_symbol_count =
    (int)(sizeof microkernel_symbols / sizeof microkernel_symbols[0]);

bool microkernel_exists(const char *name)
{
    for (int i = 0; i < microkernel_symbol_count; i++)
        if (strcmp(microkernel_symbols[i].name, name) == 0)
            return true;
    return false;
}
