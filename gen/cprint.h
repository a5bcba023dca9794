/* cprint.h - shared by the C printers of the kernel IR: cexpr.c (the text
 * of values), emit.c (the JIT and plain forms) and emit_aot.c (the AOT
 * form's signature).  Not used outside them. */
#ifndef BCGEN_CPRINT_H
#define BCGEN_CPRINT_H

#include "kir.h"

/* ORDER HELPER: the lists of ops.c.tmpl, in the order they are emitted
 * (helper_lists in cexpr.c). */
typedef enum helper {
    HELPER_FROM_BITS, HELPER_TO_INT, HELPER_TO_INT_F32, HELPER_ABS, HELPER_FLOORDIV_INT,
    HELPER_MOD_INT,
    HELPER_FLOORDIV_FLOAT, HELPER_MOD_FLOAT, HELPER_POW_INT, HELPER_SHL, HELPER_SHR,
    HELPER_MINIMUM, HELPER_MAXIMUM, HELPER_NEG_FLOAT, HELPER_SIGNBIT_FLOAT, HELPER_SIGN,
    HELPER_SQUARE, HELPER_RECIPROCAL, HELPER_DEG2RAD, HELPER_RAD2DEG, HELPER_EXPIT,
    HELPER_LOGADDEXP, HELPER_LOGADDEXP2, HELPER_ADD_SAT, HELPER_SUB_SAT, HELPER_MUL_Q,
    HELPER_ADD_SAT_PAIR, HELPER_SUB_SAT_PAIR,
    /* f16 and bf16 (instantiated for those two only): bits to float, float to
     * bits, float to the nearest f16/bf16 value as a float, and (f16) double
     * to it, rounding once */
    HELPER_HALF_LOAD, HELPER_HALF_STORE, HELPER_HALF_ROUND, HELPER_HALF_ROUND_F64,
    HELPER_LANES,
    /* the AOT form's wrapping arithmetic on signed types (MISRA C:2012 10.8) */
    HELPER_ADD_WRAP, HELPER_SUB_WRAP, HELPER_MUL_WRAP, HELPER_NEG_WRAP, HELPER_NOT_WRAP,
    HELPER_LOAD_BOOL, /* and its bool loads (an element as a bool) */
    /* where in the forms gcc compiles (not the JIT's): c ? x : y as a call,
     * so both sides are evaluated before the choice (cexpr.c, OP_WHERE) */
    HELPER_SELECT,
    /* and the AOT form's && and || of two bools as calls, for the same
     * reason (cexpr.c, put_infix) */
    HELPER_AND_BOOL, HELPER_OR_BOOL,
    HELPER_COUNT
} helper;
extern const char *const helper_lists[HELPER_COUNT];

/* The C library functions a kernel may call: the float functions of
 * ops.h, numbered by their expr_op (so in the table's order), then the
 * ones the printer uses itself.  This is also the order of their
 * declarations in emitted code. */
typedef int math_function;
enum { MATH_FABS = OP_COUNT, MATH_FMOD, MATH_POW, MATH_COPYSIGN, MATH_COUNT };
/* libm's name for F (double; the float one adds "f"), and its arity. */
const char *math_name(math_function f);
int math_arity(math_function f);

/* The printer's state while one kernel's IR becomes C. */
typedef struct cprinter {
    compile *c;
    const kernel_ir *ir;
    arena *arena;
    bcg_error *err;
    bcg_status status;               /* first failure; sticky */

    /* The statement being written: plan operand k sits at
     * (has_position[k] && use_position ? <k>_pos : 0) + offset[k]. */
    bool use_position;
    int64_t offset[BCG_MAX_OPERANDS + 1];

    bool need[HELPER_COUNT][BCG_DTYPE_COUNT];
    bool need_math[MATH_COUNT][2];   /* [function][0: double, 1: float] */

    tmpl_scope *scope;
    strbuf line;                     /* scratch for one statement */
} cprinter;

void cprint_fail_nomem(cprinter *e);
const char *cprint_copy(cprinter *e, const char *text);

/* ---- cexpr.c ---------------------------------------------------------------- */

/* The C type of a value of dtype T in an expression (bool values are ints;
 * f16 and bf16 values are floats holding a value of the type). */
const char *cexpr_value_ctype(bcg_dtype t);
/* The C type of a local holding a value of dtype T: bool in the AOT form
 * (MISRA C:2012's essentially Boolean type), else cexpr_value_ctype's. */
const char *cexpr_local_ctype(const cprinter *e, bcg_dtype t);
/* The unsigned type the arithmetic of T wraps in (after C's promotions). */
const char *cexpr_wide_unsigned(bcg_dtype t);
/* Value ID as C (its own computation, even when it has a local). */
void cexpr_put_node(cprinter *e, strbuf *sb, int id);
/* Value ID (its local when it has one) as a value of dtype WANT. */
void cexpr_put_as(cprinter *e, strbuf *sb, int id, bcg_dtype want);
/* Literal N as a C constant of its dtype. */
void cexpr_put_literal(cprinter *e, strbuf *sb, const expr_node *n);
/* The element offset of plan operand K in the statement being written. */
void cexpr_put_offset(cprinter *e, strbuf *sb, int k);
/* The C text around a value of dtype FROM that makes it one of dtype TO. */
void cexpr_convert_open(cprinter *e, strbuf *sb, bcg_dtype from, bcg_dtype to);
void cexpr_convert_close(strbuf *sb, bcg_dtype from, bcg_dtype to);
/* The C text around a value of dtype T that makes it what memory of dtype T
 * holds (f16 and bf16: the bits; others: nothing). */
void cexpr_store_open(cprinter *e, strbuf *sb, bcg_dtype t);
void cexpr_store_close(strbuf *sb, bcg_dtype t);
/* Marks half helper H for T (f16 or bf16) needed, with what its body calls. */
void cexpr_need_half(cprinter *e, helper h, bcg_dtype t);

/* How a reduction accumulates (emit.c prints it, eval.c computes it the
 * same way): in 64-bit unsigned arithmetic that wraps (integer sums and
 * products), in double (f32 sums, products and means; f64 products), in
 * double with Neumaier's compensation (f64 sums, means of f64 and
 * integers), with minimum/maximum, or with | and &. */
typedef enum acc_kind { ACC_WRAP, ACC_DOUBLE, ACC_COMPENSATED, ACC_EXTREME, ACC_LOGICAL } acc_kind;
acc_kind reduce_acc_kind(int reduce, bcg_dtype value);

/* ---- emit_aot.c -------------------------------------------------------------- */

/* The variables only the AOT branches of kernel.c.tmpl read, and the
 * index type both forms use; ors the body's needs into c->aot. */
bcg_status emit_aot_variables(cprinter *e);
/* Why NAME cannot name the kernel's function, or NULL (see emit_aot.c). */
const char *emit_function_name_problem(const char *name);

#endif
