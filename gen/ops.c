/* ops.c - op_table: the rows of ops.h as data, for the stages that read them. */
#include <math.h>
#include <stddef.h>

#include "internal.h"

#define NO_MATH NULL, NULL, NULL, false, NULL, NULL, false
#define MATH(name, transcendental) #name, name, name##f, transcendental, NULL, NULL, false
#define MATH2(name, transcendental) #name, NULL, NULL, transcendental, name, name##f, false
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
