/* emit_aot.c - the names and signature of the AOT form (gen/aot.c writes
 * firmware .c/.h pairs): which names a kernel, its function or its
 * parameters may have, and the typed entry point
 *
 *     void NAME(T *out, const T0 *name0, const T1 *name1, ...);
 *
 * that replaces the void ** ABI.  The body (the IR's steps) is printed by
 * emit.c as for the JIT; only the outer shape differs (kernel.c.tmpl). */
#include <stdio.h>
#include <string.h>

#include "cprint.h"

/* NAME is PREFIX followed by one or more digits, then SUFFIX. */
static bool numbered(const char *name, const char *prefix, const char *suffix)
{
    size_t n = strlen(prefix);
    if (strncmp(name, prefix, n) != 0 || name[n] < '0' || name[n] > '9')
        return false;
    const char *rest = name + n;
    while (*rest >= '0' && *rest <= '9')
        rest++;
    return strcmp(rest, suffix) == 0;
}

/* NAME is one of the locals the kernel body declares: out_pos, in<k>,
 * in<k>_pos, in<k>_value, i<k>, shared<k>, literal<k> (k: digits).  (A
 * reduction also declares acc, acc_c, acc_i, acc_l, acc_t and acc_x in a
 * block of its own: an operand of that name is shadowed there, harmless
 * since the body reads operands as in<k>, but -Wshadow says so.) */
static bool kernel_local_name(const char *name)
{
    return strcmp(name, "out_pos") == 0 || numbered(name, "in", "") ||
           numbered(name, "in", "_pos") || numbered(name, "in", "_value") ||
           numbered(name, "i", "") || numbered(name, "shared", "") ||
           numbered(name, "literal", "");
}

/* Why NAME cannot name the kernel's function (a phrase finishing "'NAME'
 * is ..."), or NULL: it must be an identifier that nothing in the unit, or
 * in a project that compiles it next to the standard headers, already
 * means: not a keyword or a name of the C headers (cnames_reserved; that
 * covers the libm functions the unit declares and tcc's "__" helpers), a
 * typedef or one of our helpers or locals. */
const char *emit_function_name_problem(const char *name)
{
    static const char *const taken[] = {
        "bcg_i8", "bcg_i16", "bcg_i32", "bcg_i64", "bcg_u8", "bcg_u16", "bcg_u32", "bcg_u64",
        "bcg_check_type_sizes", "bcg_check_index_size",
        /* the kernel's locals */
        "output", "inputs", "out", "out_pos",
    };
    if (!name_is_valid(name, strlen(name)))
        return "not a C identifier";
    const char *reserved = cnames_reserved(name);
    if (reserved)
        return reserved;
    if (strcmp(name, "main") == 0)
        return "the program's entry point, which has a signature of its own";
    /* locals the kernel declares: in<k>, in<k>_pos, in<k>_value, i<k>,
     * literal<k>, shared<k>: exactly those forms, so i2c_scale, in2out or
     * i16_to_q15 stay usable */
    if (kernel_local_name(name))
        return "a name the kernel uses itself (out, in0, in0_pos, i0, literal0, ...)";
    for (size_t i = 0; i < sizeof taken / sizeof taken[0]; i++)
        if (strcmp(name, taken[i]) == 0)
            return "a name the kernel uses itself (out, in0, in0_pos, i0, literal0, ...)";
    /* every helper is bcg_<family>_<dtype> or bcg_<dtype>_from_bits */
    static const char *const helper_prefixes[] = {
        "bcg_to_", "bcg_abs_", "bcg_floordiv_", "bcg_mod_", "bcg_pow_", "bcg_shl_",
        "bcg_shr_", "bcg_minimum_", "bcg_maximum_", "bcg_neg_", "bcg_signbit_", "bcg_f32_", "bcg_f64_",
        "bcg_sign_", "bcg_square_", "bcg_reciprocal_", "bcg_deg2rad_", "bcg_rad2deg_",
        "bcg_expit_", "bcg_logaddexp_", "bcg_logaddexp2_", "bcg_add_sat_", "bcg_sub_sat_",
        "bcg_mul_q", "bcg_lanes_",
        "bcg_load_", "bcg_store_", "bcg_round_", "bcg_native_",
    };
    for (size_t i = 0; i < sizeof helper_prefixes / sizeof helper_prefixes[0]; i++)
        if (strncmp(name, helper_prefixes[i], strlen(helper_prefixes[i])) == 0)
            return "a name of the kernel's helpers (bcg_abs_i32, bcg_pow_f64, ...)";
    return NULL;
}

const char *emit_stdint_ctype(bcg_dtype t)
{
    static const char *const names[BCG_DTYPE_COUNT] = {
        "uint8_t", "int8_t", "int16_t", "int32_t", "int64_t",
        "uint8_t", "uint16_t", "uint32_t", "uint64_t", "float", "double",
        "uint16_t", "uint16_t", /* f16, bf16: their bits */
    };
    return (unsigned)t < BCG_DTYPE_COUNT ? names[t] : "void";
}

const char *emit_aot_name_problem(const char *name, bool is_parameter)
{
    /* the C and C++ keywords and the headers' names are cnames_reserved's
     * (through function_name_problem); these are the forms of macros that
     * common headers define beyond C99 and a parameter name would be
     * replaced by, and bcgen's own prefixes (BCGEN_ for the include guards
     * and BCGEN_RESTRICT of every pair, which one project may include) */
    static const struct {
        const char *text, *why;
    } prefixes[] = {
        {"bcg_", "in the bcg_ namespace bcgen reserves for its own names"},
        {"BCG_", "in the BCG_ namespace bcgen reserves for its own names"},
        {"BCGEN_", "in the BCGEN_ namespace bcgen reserves for its include guards and macros"},
        {"M_", "the form of a <math.h> constant (M_PI, M_E, ...)"},
        {"MATH_ERR", "the form of a <math.h> macro (MATH_ERRNO, ...)"},
    }, suffixes[] = {
        {"_t", "the form of a type name (POSIX reserves names ending in _t)"},
        {"_MAX", "the form of a limit macro (ending in _MAX, as in <limits.h>)"},
        {"_MIN", "the form of a limit macro (ending in _MIN, as in <limits.h>)"},
        {"_WIDTH", "the form of a limit macro (ending in _WIDTH, as in <stdint.h>)"},
        {"_C", "the form of a constant macro (ending in _C, as in <stdint.h>)"},
    };
    const char *problem = emit_function_name_problem(name);
    if (problem)
        return problem;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(name, prefixes[i].text, strlen(prefixes[i].text)) == 0)
            return prefixes[i].why;
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        size_t m = strlen(suffixes[i].text);
        if (n > m && strcmp(name + n - m, suffixes[i].text) == 0)
            return suffixes[i].why;
    }
    if (!is_parameter)
        return NULL;
    /* the body's own names (a parameter shares the body's outermost scope) */
    bool local = strcmp(name, "out") == 0 || kernel_local_name(name);
    return local ? "a name the kernel uses itself (out, in0, in0_pos, i0, literal0, ...)" : NULL;
}

bool emit_aot_by_value(const compile *c, int operand)
{
    /* (a fused program's other outputs are written: pointers) */
    return c->operands[operand].shape.rank == 0 && operand != c->options.inplace &&
           operand < c->operand_count - c->fuse_count;
}

/* The variables only the AOT branches of kernel.c.tmpl read, and the
 * index type both forms use; ors the body's needs into c->aot. */
bcg_status emit_aot_variables(cprinter *e)
{
    compile *c = e->c;
    tmpl_scope *s = e->scope;
    tmpl_set_bool(s, "aot", c->aot != NULL);
    /* 32-bit firmware: long is 32 bits there too, but ptrdiff_t says what
     * it is; aot.c checks at generation time that every position fits. */
    tmpl_set_str(s, "index_type", c->aot ? "ptrdiff_t" : "long");
    if (!c->aot)
        return BCG_OK;

    emit_aot *aot = c->aot;
    int inplace = c->options.inplace;
    /* the header defines BCGEN_RESTRICT: restrict in C, __restrict in C++,
     * so the .c compiles as either */
    const char *qualifier = aot->restrict_pointers ? "BCGEN_RESTRICT " : "";
    strbuf parameters, names;
    sb_init(&parameters);
    sb_init(&names);
    tmpl_list_declare(s, "aot_inputs");
    tmpl_list_declare(s, "aot_unused");
    if (inplace < 0) {
        sb_printf(&parameters, "%s *%sout", emit_stdint_ctype(e->ir->out_dtype), qualifier);
        sb_puts(&names, "out");
        if (e->ir->p->empty)
            tmpl_set_str(tmpl_list_add(s, "aot_unused"), "name", "out");
    }
    for (int i = 0; i < e->ir->input_count; i++) {
        const compile_operand *op = &c->operands[i];
        const char *problem = emit_aot_name_problem(op->name, true);
        if (problem) {
            sb_free(&parameters);
            sb_free(&names);
            return fail_at(c->err, BCG_ERR_USAGE, 0, i, -1,
                           "'%s' is %s; pick another operand name (it becomes a parameter "
                           "of the generated C)",
                           op->name, problem);
        }
        const char *separator = parameters.len ? ", " : "";
        /* a rank-0 operand that is only read is passed by value: a scalar
         * (gain, bias, threshold) needs no buffer of its own */
        bool by_value = emit_aot_by_value(c, i);
        /* a fused program's other outputs (after the real inputs) are written */
        bool written = i == inplace || i >= e->ir->real_inputs;
        if (by_value)
            sb_printf(&parameters, "%s%s %s", separator, emit_stdint_ctype(op->dtype), op->name);
        else
            sb_printf(&parameters, "%s%s%s *%s%s", separator, written ? "" : "const ",
                      emit_stdint_ctype(op->dtype), qualifier, op->name);
        sb_printf(&names, "%s%s%s", separator, op->name,
                  i == inplace ? " (the output: out and in" : " (in");
        sb_printf(&names, "%d%s)", i, by_value ? ", by value" : "");
        bool used = e->ir->input_used[i] && !e->ir->p->empty;
        if (used) {
            tmpl_scope *item = tmpl_list_add(s, "aot_inputs");
            tmpl_set_int(item, "index", i);
            tmpl_set_str(item, "ctype", dtype_ctype(op->dtype));
            tmpl_set_str(item, "param", op->name);
            tmpl_set_str(item, "address_of", by_value ? "&" : "");
            tmpl_set_str(item, "qualifier", written ? "" : "const ");
        } else if (i != inplace || e->ir->p->empty) {
            tmpl_set_str(tmpl_list_add(s, "aot_unused"), "name", op->name);
        }
    }
    bool ok = !parameters.failed && !names.failed;
    if (ok) {
        aot->parameters = cprint_copy(e, parameters.data);
        ok = aot->parameters != NULL;
        tmpl_set_str(s, "aot_parameters", parameters.data);
        tmpl_set_str(s, "aot_names", names.data);
        tmpl_set_str(s, "aot_out_alias", inplace >= 0 ? c->operands[inplace].name : "");
    }
    sb_free(&parameters);
    sb_free(&names);
    if (!ok)
        return fail(c->err, BCG_ERR_NOMEM, "out of memory while emitting the kernel");
    for (int h = 0; h < HELPER_COUNT; h++)
        for (int t = 0; t < BCG_DTYPE_COUNT; t++)
            aot->needs.helper[h][t] |= e->need[h][t];
    for (int f = 0; f < MATH_COUNT; f++)
        for (int single = 0; single < 2; single++)
            aot->needs.math[f][single] |= e->need_math[f][single];
    return BCG_OK;
}
