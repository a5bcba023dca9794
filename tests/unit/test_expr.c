/* test_expr.c - the expression front end: tokens and literal forms,
 * precedence and associativity (through expr_format), every operator and
 * function, every parse error with its column and message, the limits,
 * hostile inputs (C fragments, control and non-ASCII bytes, a random-byte
 * property test), the typing rules (promotion, weak literals, bool rules,
 * float bitwise, division, functions, where/clip, casts), constant folding,
 * expr_operation_type, expr_dump, and allocation failure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* internal.h first: cmocka.h defines a fail() macro. */
#include "internal.h"

#include <cmocka.h>


/* ---- helpers ---------------------------------------------------------------- */

enum { MAX_TEST_OPERANDS = 16 };

/* Operands of a test, from "a:i8 b:f32" (a name without a type is f64). */
typedef struct env {
    int count;
    char storage[MAX_TEST_OPERANDS][BCG_MAX_NAME + 1];
    const char *names[MAX_TEST_OPERANDS];
    bcg_dtype dtypes[MAX_TEST_OPERANDS];
    expr_names table;
} env;

/* The operands most typing tests use. */
static const char *const STANDARD =
    "a:i8 b:u8 c:i16 i:i32 l:i64 w:u32 u:u64 f:f32 d:f64 p:bool q:bool";

static void env_init(env *e, const char *decls)
{
    memset(e, 0, sizeof *e);
    const char *s = decls;
    while (*s) {
        while (*s == ' ')
            s++;
        if (!*s)
            break;
        const char *start = s;
        while (*s && *s != ' ' && *s != ':')
            s++;
        assert_true(e->count < MAX_TEST_OPERANDS);
        snprintf(e->storage[e->count], sizeof e->storage[0], "%.*s", (int)(s - start), start);
        e->dtypes[e->count] = BCG_F64;
        if (*s == ':') {
            const char *type = ++s;
            while (*s && *s != ' ')
                s++;
            assert_true(dtype_from_text(type, (size_t)(s - type), &e->dtypes[e->count]));
        }
        e->names[e->count] = e->storage[e->count];
        e->count++;
    }
    e->table.count = e->count;
    e->table.names = e->names;
}

/* One run of parse (and type, when typed): the tree stays in its arena. */
typedef struct run {
    env env;
    arena *arena;
    expr_node *root;
    bcg_error err;
    bcg_status status;
    char text[2048];   /* "<dtype>: <format>", or "<format>" untyped, or the error message */
} run;

static void run_expr(run *r, const char *expr, const char *decls, bool typed)
{
    env_init(&r->env, decls);
    r->arena = arena_new();
    assert_non_null(r->arena);
    error_clear(&r->err);
    r->root = NULL;
    r->status = expr_parse(r->arena, expr, &r->env.table, &r->root, &r->err);
    if (r->status == BCG_OK && typed)
        r->status = expr_type(r->arena, r->root, r->env.dtypes, r->env.count, &r->err);
    if (r->status != BCG_OK) {
        assert_int_equal(r->err.status, r->status);
        snprintf(r->text, sizeof r->text, "%s", r->err.message);
        return;
    }
    assert_non_null(r->root);
    strbuf sb;
    sb_init(&sb);
    expr_format(&sb, r->root, &r->env.table);
    char *formatted = sb_finish(&sb);
    assert_non_null(formatted);
    if (typed)
        snprintf(r->text, sizeof r->text, "%s: %s", bcg_dtype_name(r->root->dtype), formatted);
    else
        snprintf(r->text, sizeof r->text, "%s", formatted);
    mem_free(formatted);
}

static void run_done(run *r) { arena_free(r->arena); }

/* Parses EXPR over operands a, b, c, d, x, y; expects the formatted tree. */
static void check_format_with(const char *expr, const char *decls, const char *expected)
{
    run r;
    run_expr(&r, expr, decls, false);
    if (r.status != BCG_OK)
        print_error("'%s' failed: %s\n", expr, r.text);
    assert_int_equal(r.status, BCG_OK);
    assert_string_equal(r.text, expected);
    run_done(&r);
}

static void check_format(const char *expr, const char *expected)
{
    check_format_with(expr, "a b c d x y", expected);
}

static void check_error_with(const char *expr, const char *decls, bool typed, bcg_status status,
                             int column, const char *message)
{
    run r;
    run_expr(&r, expr, decls, typed);
    if (r.status == BCG_OK)
        print_error("'%s' unexpectedly gave %s\n", expr, r.text);
    assert_int_equal(r.status, status);
    assert_string_equal(r.text, message);
    assert_int_equal(r.err.column, column);
    run_done(&r);
}

/* A parse error over operands a, b, c. */
/* the end of every unknown-function message: the functions table and the casts */
#define KNOWN_FUNCTIONS " (`bcgen functions` lists every function)"

static void check_parse_error(const char *expr, bcg_status status, int column, const char *message)
{
    check_error_with(expr, "a b c", false, status, column, message);
}

/* A typing (or parse) error over the STANDARD operands. */
static void check_type_error(const char *expr, bcg_status status, int column, const char *message)
{
    check_error_with(expr, STANDARD, true, status, column, message);
}

/* Types EXPR over the STANDARD operands; expects "<dtype>: <format>". */
static void check_type(const char *expr, const char *expected)
{
    run r;
    run_expr(&r, expr, STANDARD, true);
    if (r.status != BCG_OK)
        print_error("'%s' failed: %s\n", expr, r.text);
    assert_int_equal(r.status, BCG_OK);
    assert_string_equal(r.text, expected);
    run_done(&r);
}

/* Types EXPR over DECLS and compares expr_dump's output. */
static void check_dump_with(const char *expr, const char *decls, const char *expected)
{
    run r;
    run_expr(&r, expr, decls, true);
    if (r.status != BCG_OK)
        print_error("'%s' failed: %s\n", expr, r.text);
    assert_int_equal(r.status, BCG_OK);
    strbuf sb;
    sb_init(&sb);
    expr_dump(&sb, r.root, &r.env.table);
    char *dump = sb_finish(&sb);
    assert_non_null(dump);
    assert_string_equal(dump, expected);
    mem_free(dump);
    run_done(&r);
}

/* The folded value of a literal-only expression: "literal 3 i64\n". */
static void check_fold(const char *expr, const char *expected)
{
    check_dump_with(expr, STANDARD, expected);
}

/* ---- tokens and literal forms ---------------------------------------------- */

static void literal_forms(void **state)
{
    (void)state;
    check_format("0", "0");
    check_format("42", "42");
    check_format("1.", "1.0");
    check_format(".5", "0.5");
    check_format("1e-3", "0.001");
    check_format("2.5E+4", "25000.0");
    check_format("1e5", "100000.0");
    check_format("1.e2", "100.0");
    check_format("0x1F", "31");
    check_format("0Xff", "255");
    check_format("0x0", "0");
    check_format("0.0", "0.0");
    check_format("007.5", "7.5");   /* a float may start with zeros, as in Python */
    check_format("1e16", "1e+16");
    check_format("1.5e-5", "1.5e-05");
    check_format("123456789.125", "123456789.125");
    check_format("0.1", "0.1");
    check_format("1e400", "inf");
    check_format("1e-400", "0.0");
    check_format("9223372036854775807", "9223372036854775807");
    check_format("18446744073709551615", "18446744073709551615");
    check_format("0xffffffffffffffff", "18446744073709551615");
    check_format("00000000000000000000000000001.5", "1.5");
    check_format("1234567890123456789012345678901234567890.0", "1.2345678901234568e+39");
}

static void whitespace_and_spacing(void **state)
{
    (void)state;
    check_format("a+b", "(a + b)");
    check_format("\ta\t+\t b  ", "(a + b)");
    check_format("a<=b", "(a <= b)");
    check_format("a**-b", "(a ** (-b))");
    check_format("a--b", "(a - (-b))");
    check_format("a<-b", "(a < (-b))");
}

/* ---- precedence and associativity -------------------------------------------- */

static void precedence_arithmetic(void **state)
{
    (void)state;
    check_format("a * b + c", "((a * b) + c)");
    check_format("a + b * c", "(a + (b * c))");
    check_format("a - b - c", "((a - b) - c)");
    check_format("a / b / c", "((a / b) / c)");
    check_format("a // b % c * d", "(((a // b) % c) * d)");
    check_format("a + b - c + d", "(((a + b) - c) + d)");
    check_format("(a + b) * c", "((a + b) * c)");
    check_format("((a))", "a");
    check_format("a * (b + (c - d))", "(a * (b + (c - d)))");
}

static void precedence_power_and_unary(void **state)
{
    (void)state;
    check_format("a ** b ** c", "(a ** (b ** c))");
    check_format("-a ** 2", "(-(a ** 2))");
    check_format("a ** -b", "(a ** (-b))");
    check_format("a ** -b ** c", "(a ** (-(b ** c)))");
    check_format("-a * b", "((-a) * b)");
    check_format("--a", "(-(-a))");
    check_format("!~-+a", "(!(~(-(+a))))");
    check_format("a * -b", "(a * (-b))");
    check_format("(a + b) ** 2", "((a + b) ** 2)");
    check_format("2 * a ** 2", "(2 * (a ** 2))");
    check_format("~a & b", "((~a) & b)");
    check_format("!a || b", "((!a) || b)");
}

static void precedence_bitwise_and_shifts(void **state)
{
    (void)state;
    check_format("a | b ^ c & d", "(a | (b ^ (c & d)))");
    check_format("a & b ^ c | d", "(((a & b) ^ c) | d)");
    check_format("a << b + c", "(a << (b + c))");
    check_format("a & b << c", "(a & (b << c))");
    check_format("a << b >> c", "((a << b) >> c)");
    check_format("a | b | c", "((a | b) | c)");
}

static void precedence_comparisons_and_logic(void **state)
{
    (void)state;
    check_format("a + b == c", "((a + b) == c)");
    check_format("a == b | c", "(a == (b | c))");   /* Python: | binds tighter than == */
    check_format("a < b && c || d", "(((a < b) && c) || d)");
    check_format("a || b && c", "(a || (b && c))");
    check_format("a && b && c", "((a && b) && c)");
    check_format("a < b || c >= d", "((a < b) || (c >= d))");
    check_format("(a < b) < c", "((a < b) < c)");   /* explicit parentheses are fine */
    check_format("a != b", "(a != b)");
    check_format("a > b", "(a > b)");
    check_format("a <= b", "(a <= b)");
    check_format("a >= b", "(a >= b)");
}

static void functions_and_calls(void **state)
{
    (void)state;
    check_format("where(a > 0, a, 0.1 * a)", "where((a > 0), a, (0.1 * a))");
    check_format("pow(a, b)", "(a ** b)");
    check_format("clip(a, 0, 1)", "clip(a, 0, 1)");
    check_format("minimum(a, b) + maximum(c, d)", "(minimum(a, b) + maximum(c, d))");
    check_format("abs(a) + sqrt(b) + exp(c) + log(d)", "(((abs(a) + sqrt(b)) + exp(c)) + log(d))");
    check_format("sin(a) * cos(b) * tanh(c)", "((sin(a) * cos(b)) * tanh(c))");
    check_format("floor(a) - ceil(b)", "(floor(a) - ceil(b))");
    check_format("sqrt((a))", "sqrt(a)");
    check_format("-sqrt(a) ** 2", "(-(sqrt(a) ** 2))");
    check_format("where(a, where(b, c, d), x)", "where(a, where(b, c, d), x)");
}

static void casts_parse(void **state)
{
    (void)state;
    static const char *const spellings[][2] = {
        {"bool(a)", "bool(a)"}, {"i8(a)", "i8(a)"}, {"i16(a)", "i16(a)"},
        {"i32(a)", "i32(a)"}, {"i64(a)", "i64(a)"}, {"u8(a)", "u8(a)"},
        {"u16(a)", "u16(a)"}, {"u32(a)", "u32(a)"}, {"u64(a)", "u64(a)"},
        {"f32(a)", "f32(a)"}, {"f64(a)", "f64(a)"}, {"int8(a)", "i8(a)"},
        {"int16(a)", "i16(a)"}, {"int32(a)", "i32(a)"}, {"int64(a)", "i64(a)"},
        {"uint8(a)", "u8(a)"}, {"uint16(a)", "u16(a)"}, {"uint32(a)", "u32(a)"},
        {"uint64(a)", "u64(a)"}, {"float32(a)", "f32(a)"}, {"float64(a)", "f64(a)"},
    };
    for (size_t k = 0; k < sizeof spellings / sizeof spellings[0]; k++)
        check_format(spellings[k][0], spellings[k][1]);
    run r;
    run_expr(&r, "float32(a)", "a", false);
    assert_int_equal(r.root->op, OP_CAST);
    assert_int_equal(r.root->cast_to, BCG_F32);
    run_done(&r);
}

static void operand_names_shadow_nothing(void **state)
{
    (void)state;
    /* an operand may be named like a function: called, it is the function */
    check_format_with("exp(exp) + f32(f32) + where(where, 1, 2)", "exp f32 where",
                      "((exp(exp) + f32(f32)) + where(where, 1, 2))");
    check_format_with("sqrt * 2", "sqrt", "(sqrt * 2)");
    check_format_with("int8", "int8", "int8");
}

static void tree_holds_indices_and_columns(void **state)
{
    (void)state;
    run r;
    run_expr(&r, "b  *  a", "a b", false);
    assert_int_equal(r.status, BCG_OK);
    assert_int_equal(r.root->op, OP_MUL);
    assert_int_equal(r.root->column, 4);
    assert_int_equal(r.root->arg_count, 2);
    assert_int_equal(r.root->args[0]->op, OP_OPERAND);
    assert_int_equal(r.root->args[0]->operand, 1);
    assert_int_equal(r.root->args[0]->column, 1);
    assert_int_equal(r.root->args[1]->operand, 0);
    assert_int_equal(r.root->args[1]->column, 7);
    run_done(&r);

    run_expr(&r, "1.5 + 7", "", false);
    assert_int_equal(r.root->args[0]->op, OP_LITERAL);
    assert_true(r.root->args[0]->literal_is_float);
    assert_true(r.root->args[0]->value.f == 1.5);
    assert_false(r.root->args[1]->literal_is_float);
    assert_int_equal(r.root->args[1]->value.i, 7);
    run_done(&r);
}

static void op_names(void **state)
{
    (void)state;
    assert_string_equal(expr_op_name(OP_ADD), "+");
    assert_string_equal(expr_op_name(OP_FLOORDIV), "//");
    assert_string_equal(expr_op_name(OP_POW), "**");
    assert_string_equal(expr_op_name(OP_NOT), "!");
    assert_string_equal(expr_op_name(OP_GE), ">=");
    assert_string_equal(expr_op_name(OP_SQRT), "sqrt");
    assert_string_equal(expr_op_name(OP_WHERE), "where");
    assert_string_equal(expr_op_name(OP_CAST), "cast");
    assert_string_equal(expr_op_name(OP_COUNT), "?");
    for (int op = 0; op < OP_COUNT; op++) {
        assert_non_null(expr_op_name((expr_op)op));
        assert_true(strlen(expr_op_name((expr_op)op)) > 0);
    }
}

/* ---- parse errors ---------------------------------------------------------------- */

static void error_unexpected_characters(void **state)
{
    (void)state;
    check_parse_error("a # b", BCG_ERR_PARSE, 3, "unexpected character '#' at column 3");
    check_parse_error("a + \x01", BCG_ERR_PARSE, 5, "unexpected character '\\x01' at column 5");
    check_parse_error("a\x7f", BCG_ERR_PARSE, 2, "unexpected character '\\x7f' at column 2");
    check_parse_error("a + \xc3\xa9", BCG_ERR_PARSE, 5, "unexpected character '\\xc3' at column 5");
    check_parse_error("\xff", BCG_ERR_PARSE, 1, "unexpected character '\\xff' at column 1");
    check_parse_error("a\n+ b", BCG_ERR_PARSE, 2, "unexpected character '\\x0a' at column 2");
    check_parse_error("a\r", BCG_ERR_PARSE, 2, "unexpected character '\\x0d' at column 2");
    check_parse_error("a;", BCG_ERR_PARSE, 2, "unexpected character ';' at column 2");
    check_parse_error("{a}", BCG_ERR_PARSE, 1, "unexpected character '{' at column 1");
    check_parse_error("a ? b : c", BCG_ERR_PARSE, 3, "unexpected character '?' at column 3");
    check_parse_error("'a'", BCG_ERR_PARSE, 1, "unexpected character ''' at column 1");
    check_parse_error("\"a\"", BCG_ERR_PARSE, 1, "unexpected character '\"' at column 1");
    check_parse_error("a[0]", BCG_ERR_PARSE, 2, "unexpected character '[' at column 2");
    check_parse_error("a.b", BCG_ERR_PARSE, 2, "unexpected character '.' at column 2");
    check_parse_error("$a", BCG_ERR_PARSE, 1, "unexpected character '$' at column 1");
    check_parse_error("a = b", BCG_ERR_PARSE, 3,
                      "unexpected character '=' at column 3 (comparison is '==')");
}

static void error_unknown_names(void **state)
{
    (void)state;
    check_parse_error("a + b * d", BCG_ERR_PARSE, 9,
                      "unknown name 'd' at column 9 (operands are a, b, c)");
    check_error_with("a", "", false, BCG_ERR_PARSE, 1,
                     "unknown name 'a' at column 1 (there are no operands)");
    check_parse_error("A", BCG_ERR_PARSE, 1, "unknown name 'A' at column 1 (operands are a, b, c)");
    check_parse_error("foo(a)", BCG_ERR_PARSE, 1, "unknown function 'foo' at column 1" KNOWN_FUNCTIONS);
    check_parse_error("Sqrt(a)", BCG_ERR_PARSE, 1, "unknown function 'Sqrt' at column 1; did you mean sqrt?" KNOWN_FUNCTIONS);
    check_parse_error("a + b(c)", BCG_ERR_PARSE, 5, "'b' at column 5 is an operand, not a function");
    check_parse_error("sqrt + a", BCG_ERR_PARSE, 1,
                      "'sqrt' at column 1 is a function: call it as sqrt(x)");
    check_parse_error("a * where", BCG_ERR_PARSE, 5,
                      "'where' at column 5 is a function: call it as where(c, x, y)");
    check_parse_error("f32", BCG_ERR_PARSE, 1, "'f32' at column 1 is a function: call it as f32(x)");
}

static void error_long_names_are_clipped(void **state)
{
    (void)state;
    char text[200];
    memset(text, 'z', 100);
    text[100] = 0;
    run r;
    run_expr(&r, text, "a", false);
    assert_int_equal(r.status, BCG_ERR_PARSE);
    assert_string_equal(r.text, "unknown name 'zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz...' at column 1 "
                                "(operands are a)");
    run_done(&r);
}

static void error_argument_counts(void **state)
{
    (void)state;
    check_parse_error("sqrt(a, b)", BCG_ERR_PARSE, 1, "sqrt at column 1 takes 1 argument (x), got 2");
    check_parse_error("a + where(a, b)", BCG_ERR_PARSE, 5,
                      "where at column 5 takes 3 arguments (c, x, y), got 2");
    check_parse_error("minimum()", BCG_ERR_PARSE, 1,
                      "minimum at column 1 takes 2 arguments (x, y), got 0");
    check_parse_error("maximum(a)", BCG_ERR_PARSE, 1,
                      "maximum at column 1 takes 2 arguments (x, y), got 1");
    check_parse_error("pow(a, b, c)", BCG_ERR_PARSE, 1, "pow at column 1 takes 2 arguments (x, y), got 3");
    check_parse_error("clip(a, b, c, a, b)", BCG_ERR_PARSE, 1,
                      "clip at column 1 takes 3 arguments (x, lo, hi), got 5");
    check_parse_error("f32(a, b)", BCG_ERR_PARSE, 1, "f32 at column 1 takes 1 argument (x), got 2");
    check_parse_error("abs()", BCG_ERR_PARSE, 1, "abs at column 1 takes 1 argument (x), got 0");
}

static void error_unbalanced(void **state)
{
    (void)state;
    check_parse_error("(a + b", BCG_ERR_PARSE, 7,
                      "missing ')' at column 7 to close '(' at column 1 (found the end of the expression)");
    check_parse_error("((a) + b", BCG_ERR_PARSE, 9,
                      "missing ')' at column 9 to close '(' at column 1 (found the end of the expression)");
    check_parse_error("(a b)", BCG_ERR_PARSE, 4,
                      "missing ')' at column 4 to close '(' at column 1 (found name 'b')");
    check_parse_error("a + b)", BCG_ERR_PARSE, 6, "unmatched ')' at column 6");
    check_parse_error(")", BCG_ERR_PARSE, 1, "expected an operand at column 1, found ')'");
    check_parse_error("sqrt(a", BCG_ERR_PARSE, 7,
                      "missing ')' at column 7 to close the call of sqrt at column 1 "
                      "(found the end of the expression)");
    check_parse_error("sqrt(a b)", BCG_ERR_PARSE, 8,
                      "missing ')' at column 8 to close the call of sqrt at column 1 (found name 'b')");
    check_parse_error("sqrt(a,)", BCG_ERR_PARSE, 8, "expected an operand at column 8, found ')'");
    check_parse_error("sqrt(,a)", BCG_ERR_PARSE, 6, "expected an operand at column 6, found ','");
    check_parse_error("()", BCG_ERR_PARSE, 2, "expected an operand at column 2, found ')'");
    check_parse_error("a, b", BCG_ERR_PARSE, 2,
                      "expected an operator or the end of the expression at column 2, found ','");
}

static void error_empty_trailing_missing(void **state)
{
    (void)state;
    check_parse_error("", BCG_ERR_PARSE, 1, "empty expression");
    check_parse_error("   ", BCG_ERR_PARSE, 1, "empty expression");
    check_parse_error("\t", BCG_ERR_PARSE, 1, "empty expression");
    check_parse_error("a b", BCG_ERR_PARSE, 3,
                      "expected an operator or the end of the expression at column 3, found name 'b'");
    check_parse_error("a 1", BCG_ERR_PARSE, 3,
                      "expected an operator or the end of the expression at column 3, found number '1'");
    check_parse_error("a +", BCG_ERR_PARSE, 4,
                      "expected an operand at column 4, found the end of the expression");
    check_parse_error("a + * b", BCG_ERR_PARSE, 5, "expected an operand at column 5, found '*'");
    check_parse_error("a ! b", BCG_ERR_PARSE, 3,
                      "expected an operator or the end of the expression at column 3, found '!'");
    check_parse_error("a ~ b", BCG_ERR_PARSE, 3,
                      "expected an operator or the end of the expression at column 3, found '~'");
    check_parse_error("** a", BCG_ERR_PARSE, 1, "expected an operand at column 1, found '**'");
    check_parse_error("a & & b", BCG_ERR_PARSE, 5, "expected an operand at column 5, found '&'");
    check_parse_error("-", BCG_ERR_PARSE, 2,
                      "expected an operand at column 2, found the end of the expression");
}

static void error_chained_comparisons(void **state)
{
    (void)state;
    check_parse_error("a < b < c", BCG_ERR_PARSE, 7,
                      "comparisons do not chain: '<' at column 7 follows another comparison; "
                      "write (a < b) && (b < c) or add parentheses");
    check_parse_error("a == b != c", BCG_ERR_PARSE, 8,
                      "comparisons do not chain: '!=' at column 8 follows another comparison; "
                      "write (a < b) && (b < c) or add parentheses");
    check_format("a < b && b < c", "((a < b) && (b < c))");
}

static void error_bad_numbers(void **state)
{
    (void)state;
    check_parse_error("1e", BCG_ERR_PARSE, 1, "malformed number '1e' at column 1");
    check_parse_error("a + 1e+", BCG_ERR_PARSE, 5, "malformed number '1e+' at column 5");
    check_parse_error("1.2.3", BCG_ERR_PARSE, 1, "malformed number '1.2.3' at column 1");
    check_parse_error("12abc", BCG_ERR_PARSE, 1, "malformed number '12abc' at column 1");
    check_parse_error("1_000", BCG_ERR_PARSE, 1, "malformed number '1_000' at column 1");
    check_parse_error("0x", BCG_ERR_PARSE, 1, "malformed number '0x' at column 1");
    check_parse_error("0xfg", BCG_ERR_PARSE, 1, "malformed number '0xfg' at column 1");
    check_parse_error("0b101", BCG_ERR_PARSE, 1, "malformed number '0b101' at column 1");
    check_parse_error("0x1.8p3", BCG_ERR_PARSE, 1, "malformed number '0x1.8p3' at column 1");
    check_parse_error("1.5f", BCG_ERR_PARSE, 1, "malformed number '1.5f' at column 1");
    check_parse_error("10L", BCG_ERR_PARSE, 1, "malformed number '10L' at column 1");
    check_parse_error("a + 010", BCG_ERR_PARSE, 5,
                      "integer literal '010' at column 5 has a leading zero "
                      "(octal is not supported; write 0x for hex)");
    check_parse_error("18446744073709551616", BCG_ERR_PARSE, 1,
                      "integer literal at column 1 is larger than 2**64-1");
    check_parse_error("0x10000000000000000", BCG_ERR_PARSE, 1,
                      "integer literal at column 1 is larger than 2**64-1");
    check_parse_error(".", BCG_ERR_PARSE, 1, "unexpected character '.' at column 1");
}

/* ---- limits ------------------------------------------------------------------------ */

static char *repeat(const char *prefix, const char *unit, size_t count, const char *suffix_unit,
                    size_t suffix_count)
{
    size_t n = strlen(prefix) + strlen(unit) * count + strlen(suffix_unit) * suffix_count + 1;
    char *s = malloc(n);
    assert_non_null(s);
    char *p = s;
    p += sprintf(p, "%s", prefix);
    for (size_t k = 0; k < count; k++)
        p += sprintf(p, "%s", unit);
    for (size_t k = 0; k < suffix_count; k++)
        p += sprintf(p, "%s", suffix_unit);
    return s;
}

static void expect_status(const char *text, bcg_status status, int column)
{
    run r;
    run_expr(&r, text, "a b c", false);
    if (r.status != status)
        print_error("status %d: %s\n", r.status, r.text);
    assert_int_equal(r.status, status);
    if (status != BCG_OK) {
        assert_int_equal(r.err.column, column);
        assert_non_null(strstr(r.text, status == BCG_ERR_LIMIT && column > BCG_MAX_EXPR
                                           ? "BCG_MAX_EXPR" : "BCG_MAX_DEPTH"));
    }
    run_done(&r);
}

static void limit_parentheses(void **state)
{
    (void)state;
    char *ok = repeat("", "(", BCG_MAX_DEPTH, "", 0);
    char *full = repeat(ok, "a", 1, ")", BCG_MAX_DEPTH);
    expect_status(full, BCG_OK, 0);
    free(full);
    free(ok);
    char *deep = repeat("", "(", BCG_MAX_DEPTH + 1, "a", 1);
    expect_status(deep, BCG_ERR_LIMIT, BCG_MAX_DEPTH + 1);
    free(deep);
    /* as deep as the length limit allows */
    char *deepest = repeat("", "(", BCG_MAX_EXPR - 1, "a", 1);
    expect_status(deepest, BCG_ERR_LIMIT, BCG_MAX_DEPTH + 1);
    free(deepest);
}

static void limit_depth_message(void **state)
{
    (void)state;
    char *deep = repeat("", "-", 1000, "a", 1);
    check_parse_error(deep, BCG_ERR_LIMIT, 201,
                      "expression nests deeper than BCG_MAX_DEPTH (200 levels) at column 201");
    free(deep);
}

static void limit_unary_power_and_calls(void **state)
{
    (void)state;
    char *minus = repeat("", "-", BCG_MAX_EXPR - 1, "a", 1);
    expect_status(minus, BCG_ERR_LIMIT, BCG_MAX_DEPTH + 1);
    free(minus);
    char *bang = repeat("", "!~", BCG_MAX_EXPR / 2 - 1, "a", 1);
    expect_status(bang, BCG_ERR_LIMIT, BCG_MAX_DEPTH + 1);
    free(bang);
    char *power = repeat("a", "**a", BCG_MAX_EXPR / 3 - 1, "", 0);
    expect_status(power, BCG_ERR_LIMIT, 1 + 3 * BCG_MAX_DEPTH + 1);
    free(power);
    char *calls = repeat("", "sqrt(", BCG_MAX_EXPR / 5 - 1, "", 0);
    expect_status(calls, BCG_ERR_LIMIT, 5 * BCG_MAX_DEPTH + 1);
    free(calls);
    char *casts = repeat("", "f32(", 100, ")", 0);
    char *ok = repeat(casts, "a", 1, ")", 100);
    expect_status(ok, BCG_OK, 0);
    free(ok);
    free(casts);
}

static void limit_tree_height(void **state)
{
    (void)state;
    /* a + a + ... is a left-deep tree: BCG_MAX_DEPTH operators fit, one more does not */
    char *fits = repeat("a", "+a", BCG_MAX_DEPTH, "", 0);
    expect_status(fits, BCG_OK, 0);
    free(fits);
    char *tall = repeat("a", "+a", BCG_MAX_DEPTH + 1, "", 0);
    expect_status(tall, BCG_ERR_LIMIT, 2 * BCG_MAX_DEPTH + 2);
    free(tall);
    char *longest = repeat("a", "*a", BCG_MAX_EXPR / 2 - 1, "", 0);
    expect_status(longest, BCG_ERR_LIMIT, 2 * BCG_MAX_DEPTH + 2);
    free(longest);
}

/* One depth rule for every construct (issue 9, finding 10): BCG_MAX_DEPTH
 * levels of parentheses, unary operators, calls, casts, '**' or binary
 * operators around an operand parse, and one more level is an error. */
static void limit_same_for_every_construct(void **state)
{
    (void)state;
    static const struct { const char *prefix, *suffix; } levels[] = {
        {"(", ")"}, {"-", ""}, {"!", ""}, {"~", ""}, {"abs(", ")"}, {"f32(", ")"},
        {"a ** ", ""}, {"maximum(a, ", ")"}, {"where(a, a, ", ")"}, {"clip(", ", a, a)"},
    };
    for (size_t k = 0; k < sizeof levels / sizeof levels[0]; k++) {
        for (int extra = 0; extra < 2; extra++) {
            int depth = BCG_MAX_DEPTH + extra;
            char *open = repeat("", levels[k].prefix, depth, "", 0);
            char *text = repeat(open, "a", 1, levels[k].suffix, depth);
            run r;
            run_expr(&r, text, "a b c", false);
            if (r.status != (extra ? BCG_ERR_LIMIT : BCG_OK))
                print_error("%d x '%s': %s\n", depth, levels[k].prefix, r.text);
            assert_int_equal(r.status, extra ? BCG_ERR_LIMIT : BCG_OK);
            if (extra)
                assert_non_null(strstr(r.text, "BCG_MAX_DEPTH (200 levels) at column"));
            run_done(&r);
            free(text);
            free(open);
        }
    }
    /* parentheses and operators add up: 100 of each is 200 levels */
    char *open = repeat("", "-(", 100, "", 0);
    char *text = repeat(open, "a", 1, ")", 100);
    expect_status(text, BCG_OK, 0);
    free(text);
    free(open);
    open = repeat("(", "-(", 100, "", 0);
    text = repeat(open, "a", 1, ")", 101);
    expect_status(text, BCG_ERR_LIMIT, 201);   /* the 201st level: the last '(' */
    free(text);
    free(open);
}

static void limit_length(void **state)
{
    (void)state;
    char *fits = repeat("a", " ", BCG_MAX_EXPR - 1, "", 0);
    assert_int_equal(strlen(fits), BCG_MAX_EXPR);
    expect_status(fits, BCG_OK, 0);
    free(fits);
    char *too_long = repeat("a", " ", BCG_MAX_EXPR, "", 0);
    check_parse_error(too_long, BCG_ERR_LIMIT, BCG_MAX_EXPR + 1,
                      "expression is longer than BCG_MAX_EXPR (65536 bytes)");
    free(too_long);
    char *huge = repeat("", "(", 100000, "a", 1);   /* 100,000 deep: stopped by the length */
    expect_status(huge, BCG_ERR_LIMIT, BCG_MAX_EXPR + 1);
    free(huge);
}

/* ---- hostile inputs ----------------------------------------------------------------- */

static void hostile_c_fragments(void **state)
{
    (void)state;
    check_parse_error("a); system(\"x\"", BCG_ERR_PARSE, 2, "unmatched ')' at column 2");
    check_parse_error("a + b; } int main() { return 0; } //", BCG_ERR_PARSE, 6,
                      "unexpected character ';' at column 6");
    check_parse_error("#include <stdio.h>", BCG_ERR_PARSE, 1, "unexpected character '#' at column 1");
    check_parse_error("a /* comment */ + b", BCG_ERR_PARSE, 4,
                      "expected an operand at column 4, found '*'");
    check_parse_error("a // comment", BCG_ERR_PARSE, 6,
                      "unknown name 'comment' at column 6 (operands are a, b, c)");
    check_parse_error("__asm__(\"int3\")", BCG_ERR_PARSE, 1, "unknown function '__asm__' at column 1" KNOWN_FUNCTIONS);
    check_parse_error("sqrt(\"int3\")", BCG_ERR_PARSE, 6, "unexpected character '\"' at column 6");
    check_parse_error("__asm__(a)", BCG_ERR_PARSE, 1, "unknown function '__asm__' at column 1" KNOWN_FUNCTIONS);
    check_parse_error("a \\\n+ b", BCG_ERR_PARSE, 3, "unexpected character '\\' at column 3");
    check_parse_error("a + '\\0'", BCG_ERR_PARSE, 5, "unexpected character ''' at column 5");
    check_parse_error("a ? system(0) : b", BCG_ERR_PARSE, 3, "unexpected character '?' at column 3");
    check_parse_error("sizeof(a)", BCG_ERR_PARSE, 1, "unknown function 'sizeof' at column 1" KNOWN_FUNCTIONS);
    check_parse_error("(int)a", BCG_ERR_PARSE, 2,
                      "unknown name 'int' at column 2 (operands are a, b, c)");
    check_parse_error("a->b", BCG_ERR_PARSE, 3, "expected an operand at column 3, found '>'");
}

static void hostile_nul_ends_the_text(void **state)
{
    (void)state;
    /* expr_parse takes a C string: a NUL ends it, whatever follows */
    check_format("a\0; system(\"rm\")", "a");
}

/* Property: over random byte strings, expr_parse never crashes, an error's
 * column lies within the text (+1 for its end), and an accepted text holds
 * only the bytes of the grammar. */
static void hostile_random_bytes(void **state)
{
    (void)state;
    static const char alphabet[] = "ab c(),+-*/%~!<>=&^|.0123456789eExX_#;\"'\\{}$\t\n\x01\x7f\x80\xff";
    const char *allowed = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_ \t"
                          ".+-*/%~!<>=&^|(),";
    uint64_t seed = 12345;
    env e;
    env_init(&e, "a b c");
    int accepted = 0;
    for (int trial = 0; trial < 20000; trial++) {
        char text[24];
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        int length = (int)(seed >> 59);   /* 0..31, clipped below */
        if (length > (int)sizeof text - 1)
            length = sizeof text - 1;
        for (int k = 0; k < length; k++) {
            seed = seed * 6364136223846793005u + 1442695040888963407u;
            text[k] = alphabet[(seed >> 33) % (sizeof alphabet - 1)];
        }
        text[length] = 0;
        arena *a = arena_new();
        assert_non_null(a);
        expr_node *root = NULL;
        bcg_error err;
        error_clear(&err);
        bcg_status status = expr_parse(a, text, &e.table, &root, &err);
        if (status == BCG_OK) {
            accepted++;
            assert_non_null(root);
            for (size_t k = 0; text[k]; k++)
                assert_non_null(strchr(allowed, text[k]));
            bcg_dtype types[3] = {BCG_I32, BCG_F32, BCG_BOOL};
            bcg_status typed = expr_type(a, root, types, 3, &err);
            assert_true(typed == BCG_OK || typed == BCG_ERR_TYPE);
        } else {
            assert_null(root);
            assert_int_equal(err.status, status);
            assert_true(err.column >= 1 && err.column <= length + 1);
            assert_true(strlen(err.message) > 0);
        }
        arena_free(a);
    }
    assert_true(accepted > 100);   /* the property was exercised */
}

/* ---- typing: promotion and weak literals --------------------------------------------- */

static void type_array_promotion(void **state)
{
    (void)state;
    check_type("a + b", "i16: (a + b)");
    check_type("l + u", "f64: (l + u)");
    check_type("f + c", "f32: (f + c)");
    check_type("f + i", "f64: (f + i)");
    check_type("p + a", "i8: (p + a)");
    check_type("w * i", "i64: (w * i)");
    check_type("b - a", "i16: (b - a)");
    check_type("d % f", "f64: (d % f)");
    check_type("a", "i8: a");
    check_type("f", "f32: f");
}

static void type_weak_int_literals(void **state)
{
    (void)state;
    check_type("a + 1", "i8: (a + 1)");
    check_type("a + 127", "i8: (a + 127)");
    check_type("a + -128", "i8: (a + (-128))");
    check_type_error("a + 300", BCG_ERR_TYPE, 5, "literal 300 at column 5 does not fit in i8");
    check_type_error("a + -129", BCG_ERR_TYPE, 5, "literal -129 at column 5 does not fit in i8");
    check_type_error("128 * a", BCG_ERR_TYPE, 1, "literal 128 at column 1 does not fit in i8");
    check_type("b - 1", "u8: (b - 1)");
    check_type_error("b + -1", BCG_ERR_TYPE, 5, "literal -1 at column 5 does not fit in u8");
    check_type("u + 18446744073709551615", "u64: (u + 18446744073709551615)");
    check_type_error("l + 18446744073709551615", BCG_ERR_TYPE, 5,
                     "literal 18446744073709551615 at column 5 does not fit in i64");
    check_type("f + 1", "f32: (f + 1.0)");
    check_type("f * 16777217", "f32: (f * 16777216.0)");   /* rounded to f32 */
    check_type("d + 1", "f64: (d + 1.0)");
    check_type("p + 1", "i64: (p + 1)");
    check_type("w + 4294967295", "u32: (w + 4294967295)");
    check_type_error("w + 4294967296", BCG_ERR_TYPE, 5,
                     "literal 4294967296 at column 5 does not fit in u32");
}

static void type_weak_float_literals(void **state)
{
    (void)state;
    check_type("a + 1.5", "f64: (a + 1.5)");
    check_type("f + 1.5", "f32: (f + 1.5)");
    check_type("f * 0.1", "f32: (f * 0.1)");
    check_type("p * 2.5", "f64: (p * 2.5)");
    check_type("u * 2.5", "f64: (u * 2.5)");
    check_type("f + 1e300", "f32: (f + inf)");   /* NumPy: inf with an overflow warning */
}

static void type_f32_literal_value_is_rounded(void **state)
{
    (void)state;
    run r;
    run_expr(&r, "f * 0.1", STANDARD, true);
    assert_int_equal(r.status, BCG_OK);
    const expr_node *literal = r.root->args[1];
    assert_int_equal(literal->op, OP_LITERAL);
    assert_int_equal(literal->dtype, BCG_F32);
    assert_true(literal->value.f == (double)0.1f);
    assert_true(literal->literal_is_float);
    run_done(&r);
    run_expr(&r, "b + 200", STANDARD, true);
    assert_int_equal(r.root->args[1]->dtype, BCG_U8);
    assert_int_equal(r.root->args[1]->value.u, 200);
    run_done(&r);
    run_expr(&r, "a + -5", STANDARD, true);
    assert_int_equal(r.root->args[1]->dtype, BCG_I8);
    assert_int_equal(r.root->args[1]->value.i, -5);
    run_done(&r);
}

static void type_literal_only_roots(void **state)
{
    (void)state;
    check_type("1", "i64: 1");
    check_type("1.5", "f64: 1.5");
    check_type("1 + 2.5", "f64: 3.5");
    check_type("9223372036854775807", "i64: 9223372036854775807");
    check_type_error("9223372036854775808", BCG_ERR_TYPE, 1,
                     "literal 9223372036854775808 at column 1 does not fit in i64");
    check_type("1 < 2", "bool: bool(1)");
}

/* ---- typing: bool rules ---------------------------------------------------------------- */

static void type_bool_rules(void **state)
{
    (void)state;
    check_type("p + q", "bool: (p + q)");
    check_type("p * q", "bool: (p * q)");
    check_type_error("p - q", BCG_ERR_TYPE, 3,
                     "'-' at column 3 is not defined for two bools (use '^' or '!=' for logical xor)");
    check_type_error("-p", BCG_ERR_TYPE, 1,
                     "unary '-' at column 1 is not defined for bool (use '!' or '~' for logical not)");
    check_type("p - 1", "i64: (p - 1)");
    check_type("p - a", "i8: (p - a)");
    check_type("~p", "bool: (~p)");
    check_type("+p", "bool: (+p)");
    check_type("abs(p)", "bool: abs(p)");
    check_type("p / q", "f64: (p / q)");
    check_type("p // q", "i8: (p // q)");
    check_type("p % q", "i8: (p % q)");
    check_type("p ** q", "i8: (p ** q)");
    check_type("p << q", "i8: (p << q)");
    check_type("p >> 1", "i64: (p >> 1)");
    check_type("p & q", "bool: (p & q)");
    check_type("p | q", "bool: (p | q)");
    check_type("p ^ q", "bool: (p ^ q)");
    check_type("p & 1", "i64: (p & 1)");
    check_type("minimum(p, q)", "bool: minimum(p, q)");
    check_type("p + (1 < 2)", "bool: (p + bool(1))");
    /* True and False are weak, as NumPy's Python bools (NEP 50):
     * np.result_type(np.int8, True) is int8, True + 1.5 a float literal */
    check_type("a + True", "i8: (a + 1)");
    check_type("f * False", "f32: (f * 0.0)");
    check_type("p + True", "bool: (p + bool(1))");
    check_type("f * (True + 1.5)", "f32: (f * 2.5)");
    check_type("True", "bool: bool(1)");
    check_type("where(False, a, b)", "i16: where(bool(0), a, b)");
    check_type("a + (1 < 2)", "i8: (a + 1)");
}

static void type_float_bitwise_rejected(void **state)
{
    (void)state;
    check_type_error("f & a", BCG_ERR_TYPE, 3,
                     "'&' at column 3 needs integer or bool operands, not f32 and i8");
    check_type_error("a | 1.5", BCG_ERR_TYPE, 3,
                     "'|' at column 3 needs integer or bool operands, not i8 and a float literal");
    check_type_error("d ^ p", BCG_ERR_TYPE, 3,
                     "'^' at column 3 needs integer or bool operands, not f64 and bool");
    check_type_error("d << 1", BCG_ERR_TYPE, 3,
                     "'<<' at column 3 needs integer or bool operands, not f64 and an int literal");
    check_type_error("a >> f", BCG_ERR_TYPE, 3,
                     "'>>' at column 3 needs integer or bool operands, not i8 and f32");
    check_type_error("~f", BCG_ERR_TYPE, 1, "'~' at column 1 needs an integer or bool operand, not f32");
    check_type_error("1.5 & 1", BCG_ERR_TYPE, 5,
                     "'&' at column 5 needs integer or bool operands, not a float literal and an int literal");
    check_type_error("~sqrt(a)", BCG_ERR_TYPE, 1,
                     "'~' at column 1 needs an integer or bool operand, not f16");
    check_type("a & b", "i16: (a & b)");
    check_type("~u", "u64: (~u)");
    check_type("i << 3", "i32: (i << 3)");
    check_type("c >> a", "i16: (c >> a)");
}

/* ---- typing: division, comparisons, logic ---------------------------------------------- */

static void type_division(void **state)
{
    (void)state;
    check_type("a / a", "f64: (a / a)");   /* f64 even for i8 / i8, as NumPy */
    check_type("f / a", "f32: (f / a)");
    check_type("f / i", "f64: (f / i)");
    check_type("a / 2", "f64: (a / 2)");
    check_type_error("a / 300", BCG_ERR_TYPE, 5, "literal 300 at column 5 does not fit in i8");
    check_type("c / f", "f32: (c / f)");
    check_type("f / 2", "f32: (f / 2.0)");
    check_type("a // 2", "i8: (a // 2)");
    check_type("f // 2", "f32: (f // 2.0)");
    check_type("u % 7", "u64: (u % 7)");
    /* the literal of a / 2 is stored as i8; the division happens in f64 */
    run r;
    run_expr(&r, "a / 2", STANDARD, true);
    assert_int_equal(r.root->args[1]->dtype, BCG_I8);
    assert_int_equal(expr_operation_type(r.root), BCG_F64);
    run_done(&r);
}

static void type_comparisons_and_logic(void **state)
{
    (void)state;
    check_type("a < f", "bool: (a < f)");
    check_type("a < 1.5", "bool: (a < 1.5)");
    check_type("a == 1", "bool: (a == 1)");
    check_type_error("b < -1", BCG_ERR_TYPE, 5, "literal -1 at column 5 does not fit in u8");
    check_type("p != q", "bool: (p != q)");
    check_type("a && f", "bool: (a && f)");
    check_type("!a", "bool: (!a)");
    check_type("!f", "bool: (!f)");
    /* a truth-tested literal becomes its truth: NumPy's logical functions
     * accept any Python number, np.logical_and(int8, 300) included */
    check_type("a || 1", "bool: (a || bool(1))");
    check_type("a || 300", "bool: (a || bool(1))");
    check_type("a && 0.0", "bool: (a && bool(0))");
    check_type("f && 0.5", "bool: (f && bool(1))");
    check_type("(u % u) && 18446744073709551615", "bool: ((u % u) && bool(1))");
    check_type("p || -1", "bool: (p || bool(1))");
    run r;
    run_expr(&r, "a || 300", STANDARD, true);
    assert_int_equal(r.root->args[1]->dtype, BCG_BOOL);
    assert_int_equal(r.root->args[1]->value.i, 1);
    run_done(&r);
}

static void type_operation_types(void **state)
{
    (void)state;
    static const struct {
        const char *expr;
        bcg_dtype operation, result;
    } cases[] = {
        {"a < f", BCG_F32, BCG_BOOL},       {"a < 1.5", BCG_F64, BCG_BOOL},
        {"a == 1", BCG_I8, BCG_BOOL},       {"b >= a", BCG_I16, BCG_BOOL},
        {"p < 1", BCG_I64, BCG_BOOL},       {"f > 0.5", BCG_F32, BCG_BOOL},
        {"a / a", BCG_F64, BCG_F64},        {"f / c", BCG_F32, BCG_F32},
        {"!f", BCG_BOOL, BCG_BOOL},         {"a && f", BCG_BOOL, BCG_BOOL},
        {"p << q", BCG_I8, BCG_I8},         {"p + q", BCG_BOOL, BCG_BOOL},
        {"where(f, a, b)", BCG_I16, BCG_I16}, {"clip(a, b, 1.5)", BCG_F64, BCG_F64},
        {"f64(a)", BCG_I8, BCG_F64},        {"bool(f)", BCG_F32, BCG_BOOL},       {"sqrt(c)", BCG_F32, BCG_F32},
        {"a + b", BCG_I16, BCG_I16},        {"-b", BCG_U8, BCG_U8},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        run r;
        run_expr(&r, cases[k].expr, STANDARD, true);
        assert_int_equal(r.status, BCG_OK);
        if (expr_operation_type(r.root) != cases[k].operation)
            print_error("%s: operation type %s\n", cases[k].expr,
                        bcg_dtype_name(expr_operation_type(r.root)));
        assert_int_equal(expr_operation_type(r.root), cases[k].operation);
        assert_int_equal(r.root->dtype, cases[k].result);
        run_done(&r);
    }
}

/* ---- typing: functions, where, clip, casts --------------------------------------------- */

static void type_functions(void **state)
{
    (void)state;
    check_type("sqrt(a)", "f16: sqrt(a)"); /* NumPy: an int8's sqrt is float16 */
    check_type("sqrt(c)", "f32: sqrt(c)");
    check_type("sqrt(b)", "f16: sqrt(b)");
    check_type("sqrt(i)", "f64: sqrt(i)");
    check_type("sqrt(w)", "f64: sqrt(w)");
    check_type("sqrt(p)", "f16: sqrt(p)");
    check_type("sqrt(f)", "f32: sqrt(f)");
    check_type("exp(l)", "f64: exp(l)");
    check_type("log(d)", "f64: log(d)");
    check_type("sin(a) + cos(f)", "f32: (sin(a) + cos(f))");
    check_type("tanh(u)", "f64: tanh(u)");
    check_type("floor(a)", "f16: floor(a)");
    check_type("ceil(i)", "f64: ceil(i)");
    check_type("abs(a)", "i8: abs(a)");
    check_type("abs(f)", "f32: abs(f)");
    check_type("minimum(a, b)", "i16: minimum(a, b)");
    check_type("maximum(f, 1)", "f32: maximum(f, 1.0)");
    check_type("maximum(a, 2.5)", "f64: maximum(a, 2.5)");
    check_type("pow(a, 2)", "i8: (a ** 2)");
    check_type("a ** -1", "i8: (a ** (-1))");
    check_type("f ** 0.5", "f32: (f ** 0.5)");
    check_type("sqrt(f) + 1", "f32: (sqrt(f) + 1.0)");
    /* issue 13's functions, typed as NumPy's (f16 read as f32) */
    check_type("sign(a) + sign(f)", "f32: (sign(a) + sign(f))");
    check_type("sign(u)", "u64: sign(u)");
    check_type_error("sign(p)", BCG_ERR_TYPE, 1,
                     "sign at column 1 is not defined for bool (NumPy has no bool loop)");
    check_type_error("sign(1 < 2)", BCG_ERR_TYPE, 1,
                     "sign at column 1 is not defined for bool (NumPy has no bool loop)");
    check_type("square(p)", "i8: square(p)");
    check_type("square(w)", "u32: square(w)");
    check_type("reciprocal(p)", "i8: reciprocal(p)");
    check_type("reciprocal(l) + reciprocal(d)", "f64: (reciprocal(l) + reciprocal(d))");
    check_type("round(a)", "i8: round(a)");
    check_type("around(p)", "f16: round(p)"); /* NumPy: round(bool) is float16 */
    check_type("round(i) + round(f)", "f64: (round(i) + round(f))");
    check_type("fix(c)", "f32: trunc(c)");
    check_type("deg2rad(a) + radians(f) + rad2deg(p) + degrees(f)",
               "f32: (((deg2rad(a) + deg2rad(f)) + rad2deg(p)) + rad2deg(f))");
    check_type("expit(i) + sigmoid(f)", "f64: (expit(i) + expit(f))");
    check_type("logaddexp(f, a)", "f32: logaddexp(f, a)");
    check_type("logaddexp2(f, 1)", "f32: logaddexp2(f, 1.0)");
    check_type("logaddexp(f, 0.5) + logaddexp2(i, f)",
               "f64: (logaddexp(f, 0.5) + logaddexp2(i, f))");
    check_type("logical_and(a, f) + logical_or(p, 1)", "bool: ((a && f) + (p || bool(1)))");
    check_type("logical_not(f)", "bool: (!f)");
    check_type("logical_xor(a, 2.5)", "bool: logical_xor(a, bool(1))");
    check_type("atan2(f, 1)", "f32: arctan2(f, 1.0)");
    /* literals of functions fold as NumPy computes them on Python numbers */
    check_type("a + square(3)", "i8: (a + 9)");
    check_type("a + sign(-7)", "i8: (a + (-1))");
    check_type("l + reciprocal(0)", "i64: (l + (-9223372036854775808))");
    check_type("f + reciprocal(2.0)", "f32: (f + 0.5)");
    check_type("a + round(7)", "i8: (a + 7)");
    check_type("f + round(2.5)", "f32: (f + 2.0)");
    check_type("f * expit(0.0)", "f32: (f * 0.5)");
    check_type("f + logaddexp2(3, 3)", "f32: (f + 4.0)");
    check_type("logical_xor(1, 0.0) + a", "i8: (1 + a)");
}

static void type_where_and_clip(void **state)
{
    (void)state;
    check_type("where(p, a, 1)", "i8: where(p, a, 1)");
    check_type_error("where(p, a, 1000)", BCG_ERR_TYPE, 13,
                     "literal 1000 at column 13 does not fit in i8");
    check_type("where(p, a, 1.5)", "f64: where(p, a, 1.5)");
    check_type("where(a, 1, 2)", "i64: where(a, 1, 2)");
    check_type("where(p, 1, 0.5)", "f64: where(p, 1.0, 0.5)");
    check_type("where(f, a, b)", "i16: where(f, a, b)");
    check_type("where(1, a, f)", "f32: where(bool(1), a, f)");
    check_type("where(18446744073709551615, a, a)", "i8: where(bool(1), a, a)");
    check_type("where(0.0, a, b)", "i16: where(bool(0), a, b)");
    check_type("where(p, q, 1 < 2)", "bool: where(p, q, bool(1))");
    check_type("where(a > 0, a, 0.1 * a)", "f64: where((a > 0), a, (0.1 * a))");
    check_type("clip(a, 0, 100)", "i8: clip(a, 0, 100)");
    check_type_error("clip(a, 0, 200)", BCG_ERR_TYPE, 12, "literal 200 at column 12 does not fit in i8");
    check_type("clip(a, 0, 1.5)", "f64: clip(a, 0.0, 1.5)");
    check_type("clip(a, b, 1)", "i16: clip(a, b, 1)");
    check_type("clip(f, 0, 1)", "f32: clip(f, 0.0, 1.0)");
    check_type("clip(1, a, f)", "f32: clip(1.0, a, f)");
    /* typed as minimum(maximum(x, lo), hi) is: pair by pair (issue 13) */
    check_type("clip(p, 300, a)", "i64: clip(p, 300, a)");
    check_type("minimum(maximum(p, 300), a)", "i64: minimum(maximum(p, 300), a)");
}

static void type_casts(void **state)
{
    (void)state;
    check_type("f32(a)", "f32: f32(a)");
    check_type("i8(f) + 1", "i8: (i8(f) + 1)");
    check_type_error("i8(f) + 128", BCG_ERR_TYPE, 9, "literal 128 at column 9 does not fit in i8");
    check_type("bool(a)", "bool: bool(a)");
    check_type("u64(a) + l", "f64: (u64(a) + l)");
    check_type("float64(f) * 2", "f64: (f64(f) * 2.0)");
    check_type("a + i16(5)", "i16: (a + 5)");   /* a cast literal is strong */
    check_type("a + i8(5)", "i8: (a + 5)");
    check_type("f + f64(0.5)", "f64: (f + 0.5)");
    check_type_error("i8(3) + 200", BCG_ERR_TYPE, 9, "literal 200 at column 9 does not fit in i8");
    check_type("i8(100) + i8(100)", "i8: (100 + 100)");   /* typed literals are not folded */
    check_type("-b", "u8: (-b)");
}

static void cast_folding(void **state)
{
    (void)state;
    check_fold("i8(300)", "literal 44 i8\n");
    check_fold("u8(-1)", "literal 255 u8\n");
    check_fold("i16(65535)", "literal -1 i16\n");
    check_fold("i64(18446744073709551615)", "literal -1 i64\n");
    check_fold("u32(-9223372036854775808)", "literal 0 u32\n");
    check_fold("i32(1e10)", "literal 2147483647 i32\n");
    check_fold("i32(-1e10)", "literal -2147483648 i32\n");
    check_fold("i8(2.9)", "literal 2 i8\n");
    check_fold("i8(-2.9)", "literal -2 i8\n");
    check_fold("u8(-3.7)", "literal 0 u8\n");
    check_fold("u8(255.9)", "literal 255 u8\n");
    check_fold("u8(256.0)", "literal 255 u8\n");
    check_fold("i64(1e300)", "literal 9223372036854775807 i64\n");
    check_fold("i64(-1e300)", "literal -9223372036854775808 i64\n");
    check_fold("i64(-9223372036854775808.0)", "literal -9223372036854775808 i64\n");
    check_fold("i64(9223372036854775807.0)", "literal 9223372036854775807 i64\n");   /* 2**63 */
    check_fold("u64(1e300)", "literal 18446744073709551615 u64\n");
    check_fold("u64(18446744073709549568.0)", "literal 18446744073709549568 u64\n");
    check_fold("i8(1e400 - 1e400)", "literal 0 i8\n");   /* NaN -> 0 */
    check_fold("bool(0.0)", "literal 0 bool\n");
    check_fold("bool(0.5)", "literal 1 bool\n");
    check_fold("bool(1e400 - 1e400)", "literal 1 bool\n");
    check_fold("bool(-7)", "literal 1 bool\n");
    check_fold("f32(0.1)", "literal 0.1 f32\n");
    check_fold("f32(16777217)", "literal 16777216.0 f32\n");
    check_fold("f64(18446744073709551615)", "literal 1.8446744073709552e+19 f64\n");
    check_fold("f32(1e300)", "literal inf f32\n");
    check_fold("f64(i8(200))", "literal -56.0 f64\n");
    check_fold("i16(bool(5))", "literal 1 i16\n");
    check_fold("u8(1 < 2)", "literal 1 u8\n");
}

/* ---- constant folding ------------------------------------------------------------------- */

static void fold_integers(void **state)
{
    (void)state;
    check_fold("1 + 2", "literal 3 i64\n");
    check_fold("2 * 3 - 10", "literal -4 i64\n");
    check_fold("7 // 2", "literal 3 i64\n");
    check_fold("-7 // 2", "literal -4 i64\n");
    check_fold("7 // -2", "literal -4 i64\n");
    check_fold("-7 // -2", "literal 3 i64\n");
    check_fold("-7 % 3", "literal 2 i64\n");
    check_fold("7 % -3", "literal -2 i64\n");
    check_fold("-6 % 3", "literal 0 i64\n");
    check_fold("2 ** 10", "literal 1024 i64\n");
    check_fold("(-2) ** 3", "literal -8 i64\n");
    check_fold("0 ** 0", "literal 1 i64\n");
    check_fold("-2 ** 63", "literal -9223372036854775808 i64\n");
    check_fold("-9223372036854775808", "literal -9223372036854775808 i64\n");
    check_fold("+5", "literal 5 i64\n");
    check_fold("abs(-9223372036854775807 - 1) - 1", "literal 9223372036854775807 i64\n");
    check_fold("0x10 + 1", "literal 17 i64\n");
    check_fold("maximum(3, 2)", "literal 3 i64\n");
    check_fold("minimum(3, -2)", "literal -2 i64\n");
    check_fold("clip(5, 0, 3)", "literal 3 i64\n");
    check_fold("clip(-5, 0, 3)", "literal 0 i64\n");
    check_fold("where(0, 1, 2)", "literal 2 i64\n");
}

static void fold_bitwise_and_shifts(void **state)
{
    (void)state;
    check_fold("~0", "literal -1 i64\n");
    check_fold("~5", "literal -6 i64\n");
    check_fold("5 & -2", "literal 4 i64\n");
    check_fold("-1 & 255", "literal 255 i64\n");
    check_fold("-1 | 0", "literal -1 i64\n");
    check_fold("-1 ^ 5", "literal -6 i64\n");
    check_fold("-8 | 3", "literal -5 i64\n");
    check_fold("1 << 62", "literal 4611686018427387904 i64\n");
    check_fold("-1 >> 1", "literal -1 i64\n");
    check_fold("-5 >> 1", "literal -3 i64\n");
    check_fold("-4 >> 1", "literal -2 i64\n");
    check_fold("-1 >> 100", "literal -1 i64\n");
    check_fold("5 >> 100", "literal 0 i64\n");
    check_fold("0 << 1000", "literal 0 i64\n");
    check_type("u + (1 << 63)", "u64: (u + 9223372036854775808)");
    check_type("u & (0xffffffffffffffff ^ 1)", "u64: (u & 18446744073709551614)");
    check_type_error("u & ~1", BCG_ERR_TYPE, 5, "literal -2 at column 5 does not fit in u64");
    check_type_error("~0x8000000000000000", BCG_ERR_TYPE, 1,
                     "constant expression at column 1: integer overflow (the result is outside [-2**63, 2**64-1])");
    check_type("u + (18446744073709551615 & -1)", "u64: (u + 18446744073709551615)");
}

static void fold_floats(void **state)
{
    (void)state;
    check_fold("7 / 2", "literal 3.5 f64\n");
    check_fold("4 / 2", "literal 2.0 f64\n");
    check_fold("2 ** -1", "literal 0.5 f64\n");
    check_fold("0.1 + 0.2", "literal 0.30000000000000004 f64\n");
    check_fold("1 + 0.5", "literal 1.5 f64\n");
    check_fold("-7.5 // 2", "literal -4.0 f64\n");
    check_fold("-7.5 % 2", "literal 0.5 f64\n");
    check_fold("7.5 % -2", "literal -0.5 f64\n");
    check_fold("6.0 % -3", "literal -0.0 f64\n");
    check_fold("1e308 * 10", "literal inf f64\n");
    check_fold("1e400 - 1e400", "literal nan f64\n");
    check_fold("2.0 ** 0.5", "literal 1.4142135623730951 f64\n");
    check_fold("(-8.0) ** 3", "literal -512.0 f64\n");
    check_fold("sqrt(4)", "literal 2.0 f64\n");
    check_fold("sqrt(-1)", "literal nan f64\n");
    check_fold("log(0)", "literal -inf f64\n");
    check_fold("exp(0) + sin(0) + cos(0) + tanh(0)", "literal 2.0 f64\n");
    check_fold("floor(2.5)", "literal 2.0 f64\n");
    check_fold("ceil(-2.5)", "literal -2.0 f64\n");
    check_fold("abs(-2.5)", "literal 2.5 f64\n");
    check_fold("minimum(1, 2.5)", "literal 1.0 f64\n");
    check_fold("maximum(1e400 - 1e400, 1)", "literal nan f64\n");
    check_fold("where(1 < 2, 3, 4.5)", "literal 3.0 f64\n");
    check_fold("1.5 < 2", "literal 1 bool\n");
    check_fold("clip(2.5, 0, 1)", "literal 1.0 f64\n");
}

static void fold_bools(void **state)
{
    (void)state;
    check_fold("1 < 2", "literal 1 bool\n");
    check_fold("2 <= 1", "literal 0 bool\n");
    check_fold("(1 < 2) + (1 < 2)", "literal 1 bool\n");
    check_fold("(1 < 2) * (2 < 1)", "literal 0 bool\n");
    check_fold("~(1 < 2)", "literal 0 bool\n");
    check_fold("(1 < 2) + 1", "literal 2 i64\n");
    check_fold("(1 < 2) & (2 > 1)", "literal 1 bool\n");
    check_fold("1 && 0", "literal 0 bool\n");
    check_fold("0 || 0.5", "literal 1 bool\n");
    check_fold("!0", "literal 1 bool\n");
    check_fold("!(1e400 - 1e400)", "literal 0 bool\n");
    check_fold("abs(1 < 2)", "literal 1 bool\n");
    check_fold("maximum(1 < 2, 2 < 1)", "literal 1 bool\n");
    check_fold("(1 < 2) / (1 < 2)", "literal 1.0 f64\n");
    check_type_error("(1 < 2) - (1 < 2)", BCG_ERR_TYPE, 9,
                     "'-' at column 9 is not defined for two bools (use '^' or '!=' for logical xor)");
    check_type_error("-(1 < 2)", BCG_ERR_TYPE, 1,
                     "unary '-' at column 1 is not defined for bool (use '!' or '~' for logical not)");
}

static void fold_within_typed_expressions(void **state)
{
    (void)state;
    check_type("a + 2 * 3", "i8: (a + 6)");
    check_type("a + (100 + 27)", "i8: (a + 127)");
    check_type_error("a + (100 + 28)", BCG_ERR_TYPE, 10, "literal 128 at column 10 does not fit in i8");
    check_type("f * 2 ** 40", "f32: (f * 1099511600000.0)");   /* NumPy's repr of float32(2**40) */
    check_type("f + sqrt(4)", "f32: (f + 2.0)");   /* a folded function is a weak float */
    check_type("a + abs(-3)", "i8: (a + 3)");
    check_type("a + floor(2.5)", "f64: (a + 2.0)");
    check_type("a * -(3)", "i8: (a * (-3))");
    check_type("(a + 1) * (2 + 3)", "i8: ((a + 1) * 5)");
}

static void fold_errors(void **state)
{
    (void)state;
    check_type_error("1 / 0", BCG_ERR_TYPE, 3, "constant expression at column 3: division by zero");
    check_type_error("a + 1 // 0", BCG_ERR_TYPE, 7, "constant expression at column 7: division by zero");
    check_type_error("1 % 0", BCG_ERR_TYPE, 3, "constant expression at column 3: division by zero");
    check_type_error("1.0 // 0.0", BCG_ERR_TYPE, 5, "constant expression at column 5: division by zero");
    check_type_error("1 / (1 < 0)", BCG_ERR_TYPE, 3, "constant expression at column 3: division by zero");
    check_type_error("0 ** -1", BCG_ERR_TYPE, 3,
                     "constant expression at column 3: zero cannot be raised to a negative power");
    check_type_error("(-8.0) ** 0.5", BCG_ERR_TYPE, 8,
                     "constant expression at column 8: a negative number to a fractional power is complex");
    check_type_error("10.0 ** 400", BCG_ERR_TYPE, 6, "constant expression at column 6: float overflow in '**'");
    check_type_error("1 << -1", BCG_ERR_TYPE, 3, "constant expression at column 3: negative shift count");
    check_type_error("2 ** 64", BCG_ERR_TYPE, 3,
                     "constant expression at column 3: integer overflow (the result is outside [-2**63, 2**64-1])");
    check_type_error("18446744073709551615 + 1", BCG_ERR_TYPE, 22,
                     "constant expression at column 22: integer overflow (the result is outside [-2**63, 2**64-1])");
    check_type_error("-18446744073709551615", BCG_ERR_TYPE, 1,
                     "constant expression at column 1: integer overflow (the result is outside [-2**63, 2**64-1])");
    check_type_error("1 << 64", BCG_ERR_TYPE, 3,
                     "constant expression at column 3: integer overflow (the result is outside [-2**63, 2**64-1])");
    check_type_error("-9223372036854775808 - 1", BCG_ERR_TYPE, 22,
                     "constant expression at column 22: integer overflow (the result is outside [-2**63, 2**64-1])");
    check_type_error("4294967296 * 4294967296", BCG_ERR_TYPE, 12,
                     "constant expression at column 12: integer overflow (the result is outside [-2**63, 2**64-1])");
    check_type_error("9223372036854775807 + 1", BCG_ERR_TYPE, 21,
                     "literal 9223372036854775808 at column 21 does not fit in i64");
    check_type_error("2 ** 63", BCG_ERR_TYPE, 3, "literal 9223372036854775808 at column 3 does not fit in i64");
}

/* ---- dump and printing ------------------------------------------------------------------ */

static void dump_typed_tree(void **state)
{
    (void)state;
    check_dump_with("a * b + 1", "a:f32 b:f32",
                    "add f32\n"
                    "  mul f32\n"
                    "    operand a f32\n"
                    "    operand b f32\n"
                    "  literal 1.0 f32\n");
    check_dump_with("where(x > 0, x, -y)", "x:i16 y:u8",
                    "where i16\n"
                    "  gt bool\n"
                    "    operand x i16\n"
                    "    literal 0 i16\n"
                    "  operand x i16\n"
                    "  neg u8\n"
                    "    operand y u8\n");
    check_dump_with("f32(n) // 2 < 3 && !m", "n:u64 m:bool",
                    "and bool\n"
                    "  lt bool\n"
                    "    floordiv f32\n"
                    "      cast f32\n"
                    "        operand n u64\n"
                    "      literal 2.0 f32\n"
                    "    literal 3.0 f32\n"
                    "  not bool\n"
                    "    operand m bool\n");
}

static void dump_every_operator_word(void **state)
{
    (void)state;
    check_dump_with("(x | y) ^ (x & y) ^ (x << 1) ^ (x >> 1) ^ ~x ^ +x ^ (x % y) ^ (x ** 2)",
                    "x:i32 y:i32",
                    "bitxor i32\n"
                    "  bitxor i32\n"
                    "    bitxor i32\n"
                    "      bitxor i32\n"
                    "        bitxor i32\n"
                    "          bitxor i32\n"
                    "            bitxor i32\n"
                    "              bitor i32\n"
                    "                operand x i32\n"
                    "                operand y i32\n"
                    "              bitand i32\n"
                    "                operand x i32\n"
                    "                operand y i32\n"
                    "            shl i32\n"
                    "              operand x i32\n"
                    "              literal 1 i32\n"
                    "          shr i32\n"
                    "            operand x i32\n"
                    "            literal 1 i32\n"
                    "        bitnot i32\n"
                    "          operand x i32\n"
                    "      pos i32\n"
                    "        operand x i32\n"
                    "    mod i32\n"
                    "      operand x i32\n"
                    "      operand y i32\n"
                    "  pow i32\n"
                    "    operand x i32\n"
                    "    literal 2 i32\n");
    check_dump_with("(x == y) || (x != y) || (x <= y) || (x >= y) || (x - y < x / y)",
                    "x:u16 y:u16",
                    "or bool\n"
                    "  or bool\n"
                    "    or bool\n"
                    "      or bool\n"
                    "        eq bool\n"
                    "          operand x u16\n"
                    "          operand y u16\n"
                    "        ne bool\n"
                    "          operand x u16\n"
                    "          operand y u16\n"
                    "      le bool\n"
                    "        operand x u16\n"
                    "        operand y u16\n"
                    "    ge bool\n"
                    "      operand x u16\n"
                    "      operand y u16\n"
                    "  lt bool\n"
                    "    sub u16\n"
                    "      operand x u16\n"
                    "      operand y u16\n"
                    "    div f64\n"
                    "      operand x u16\n"
                    "      operand y u16\n");
    check_dump_with("clip(minimum(x, y), maximum(x, y), abs(y))", "x:f32 y:f32",
                    "clip f32\n"
                    "  minimum f32\n"
                    "    operand x f32\n"
                    "    operand y f32\n"
                    "  maximum f32\n"
                    "    operand x f32\n"
                    "    operand y f32\n"
                    "  abs f32\n"
                    "    operand y f32\n");
}

static void print_with_missing_names(void **state)
{
    (void)state;
    run r;
    run_expr(&r, "b + 1", "a b", false);
    strbuf sb;
    sb_init(&sb);
    expr_format(&sb, r.root, NULL);
    char *text = sb_finish(&sb);
    assert_string_equal(text, "(#1 + 1)");
    mem_free(text);
    run_done(&r);
}

static void format_reparses_to_the_same_tree(void **state)
{
    (void)state;
    static const char *const exprs[] = {
        "-a ** 2 * b // c % d", "where(a > 0, a, 0.1 * a)", "a | b ^ c & d << x >> y",
        "!a && b || c == d", "clip(a, -1.5, 1e20) + f32(b) - bool(c)", "a ** -b ** c",
        "(a + -1) ** 2", "sqrt(abs(a)) / (1e-7 + b)",
    };
    for (size_t k = 0; k < sizeof exprs / sizeof exprs[0]; k++) {
        run first, second;
        run_expr(&first, exprs[k], "a b c d x y", false);
        assert_int_equal(first.status, BCG_OK);
        run_expr(&second, first.text, "a b c d x y", false);
        assert_int_equal(second.status, BCG_OK);
        assert_string_equal(second.text, first.text);
        run_done(&first);
        run_done(&second);
    }
}

/* ---- API misuse and allocation failure --------------------------------------------------- */

static void bad_arguments(void **state)
{
    (void)state;
    arena *a = arena_new();
    env e;
    env_init(&e, "a");
    expr_node *root = (expr_node *)&e;   /* must be reset to NULL */
    bcg_error err;
    error_clear(&err);
    assert_int_equal(expr_parse(a, NULL, &e.table, &root, &err), BCG_ERR_USAGE);
    assert_null(root);
    assert_int_equal(expr_parse(NULL, "a", &e.table, &root, NULL), BCG_ERR_USAGE);
    assert_int_equal(expr_parse(a, "a", NULL, &root, NULL), BCG_ERR_USAGE);
    assert_int_equal(expr_parse(a, "a", &e.table, NULL, NULL), BCG_ERR_USAGE);
    assert_int_equal(expr_type(a, NULL, e.dtypes, 1, NULL), BCG_ERR_USAGE);
    assert_int_equal(expr_parse(a, "a", &e.table, &root, NULL), BCG_OK);
    assert_int_equal(expr_type(a, root, NULL, 1, NULL), BCG_ERR_USAGE);
    error_clear(&err);
    assert_int_equal(expr_type(a, root, e.dtypes, 0, &err), BCG_ERR_USAGE);   /* index 0 unknown */
    bcg_dtype bad = (bcg_dtype)99;
    assert_int_equal(expr_type(a, root, &bad, 1, NULL), BCG_ERR_USAGE);
    arena_free(a);
}

static void first_error_wins(void **state)
{
    (void)state;
    arena *a = arena_new();
    env e;
    env_init(&e, "a");
    expr_node *root;
    bcg_error err;
    error_clear(&err);
    assert_int_equal(expr_parse(a, "a #", &e.table, &root, &err), BCG_ERR_PARSE);
    assert_int_equal(expr_parse(a, "b", &e.table, &root, &err), BCG_ERR_PARSE);
    assert_string_equal(err.message, "unexpected character '#' at column 3");
    assert_int_equal(err.column, 3);
    assert_int_equal(err.operand, -1);
    arena_free(a);
}

static void allocation_failure(void **state)
{
    (void)state;
    /* a long expression so the arena needs more than one block */
    char *text = repeat("where(a > 0, a, 0.1 * a)", " + a * 2.5", 150, "", 0);
    env e;
    env_init(&e, "a:f32");
    bool succeeded = false;
    for (long n = 1; n < 200 && !succeeded; n++) {
        arena *a = arena_new();
        assert_non_null(a);
        expr_node *root = NULL;
        bcg_error err;
        error_clear(&err);
        mem_fail_after(n);
        bcg_status status = expr_parse(a, text, &e.table, &root, &err);
        if (status == BCG_OK)
            status = expr_type(a, root, e.dtypes, 1, &err);
        mem_fail_after(0);
        if (status == BCG_OK) {
            succeeded = true;
            assert_int_equal(root->dtype, BCG_F32);
        } else {
            assert_int_equal(status, BCG_ERR_NOMEM);
            assert_int_equal(err.status, BCG_ERR_NOMEM);
        }
        arena_free(a);
    }
    assert_true(succeeded);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(literal_forms),
        cmocka_unit_test(whitespace_and_spacing),
        cmocka_unit_test(precedence_arithmetic),
        cmocka_unit_test(precedence_power_and_unary),
        cmocka_unit_test(precedence_bitwise_and_shifts),
        cmocka_unit_test(precedence_comparisons_and_logic),
        cmocka_unit_test(functions_and_calls),
        cmocka_unit_test(casts_parse),
        cmocka_unit_test(operand_names_shadow_nothing),
        cmocka_unit_test(tree_holds_indices_and_columns),
        cmocka_unit_test(op_names),
        cmocka_unit_test(error_unexpected_characters),
        cmocka_unit_test(error_unknown_names),
        cmocka_unit_test(error_long_names_are_clipped),
        cmocka_unit_test(error_argument_counts),
        cmocka_unit_test(error_unbalanced),
        cmocka_unit_test(error_empty_trailing_missing),
        cmocka_unit_test(error_chained_comparisons),
        cmocka_unit_test(error_bad_numbers),
        cmocka_unit_test(limit_parentheses),
        cmocka_unit_test(limit_depth_message),
        cmocka_unit_test(limit_unary_power_and_calls),
        cmocka_unit_test(limit_tree_height),
        cmocka_unit_test(limit_same_for_every_construct),
        cmocka_unit_test(limit_length),
        cmocka_unit_test(hostile_c_fragments),
        cmocka_unit_test(hostile_nul_ends_the_text),
        cmocka_unit_test(hostile_random_bytes),
        cmocka_unit_test(type_array_promotion),
        cmocka_unit_test(type_weak_int_literals),
        cmocka_unit_test(type_weak_float_literals),
        cmocka_unit_test(type_f32_literal_value_is_rounded),
        cmocka_unit_test(type_literal_only_roots),
        cmocka_unit_test(type_bool_rules),
        cmocka_unit_test(type_float_bitwise_rejected),
        cmocka_unit_test(type_division),
        cmocka_unit_test(type_comparisons_and_logic),
        cmocka_unit_test(type_operation_types),
        cmocka_unit_test(type_functions),
        cmocka_unit_test(type_where_and_clip),
        cmocka_unit_test(type_casts),
        cmocka_unit_test(cast_folding),
        cmocka_unit_test(fold_integers),
        cmocka_unit_test(fold_bitwise_and_shifts),
        cmocka_unit_test(fold_floats),
        cmocka_unit_test(fold_bools),
        cmocka_unit_test(fold_within_typed_expressions),
        cmocka_unit_test(fold_errors),
        cmocka_unit_test(dump_typed_tree),
        cmocka_unit_test(dump_every_operator_word),
        cmocka_unit_test(print_with_missing_names),
        cmocka_unit_test(format_reparses_to_the_same_tree),
        cmocka_unit_test(bad_arguments),
        cmocka_unit_test(first_error_wins),
        cmocka_unit_test(allocation_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
