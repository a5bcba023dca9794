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
