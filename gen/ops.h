/* ops.h - every operator and function of bcgen's expressions, one row each.
 *
 * The one table for what must stay in step (QBE's ops.h is the model).  It
 * is an X-macro: each reader defines OP() to take the columns it needs and
 * includes this file.  internal.h makes the expr_op enum of it (so the rows
 * are in enum order), gen/ops.c the op_table that parse.c and type.c (names, the
 * parser's functions, typing and folding rules), eval.c (libm calls),
 * cexpr.c and kir.c (symbols, libm names, microkernel families) and jit.c (the
 * libm symbols it hands to libtcc) read.  tests/unit/test_ops.c checks that
 * every row has an implementation on every path: parsed, typed, folded,
 * evaluated, emitted as C (JIT, plain and AOT forms) and linked by the JIT.
 *
 * Adding a function: a row here (before OP_CAST, which stays last), its
 * meaning in eval.c when it has no libm column, a row in
 * docs/semantics.md, and its tests.
 *
 * OP(id, symbol, word, call, params, arity, rule, math, tile)
 *   id      the enumerator OP_<id>
 *   symbol  what expressions write for an operator and expr_format prints:
 *           "+", "sqrt"; error messages name operators by it
 *   word    what expr_dump prints: "add", "sqrt"
 *   call    the function name the parser knows (NumPy's spelling), or NULL
 *           for an operator written with its symbol
 *   params  the parameters a wrong argument count names ("x, y")
 *   arity   how many arguments
 *   rule    how type.c types it (op_rule, internal.h)
 *   math    MATH(name, transcendental) for a float function that the C
 *           library computes as name() in double and namef() in float
 *           (MATH2 for one of two arguments);
 *           transcendental: AOT's --math double computes it in double for
 *           f32 too (exact ones, floor or ceil, need not); OWN(transcendental)
 *           for a float function bcgen computes itself (a helper of
 *           templates/ops.c.tmpl, the same arithmetic in eval.c); NO_MATH
 *           otherwise
 *   tile    the runtime/microkernels.c family computing it over a tile
 *           ("add": bcg_mk_add_f32 ...), or NULL
 */
OP(OPERAND,  "operand", "operand",  NULL,      "",          0, RULE_LEAF,      NO_MATH,              NULL)
OP(LITERAL,  "literal", "literal",  NULL,      "",          0, RULE_LEAF,      NO_MATH,              NULL)
/* unary */
OP(NEG,      "-",       "neg",      NULL,      "",          1, RULE_SAME,      NO_MATH,              "neg")
OP(POS,      "+",       "pos",      NULL,      "",          1, RULE_SAME,      NO_MATH,             "pos")
OP(BITNOT,   "~",       "bitnot",   NULL,      "",          1, RULE_SAME,      NO_MATH,          "bitnot")
OP(NOT,      "!",       "not",      "logical_not", "x",      1, RULE_NOT,       NO_MATH,             "not")
/* binary, by rising precedence group */
OP(OR,       "||",      "or",       "logical_or", "x, y",    2, RULE_LOGICAL,   NO_MATH,              "or")
OP(AND,      "&&",      "and",      "logical_and", "x, y",   2, RULE_LOGICAL,   NO_MATH,             "and")
OP(EQ,       "==",      "eq",       NULL,      "",          2, RULE_COMPARE,   NO_MATH,              "eq")
OP(NE,       "!=",      "ne",       NULL,      "",          2, RULE_COMPARE,   NO_MATH,              "ne")
OP(LT,       "<",       "lt",       NULL,      "",          2, RULE_COMPARE,   NO_MATH,              "lt")
OP(LE,       "<=",      "le",       NULL,      "",          2, RULE_COMPARE,   NO_MATH,              "le")
OP(GT,       ">",       "gt",       NULL,      "",          2, RULE_COMPARE,   NO_MATH,              "gt")
OP(GE,       ">=",      "ge",       NULL,      "",          2, RULE_COMPARE,   NO_MATH,              "ge")
OP(BITOR,    "|",       "bitor",    NULL,      "",          2, RULE_PROMOTE,   NO_MATH,              "bitor")
OP(BITXOR,   "^",       "bitxor",   NULL,      "",          2, RULE_PROMOTE,   NO_MATH,              "bitxor")
OP(BITAND,   "&",       "bitand",   NULL,      "",          2, RULE_PROMOTE,   NO_MATH,              "bitand")
OP(SHL,      "<<",      "shl",      NULL,      "",          2, RULE_INTEGRAL,  NO_MATH,             "shl")
OP(SHR,      ">>",      "shr",      NULL,      "",          2, RULE_INTEGRAL,  NO_MATH,             "shr")
OP(ADD,      "+",       "add",      NULL,      "",          2, RULE_PROMOTE,   NO_MATH,              "add")
OP(SUB,      "-",       "sub",      NULL,      "",          2, RULE_PROMOTE,   NO_MATH,              "sub")
OP(MUL,      "*",       "mul",      NULL,      "",          2, RULE_PROMOTE,   NO_MATH,              "mul")
OP(DIV,      "/",       "div",      NULL,      "",          2, RULE_DIVIDE,    NO_MATH,              "div")
OP(FLOORDIV, "//",      "floordiv", NULL,      "",          2, RULE_INTEGRAL,  NO_MATH,        "floordiv")
OP(MOD,      "%",       "mod",      NULL,      "",          2, RULE_INTEGRAL,  NO_MATH,             "mod")
OP(POW,      "**",      "pow",      "pow",     "x, y",      2, RULE_INTEGRAL,  NO_MATH,             "pow")
/* functions (expr_format writes every row from here on as a call) */
OP(ABS,      "abs",     "abs",      "abs",     "x",         1, RULE_SAME,      NO_MATH,              "abs")
OP(SQRT,     "sqrt",    "sqrt",     "sqrt",    "x",         1, RULE_FLOAT,     MATH(sqrt, 1),        "sqrt")
OP(EXP,      "exp",     "exp",      "exp",     "x",         1, RULE_FLOAT,     MATH(exp, 1),         "exp")
OP(LOG,      "log",     "log",      "log",     "x",         1, RULE_FLOAT,     MATH(log, 1),         "log")
OP(SIN,      "sin",     "sin",      "sin",     "x",         1, RULE_FLOAT,     MATH(sin, 1),         "sin")
OP(COS,      "cos",     "cos",      "cos",     "x",         1, RULE_FLOAT,     MATH(cos, 1),         "cos")
OP(TANH,     "tanh",    "tanh",     "tanh",    "x",         1, RULE_FLOAT,     MATH(tanh, 1),        "tanh")
OP(FLOOR,    "floor",   "floor",    "floor",   "x",         1, RULE_FLOAT,     MATH(floor, 0),       "floor")
OP(CEIL,     "ceil",    "ceil",     "ceil",    "x",         1, RULE_FLOAT,     MATH(ceil, 0),        "ceil")
OP(LOG1P,    "log1p",   "log1p",    "log1p",   "x",         1, RULE_FLOAT,     MATH(log1p, 1),       "log1p")
OP(EXPM1,    "expm1",   "expm1",    "expm1",   "x",         1, RULE_FLOAT,     MATH(expm1, 1),       "expm1")
OP(LOG2,     "log2",    "log2",     "log2",    "x",         1, RULE_FLOAT,     MATH(log2, 1),        "log2")
OP(LOG10,    "log10",   "log10",    "log10",   "x",         1, RULE_FLOAT,     MATH(log10, 1),       "log10")
OP(EXP2,     "exp2",    "exp2",     "exp2",    "x",         1, RULE_FLOAT,     MATH(exp2, 1),        "exp2")
OP(CBRT,     "cbrt",    "cbrt",     "cbrt",    "x",         1, RULE_FLOAT,     MATH(cbrt, 1),      "cbrt")
OP(TAN,      "tan",     "tan",      "tan",     "x",         1, RULE_FLOAT,     MATH(tan, 1),         "tan")
OP(ARCSIN,   "arcsin",  "arcsin",   "arcsin",  "x",         1, RULE_FLOAT,     MATH(asin, 1),    "arcsin")
OP(ARCCOS,   "arccos",  "arccos",   "arccos",  "x",         1, RULE_FLOAT,     MATH(acos, 1),    "arccos")
OP(ARCTAN,   "arctan",  "arctan",   "arctan",  "x",         1, RULE_FLOAT,     MATH(atan, 1),        "arctan")
OP(SINH,     "sinh",    "sinh",     "sinh",    "x",         1, RULE_FLOAT,     MATH(sinh, 1),      "sinh")
OP(COSH,     "cosh",    "cosh",     "cosh",    "x",         1, RULE_FLOAT,     MATH(cosh, 1),      "cosh")
OP(ARCSINH,  "arcsinh", "arcsinh",  "arcsinh", "x",         1, RULE_FLOAT,     MATH(asinh, 1),  "arcsinh")
OP(ARCCOSH,  "arccosh", "arccosh",  "arccosh", "x",         1, RULE_FLOAT,     MATH(acosh, 1),  "arccosh")
OP(ARCTANH,  "arctanh", "arctanh",  "arctanh", "x",         1, RULE_FLOAT,     MATH(atanh, 1),  "arctanh")
OP(ERF,      "erf",     "erf",      "erf",     "x",         1, RULE_FLOAT,     MATH(erf, 1),         "erf")
OP(ERFC,     "erfc",    "erfc",     "erfc",    "x",         1, RULE_FLOAT,     MATH(erfc, 1),      "erfc")
OP(TRUNC,    "trunc",   "trunc",    "trunc",   "x",         1, RULE_FLOAT,     MATH(trunc, 0),    "trunc")
OP(RINT,     "rint",    "rint",     "rint",    "x",         1, RULE_FLOAT,     MATH(rint, 0),      "rint")
OP(ARCTAN2,  "arctan2", "arctan2",  "arctan2", "y, x",      2, RULE_FLOAT,     MATH2(atan2, 1), "arctan2")
OP(HYPOT,    "hypot",   "hypot",    "hypot",   "x, y",      2, RULE_FLOAT,     MATH2(hypot, 1),   "hypot")
OP(COPYSIGN, "copysign", "copysign", "copysign", "x, y",    2, RULE_FLOAT,     MATH2(copysign, 0),   "copysign")
OP(NEXTAFTER, "nextafter", "nextafter", "nextafter", "x, y", 2, RULE_FLOAT,    MATH2(nextafter, 0),  "nextafter")
OP(FMOD,     "fmod",    "fmod",     "fmod",    "x, y",      2, RULE_FLOAT,     MATH2(fmod, 0),     "fmod")
OP(FMIN,     "fmin",    "fmin",     "fmin",    "x, y",      2, RULE_FLOAT,     MATH2(fmin, 0),     "fmin")
OP(FMAX,     "fmax",    "fmax",     "fmax",    "x, y",      2, RULE_FLOAT,     MATH2(fmax, 0),     "fmax")
OP(ISNAN,    "isnan",   "isnan",    "isnan",   "x",         1, RULE_FLOAT_TEST, NO_MATH,          "isnan")
OP(ISINF,    "isinf",   "isinf",    "isinf",   "x",         1, RULE_FLOAT_TEST, NO_MATH,          "isinf")
OP(ISFINITE, "isfinite", "isfinite", "isfinite", "x",       1, RULE_FLOAT_TEST, NO_MATH,       "isfinite")
OP(SIGNBIT,  "signbit", "signbit",  "signbit", "x",         1, RULE_FLOAT_TEST, NO_MATH,        "signbit")
OP(SIGN,     "sign",    "sign",     "sign",    "x",         1, RULE_SAME,      NO_MATH,            "sign")
OP(SQUARE,   "square",  "square",   "square",  "x",         1, RULE_INTEGRAL,  NO_MATH,          "square")
OP(RECIPROCAL, "reciprocal", "reciprocal", "reciprocal", "x", 1, RULE_INTEGRAL, NO_MATH,     "reciprocal")
OP(ROUND,    "round",   "round",    "round",   "x",         1, RULE_ROUND,     NO_MATH,           "round")
OP(DEG2RAD,  "deg2rad", "deg2rad",  "deg2rad", "x",         1, RULE_FLOAT,     OWN(0),          "deg2rad")
OP(RAD2DEG,  "rad2deg", "rad2deg",  "rad2deg", "x",         1, RULE_FLOAT,     OWN(0),          "rad2deg")
OP(EXPIT,    "expit",   "expit",    "expit",   "x",         1, RULE_FLOAT,     OWN(1),               "expit")
OP(LOGADDEXP, "logaddexp", "logaddexp", "logaddexp", "x, y", 2, RULE_FLOAT,    OWN(1),        "logaddexp")
OP(LOGADDEXP2, "logaddexp2", "logaddexp2", "logaddexp2", "x, y", 2, RULE_FLOAT, OWN(1),      "logaddexp2")
OP(LOGICAL_XOR, "logical_xor", "logical_xor", "logical_xor", "x, y", 2, RULE_LOGICAL, NO_MATH,       "logical_xor")
OP(MINIMUM,  "minimum", "minimum",  "minimum", "x, y",      2, RULE_PROMOTE,   NO_MATH,              "minimum")
OP(MAXIMUM,  "maximum", "maximum",  "maximum", "x, y",      2, RULE_PROMOTE,   NO_MATH,              "maximum")
OP(WHERE,    "where",   "where",    "where",   "c, x, y",   3, RULE_WHERE,     NO_MATH,              "where")
OP(CLIP,     "clip",    "clip",     "clip",    "x, lo, hi", 3, RULE_PROMOTE,   NO_MATH,              NULL)
/* saturating integer arithmetic (docs/semantics.md, "Saturating arithmetic") */
OP(ADD_SAT,  "add_sat", "add_sat",  "add_sat", "x, y",      2, RULE_SATURATE,  NO_MATH,              "add_sat")
OP(SUB_SAT,  "sub_sat", "sub_sat",  "sub_sat", "x, y",      2, RULE_SATURATE,  NO_MATH,              "sub_sat")
OP(MUL_Q7,   "mul_q7",  "mul_q7",   "mul_q7",  "x, y",      2, RULE_FIXED,     NO_MATH,          "mul_q7")
OP(MUL_Q15,  "mul_q15", "mul_q15",  "mul_q15", "x, y",      2, RULE_FIXED,     NO_MATH,         "mul_q15")
OP(MUL_Q31,  "mul_q31", "mul_q31",  "mul_q31", "x, y",      2, RULE_FIXED,     NO_MATH,         "mul_q31")
/* f32(x), i8(x), bool(x) ...: the parser knows every dtype name */
OP(CAST,     "cast",    "cast",     NULL,      "x",         1, RULE_CAST,      NO_MATH,              NULL)
