/* ops.c - op_table: the rows of ops.h as data, for the stages that read them. */
#include <math.h>
#include <stddef.h>

#include "internal.h"

#define NO_MATH NULL, NULL, NULL, false
#define MATH(name, transcendental) #name, name, name##f, transcendental
#define OP(id, symbol, word, call, params, arity, rule, math, tile) \
    {symbol, word, call, params, arity, rule, math, tile},

const op_info op_table[OP_COUNT] = {
#include "ops.h"
};

#undef OP
#undef MATH
#undef NO_MATH
