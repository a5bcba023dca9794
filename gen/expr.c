/* expr.c - the expression front end: a hand-written tokenizer, a
 * precedence-climbing parser that resolves names to operand indices, and the
 * typing pass that applies NumPy's promotion with weak literals (NEP 50) and
 * folds literal-only subtrees.  This file is a security boundary: the tree it
 * builds holds only op codes, operand indices and numeric values, never text
 * from the user, so nothing the user writes can reach the generated C.
 *
 * Lexical rules: identifiers [A-Za-z_][A-Za-z0-9_]*; integers 123 and 0x7f
 * (at most 2**64-1; a decimal integer may not start with 0 unless it is 0,
 * so C's octal 010 is never misread); floats 1.5 1. .5 1e-3 2.5E+4 (read
 * locale-independently); the punctuators below; spaces and tabs.  Any other
 * byte (control characters, non-ASCII, quotes, '#', ';', '\\', braces ...)
 * is an error with its 1-based byte column.
 *
 * Grammar, lowest precedence first (Python's order):
 *
 *   expr    := or
 *   or      := and ('||' and)*
 *   and     := cmp ('&&' cmp)*
 *   cmp     := bitor [('==' | '!=' | '<' | '<=' | '>' | '>=') bitor]
 *   bitor   := bitxor ('|' bitxor)*
 *   bitxor  := bitand ('^' bitand)*
 *   bitand  := shift ('&' shift)*
 *   shift   := sum (('<<' | '>>') sum)*
 *   sum     := term (('+' | '-') term)*
 *   term    := unary (('*' | '/' | '//' | '%') unary)*
 *   unary   := ('-' | '+' | '~' | '!') unary | power
 *   power   := primary ['**' unary]          right-associative; -a**2 is -(a**2)
 *   primary := number | name | name '(' [expr (',' expr)*] ')' | '(' expr ')'
 *
 * Comparisons do not chain: `a < b < c` (Python's a < b and b < c) is an
 * error rather than C's (a < b) < c; write the parentheses you mean.
 *
 * Names: an identifier followed by '(' is a function (abs sqrt exp log sin
 * cos tanh floor ceil, minimum maximum pow, where clip, and the casts bool
 * i8 ... f64 / int8 ... float64); any other identifier is an operand.  So an
 * operand may be called `exp` or `f32`: `exp + 1` reads the operand and
 * `exp(x)` calls the function.
 *
 * Limits: text longer than BCG_MAX_EXPR bytes, and nesting deeper than
 * BCG_MAX_DEPTH, are BCG_ERR_LIMIT errors.  One rule for every construct:
 * the nesting of an operand or literal is the number of parentheses and
 * operators (unary, binary, '**', calls and casts) around it, and at most
 * BCG_MAX_DEPTH (200) is accepted: 200 parentheses around `a`, 200 unary
 * minuses, 200 nested calls, a ** a ** ... with 200 '**', and a chain
 * a+b+c+... of 200 operators (a left-deep tree) all parse, one more does
 * not.  It is checked twice: while parsing (each '(', call, unary operator
 * and '**' exponent enters a level, so "((((..." or "-----a" of any length
 * stops at level 201 without deep C recursion), and as the height of the
 * finished tree, where a pair of parentheses counts as a level too, so
 * every later pass (typing, emitting, evaluating, printing) may recurse
 * over a tree of at most BCG_MAX_DEPTH + 1 nodes from root to leaf.
 *
 * Typing (expr_type; docs/semantics.md "Types" and each operator's section).
 * During typing a subtree is either strong (it has a dtype: operands, and
 * anything computed from them) or a weak literal: a Python bool, int or
 * float.  Weak ints are kept exact in [-2**63, 2**64-1].  A node whose
 * children are all weak is folded into one weak OP_LITERAL with Python's
 * arithmetic (ints exact, an overflow beyond that range is an error; floats
 * in double; int / int gives a float; // and % floor as Python does; ** with
 * a negative int exponent gives a float; 0 ** -1, x // 0, x % 0, x / 0, a
 * negative base to a fractional power and a float ** that overflows are
 * errors, as Python raises).  Where Python and NumPy disagree on bools, the
 * NumPy rules of docs/semantics.md win, so a folded constant means what the
 * same expression over bool arrays means: True + True is True, True - True
 * and -True are errors, ~True is False.  sqrt, exp, log, sin, cos, tanh,
 * floor and ceil of a literal fold in double with the C library (sqrt(-1)
 * is nan, as in NumPy; Python's math module would raise) and give a weak
 * float.  Comparisons mixing an int and a float literal compare in double,
 * and int / int divides the two converted doubles: beyond 2**53 either may
 * differ from Python's exact result by an ulp.
 * A cast of a literal (weak, or already cast) folds into a strong literal
 * of the cast's type, converted as the runtime converts (wrap, truncate,
 * saturate, NaN -> 0).  Operations on such typed literals are not folded:
 * they follow the typed rules and are left to the emitter.
 *
 * When a weak literal meets a strong subtree, the promotion of the node
 * (promote_all) decides its type: an int literal takes an integer or float
 * partner's type (and must fit an integer one), is i64 next to bool; a
 * float literal takes a float partner's type and is f64 otherwise; a bool
 * literal takes the partner's type.  The literal is then stored in that
 * type (`concretize`).  A literal that is only truth-tested (an operand of
 * && or || beside a strong one, where's condition) becomes a bool literal
 * holding its truth, never a range error, as NumPy's logical functions
 * accept any Python number.  A literal-only root takes the literal's own
 * type: bool, i64 or f64; an int must fit in i64.
 *
 * Operation types.  No implicit cast nodes are inserted: each child keeps
 * its own dtype and the emitter/evaluator converts child values to the
 * node's operation type, given by expr_operation_type():
 *
 *   op                       operation type           node dtype
 *   operand, literal         dtype                    dtype
 *   - + ~ abs                the child's              same
 *   sqrt exp log sin cos     dtype_float_for(child)   same
 *     tanh floor ceil
 *   cast T(x)                the child's: a cast      T
 *                            computes nothing; converting to T is the cast
 *   ! && ||                  bool: each child is      bool
 *                            truth-tested (non-zero, NaN is true) in its own type
 *   == != < <= > >=          promote(left, right)     bool
 *                            e.g. i8 < f32 compares in f32
 *   & | ^                    promote(children)        same (floats rejected)
 *   << >>                    promote; bool,bool: i8   same (floats rejected)
 *   + * minimum maximum      promote(children)        same (bool+bool: or,
 *                                                     bool*bool: and)
 *   -                        promote (bool - bool rejected)
 *   /                        promote if a float,      same
 *                            else f64 (i8 / i8 is f64)
 *   // % ** pow              promote; bool,bool: i8   same
 *   where(c, x, y)           promote(x, y); c is      same
 *                            truth-tested in its own type
 *   clip(x, lo, hi)          promote(x, lo, hi)       same
 *
 * After expr_type every node has a concrete dtype, every literal's value is
 * stored in it (value.i for signed and bool, value.u for unsigned, value.f
 * for floats; an f32 literal holds the double of the rounded float), and for
 * every node except comparisons, !, &&, || and casts, the operation type is
 * the node's dtype.
 */
#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- operator and function tables ---------------------------------------- */

/* The names, the parser's functions (the rows with a `call` name) and the
 * typing rules are op_table's (gen/ops.h). */

/* Binary precedence levels, lowest first; 0 = not a binary operator. */
enum {
    PREC_NONE, PREC_OR, PREC_AND, PREC_COMPARE, PREC_BITOR, PREC_BITXOR,
    PREC_BITAND, PREC_SHIFT, PREC_SUM, PREC_TERM
};

typedef struct punctuator {
    const char *text;
    int precedence;        /* as a binary operator */
    expr_op binary_op;
    expr_op unary_op;      /* OP_COUNT when not a unary operator */
} punctuator;

/* Longest first, so "**" is found before "*". */
static const punctuator punctuators[] = {
    {"**", PREC_NONE, OP_COUNT, OP_COUNT},   /* handled by parse_power */
    {"//", PREC_TERM, OP_FLOORDIV, OP_COUNT},
    {"<<", PREC_SHIFT, OP_SHL, OP_COUNT},
    {">>", PREC_SHIFT, OP_SHR, OP_COUNT},
    {"<=", PREC_COMPARE, OP_LE, OP_COUNT},
    {">=", PREC_COMPARE, OP_GE, OP_COUNT},
    {"==", PREC_COMPARE, OP_EQ, OP_COUNT},
    {"!=", PREC_COMPARE, OP_NE, OP_COUNT},
    {"&&", PREC_AND, OP_AND, OP_COUNT},
    {"||", PREC_OR, OP_OR, OP_COUNT},
    {"+", PREC_SUM, OP_ADD, OP_POS},
    {"-", PREC_SUM, OP_SUB, OP_NEG},
    {"*", PREC_TERM, OP_MUL, OP_COUNT},
    {"/", PREC_TERM, OP_DIV, OP_COUNT},
    {"%", PREC_TERM, OP_MOD, OP_COUNT},
    {"~", PREC_NONE, OP_COUNT, OP_BITNOT},
    {"!", PREC_NONE, OP_COUNT, OP_NOT},
    {"&", PREC_BITAND, OP_BITAND, OP_COUNT},
    {"^", PREC_BITXOR, OP_BITXOR, OP_COUNT},
    {"|", PREC_BITOR, OP_BITOR, OP_COUNT},
    {"<", PREC_COMPARE, OP_LT, OP_COUNT},
    {">", PREC_COMPARE, OP_GT, OP_COUNT},
    {"(", PREC_NONE, OP_COUNT, OP_COUNT},
    {")", PREC_NONE, OP_COUNT, OP_COUNT},
    {",", PREC_NONE, OP_COUNT, OP_COUNT},
};

const char *expr_op_name(expr_op op)
{
    return (unsigned)op < OP_COUNT ? op_table[op].symbol : "?";
}

/* ---- tokenizer ------------------------------------------------------------ */

typedef enum token_kind { TOKEN_END, TOKEN_NAME, TOKEN_NUMBER, TOKEN_PUNCT } token_kind;

typedef struct token {
    token_kind kind;
    int column;                 /* 1-based */
    const char *start;
    size_t length;
    const punctuator *punct;    /* TOKEN_PUNCT */
    bool is_float;              /* TOKEN_NUMBER */
    uint64_t int_value;
    double float_value;
} token;

typedef struct parser {
    arena *arena;
    const char *text;
    size_t length;
    size_t position;            /* where the next token starts looking */
    token token;                /* the current token */
    const expr_names *names;
    int depth;                  /* parse levels entered (see "Limits") */
    bcg_error *err;
} parser;

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

static int hex_value(char c)
{
    if (is_digit(c))
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static bool is_punct(const token *t, const char *text)
{
    return t->kind == TOKEN_PUNCT && strcmp(t->punct->text, text) == 0;
}

/* User text quoted in messages is at most this long (it is never code). */
enum { QUOTE_MAX = 40 };

/* "end of the expression", "'+'", "name 'abc'", "number '12'" */
static void describe_token(const token *t, char *buf, size_t cap)
{
    int n = t->length > QUOTE_MAX ? QUOTE_MAX : (int)t->length;
    const char *more = t->length > QUOTE_MAX ? "..." : "";
    switch (t->kind) {
    case TOKEN_END: snprintf(buf, cap, "the end of the expression"); break;
    case TOKEN_NAME: snprintf(buf, cap, "name '%.*s%s'", n, t->start, more); break;
    case TOKEN_NUMBER: snprintf(buf, cap, "number '%.*s%s'", n, t->start, more); break;
    default: snprintf(buf, cap, "'%s'", t->punct->text); break;
    }
}

static bcg_status nomem(bcg_error *err)
{
    return fail(err, BCG_ERR_NOMEM, "out of memory while reading the expression");
}

static bcg_status malformed_number(parser *p, size_t start, size_t end)
{
    /* Show the whole run of number-like characters: "1e", "1.2.3", "12abc". */
    while (end < p->length && (is_name_char(p->text[end]) || p->text[end] == '.'))
        end++;
    size_t n = end - start;
    return fail_at(p->err, BCG_ERR_PARSE, (int)start + 1, -1, -1,
                   "malformed number '%.*s%s' at column %d",
                   (int)(n > QUOTE_MAX ? QUOTE_MAX : n), p->text + start,
                   n > QUOTE_MAX ? "..." : "", (int)start + 1);
}

/* Decimal digits (int part, fraction) and a decimal exponent to a double,
 * correctly rounded by strtod but without its locale's decimal point: the
 * digits are passed as one integer with an adjusted exponent, "15e2". */
static bcg_status decimal_to_double(parser *p, const char *int_digits, size_t int_count,
                                    const char *fraction, size_t fraction_count,
                                    long exponent, double *out)
{
    char *digits = arena_alloc(p->arena, int_count + fraction_count + 32);
    if (!digits)
        return nomem(p->err);
    size_t n = 0;
    for (size_t i = 0; i < int_count; i++)
        if (n > 0 || int_digits[i] != '0')
            digits[n++] = int_digits[i];
    for (size_t i = 0; i < fraction_count; i++)
        if (n > 0 || fraction[i] != '0')
            digits[n++] = fraction[i];
    if (n == 0) {
        *out = 0.0;
        return BCG_OK;
    }
    snprintf(digits + n, 32, "e%ld", exponent - (long)fraction_count);
    *out = strtod(digits, NULL);   /* overflow gives inf, underflow 0, as Python */
    return BCG_OK;
}

static bcg_status lex_number(parser *p, size_t start)
{
    const char *s = p->text;
    size_t i = start;
    token *t = &p->token;
    t->is_float = false;
    t->int_value = 0;
    if (s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
        i += 2;
        size_t first = i;
        for (; hex_value(s[i]) >= 0; i++) {
            if (t->int_value >> 60)
                return fail_at(p->err, BCG_ERR_PARSE, (int)start + 1, -1, -1,
                               "integer literal at column %d is larger than 2**64-1",
                               (int)start + 1);
            t->int_value = t->int_value << 4 | (uint64_t)hex_value(s[i]);
        }
        if (i == first || is_name_char(s[i]) || s[i] == '.')
            return malformed_number(p, start, i);
    } else {
        size_t int_start = i;
        while (is_digit(s[i]))
            i++;
        size_t int_count = i - int_start, fraction_start = i, fraction_count = 0;
        if (s[i] == '.') {
            t->is_float = true;
            fraction_start = ++i;
            while (is_digit(s[i]))
                i++;
            fraction_count = i - fraction_start;
        }
        long exponent = 0;
        if (s[i] == 'e' || s[i] == 'E') {
            size_t j = i + 1;
            bool negative = s[j] == '-';
            if (s[j] == '+' || s[j] == '-')
                j++;
            if (!is_digit(s[j]))
                return malformed_number(p, start, j);
            for (; is_digit(s[j]); j++)
                if (exponent < 1000000)   /* far past any double; stops overflow */
                    exponent = exponent * 10 + (s[j] - '0');
            exponent = negative ? -exponent : exponent;
            t->is_float = true;
            i = j;
        }
        if (is_name_char(s[i]) || s[i] == '.')
            return malformed_number(p, start, i);
        if (t->is_float) {
            bcg_status status = decimal_to_double(p, s + int_start, int_count, s + fraction_start,
                                                  fraction_count, exponent, &t->float_value);
            if (status != BCG_OK)
                return status;
        } else {
            if (int_count > 1 && s[int_start] == '0')
                return fail_at(p->err, BCG_ERR_PARSE, (int)start + 1, -1, -1,
                               "integer literal '%.*s' at column %d has a leading zero "
                               "(octal is not supported; write 0x for hex)",
                               (int)(int_count > QUOTE_MAX ? QUOTE_MAX : int_count),
                               s + int_start, (int)start + 1);
            for (size_t k = int_start; k < i; k++) {
                uint64_t digit = (uint64_t)(s[k] - '0');
                if (t->int_value > (UINT64_MAX - digit) / 10)
                    return fail_at(p->err, BCG_ERR_PARSE, (int)start + 1, -1, -1,
                                   "integer literal at column %d is larger than 2**64-1",
                                   (int)start + 1);
                t->int_value = t->int_value * 10 + digit;
            }
        }
    }
    t->kind = TOKEN_NUMBER;
    t->length = i - start;
    p->position = i;
    return BCG_OK;
}

/* Reads the next token into p->token. */
static bcg_status next_token(parser *p)
{
    const char *s = p->text;
    size_t i = p->position;
    while (i < p->length && (s[i] == ' ' || s[i] == '\t'))
        i++;
    token *t = &p->token;
    memset(t, 0, sizeof *t);
    t->start = s + i;
    t->column = (int)i + 1;
    if (i >= p->length) {
        t->kind = TOKEN_END;
        p->position = i;
        return BCG_OK;
    }
    char c = s[i];
    if (is_name_start(c)) {
        size_t end = i;
        while (is_name_char(s[end]))
            end++;
        t->kind = TOKEN_NAME;
        t->length = end - i;
        p->position = end;
        return BCG_OK;
    }
    if (is_digit(c) || (c == '.' && is_digit(s[i + 1])))
        return lex_number(p, i);
    for (size_t k = 0; k < sizeof punctuators / sizeof punctuators[0]; k++) {
        size_t n = strlen(punctuators[k].text);
        if (strncmp(s + i, punctuators[k].text, n) == 0) {
            t->kind = TOKEN_PUNCT;
            t->punct = &punctuators[k];
            t->length = n;
            p->position = i + n;
            return BCG_OK;
        }
    }
    unsigned char byte = (unsigned char)c;
    if (byte == '=')
        return fail_at(p->err, BCG_ERR_PARSE, t->column, -1, -1,
                       "unexpected character '=' at column %d (comparison is '==')", t->column);
    if (byte >= 0x20 && byte < 0x7f)
        return fail_at(p->err, BCG_ERR_PARSE, t->column, -1, -1,
                       "unexpected character '%c' at column %d", c, t->column);
    return fail_at(p->err, BCG_ERR_PARSE, t->column, -1, -1,
                   "unexpected character '\\x%02x' at column %d", byte, t->column);
}

/* ---- parser ---------------------------------------------------------------- */

static bcg_status depth_error(parser *p, int column)
{
    return fail_at(p->err, BCG_ERR_LIMIT, column, -1, -1,
                   "expression nests deeper than BCG_MAX_DEPTH (%d levels) at column %d",
                   BCG_MAX_DEPTH, column);
}

static bcg_status enter(parser *p, int column)
{
    if (++p->depth > BCG_MAX_DEPTH)
        return depth_error(p, column);
    return BCG_OK;
}

/* A node with COUNT children; *height gets the subtree's height (a leaf is
 * 1), which must stay within BCG_MAX_DEPTH + 1 (BCG_MAX_DEPTH levels of
 * nesting above the leaf) so later passes can recurse. */
static bcg_status make_node(parser *p, expr_op op, int column, int count, expr_node *const *args,
                            const int *heights, expr_node **out, int *height)
{
    int h = 1;
    for (int i = 0; i < count; i++)
        if (heights[i] + 1 > h)
            h = heights[i] + 1;
    if (h > BCG_MAX_DEPTH + 1)
        return depth_error(p, column);
    expr_node *n = arena_alloc(p->arena, sizeof *n);
    if (!n)
        return nomem(p->err);
    n->op = op;
    n->column = column;
    n->operand = -1;
    n->arg_count = count;
    for (int i = 0; i < count; i++)
        n->args[i] = args[i];
    *out = n;
    *height = h;
    return BCG_OK;
}

static bcg_status unexpected(parser *p, const char *wanted)
{
    char what[96];
    describe_token(&p->token, what, sizeof what);
    return fail_at(p->err, BCG_ERR_PARSE, p->token.column, -1, -1,
                   "expected %s at column %d, found %s", wanted, p->token.column, what);
}

static int find_operand(const parser *p, const char *name, size_t n)
{
    for (int i = 0; i < p->names->count; i++) {
        const char *candidate = p->names->names ? p->names->names[i] : NULL;
        if (candidate && strlen(candidate) == n && memcmp(candidate, name, n) == 0)
            return i;
    }
    return -1;
}

/* Finds function NAME: *op, *arity, *cast_to; false if there is none. */
static bool find_function(const char *name, size_t n, expr_op *op, int *arity,
                          const char **parameters, bcg_dtype *cast_to)
{
    for (int k = 0; k < OP_COUNT; k++) {
        const char *call = op_table[k].call;
        if (call && strlen(call) == n && memcmp(call, name, n) == 0) {
            *op = (expr_op)k;
            *arity = op_table[k].arity;
            *parameters = op_table[k].params;
            return true;
        }
    }
    if (dtype_from_text(name, n, cast_to)) {
        *op = OP_CAST;
        *arity = 1;
        *parameters = "x";
        return true;
    }
    return false;
}

/* "abs, sqrt, ..., clip and the casts bool(x), i8(x), ... f64(x)": the
 * functions table and the dtype names, for the unknown-function message. */
static void known_functions(char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (int k = 0; k < OP_COUNT && n < cap; k++)
        if (op_table[k].call)
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", op_table[k].call);
    for (int d = 0; d < BCG_DTYPE_COUNT && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s(x)", d ? ", " : " and the casts ",
                              bcg_dtype_name((bcg_dtype)d));
}

static bcg_status unknown_name(parser *p, const token *name)
{
    strbuf list;
    sb_init(&list);
    for (int i = 0; i < p->names->count && list.len < 300; i++) {
        const char *candidate = p->names->names ? p->names->names[i] : NULL;
        sb_printf(&list, "%s%s", i ? ", " : "", candidate ? candidate : "?");
    }
    if (list.len >= 300)
        sb_puts(&list, ", ...");
    int n = name->length > QUOTE_MAX ? QUOTE_MAX : (int)name->length;
    bcg_status status;
    if (list.failed) {
        status = nomem(p->err);
    } else if (list.len == 0) {
        status = fail_at(p->err, BCG_ERR_PARSE, name->column, -1, -1,
                         "unknown name '%.*s%s' at column %d (there are no operands)", n,
                         name->start, name->length > QUOTE_MAX ? "..." : "", name->column);
    } else {
        status = fail_at(p->err, BCG_ERR_PARSE, name->column, -1, -1,
                         "unknown name '%.*s%s' at column %d (operands are %s)", n,
                         name->start, name->length > QUOTE_MAX ? "..." : "", name->column,
                         list.data);
    }
    sb_free(&list);
    return status;
}

static bcg_status parse_binary(parser *p, int min_precedence, expr_node **out, int *height);

/* NAME '(' args ')': the current token is the '('. */
static bcg_status parse_call(parser *p, const token *name, expr_node **out, int *height)
{
    expr_op op;
    int arity;
    const char *parameters;
    bcg_dtype cast_to = BCG_BOOL;
    int n = name->length > QUOTE_MAX ? QUOTE_MAX : (int)name->length;
    const char *more = name->length > QUOTE_MAX ? "..." : "";
    if (!find_function(name->start, name->length, &op, &arity, &parameters, &cast_to)) {
        if (find_operand(p, name->start, name->length) >= 0)
            return fail_at(p->err, BCG_ERR_PARSE, name->column, -1, -1,
                           "'%.*s' at column %d is an operand, not a function", n,
                           name->start, name->column);
        char known[256];
        known_functions(known, sizeof known);
        return fail_at(p->err, BCG_ERR_PARSE, name->column, -1, -1,
                       "unknown function '%.*s%s' at column %d; known: %s", n, name->start,
                       more, name->column, known);
    }
    bcg_status status = enter(p, name->column);
    if (status != BCG_OK)
        return status;
    if ((status = next_token(p)) != BCG_OK)
        return status;
    expr_node *args[3] = {NULL, NULL, NULL};
    int heights[3] = {0, 0, 0};
    int count = 0;
    if (!is_punct(&p->token, ")")) {
        for (;;) {
            expr_node *arg;
            int h;
            if ((status = parse_binary(p, PREC_OR, &arg, &h)) != BCG_OK)
                return status;
            if (count < 3) {
                args[count] = arg;
                heights[count] = h;
            }
            count++;
            if (!is_punct(&p->token, ","))
                break;
            if ((status = next_token(p)) != BCG_OK)
                return status;
        }
    }
    if (!is_punct(&p->token, ")")) {
        char what[96];
        describe_token(&p->token, what, sizeof what);
        return fail_at(p->err, BCG_ERR_PARSE, p->token.column, -1, -1,
                       "missing ')' at column %d to close the call of %.*s at column %d "
                       "(found %s)", p->token.column, n, name->start, name->column, what);
    }
    if (count != arity)
        return fail_at(p->err, BCG_ERR_PARSE, name->column, -1, -1,
                       "%.*s at column %d takes %d argument%s (%s), got %d", n, name->start,
                       name->column, arity, arity == 1 ? "" : "s", parameters, count);
    if ((status = next_token(p)) != BCG_OK)
        return status;
    p->depth--;
    if ((status = make_node(p, op, name->column, count, args, heights, out, height)) != BCG_OK)
        return status;
    (*out)->cast_to = cast_to;
    return BCG_OK;
}

static bcg_status parse_primary(parser *p, expr_node **out, int *height)
{
    bcg_status status;
    token t = p->token;
    if (t.kind == TOKEN_NUMBER) {
        if ((status = make_node(p, OP_LITERAL, t.column, 0, NULL, NULL, out, height)) != BCG_OK)
            return status;
        expr_node *n = *out;
        /* Until expr_type decides, a literal reads as i64, u64 or f64, so
         * the untyped tree prints correctly. */
        n->literal_is_float = t.is_float;
        if (t.is_float) {
            n->dtype = BCG_F64;
            n->value.f = t.float_value;
        } else if (t.int_value <= INT64_MAX) {
            n->dtype = BCG_I64;
            n->value.i = (int64_t)t.int_value;
        } else {
            n->dtype = BCG_U64;
            n->value.u = t.int_value;
        }
        return next_token(p);
    }
    if (t.kind == TOKEN_NAME) {
        if ((status = next_token(p)) != BCG_OK)
            return status;
        if (is_punct(&p->token, "("))
            return parse_call(p, &t, out, height);
        int index = find_operand(p, t.start, t.length);
        if (index < 0) {
            expr_op op;
            int arity;
            const char *parameters;
            bcg_dtype cast_to;
            if (find_function(t.start, t.length, &op, &arity, &parameters, &cast_to))
                return fail_at(p->err, BCG_ERR_PARSE, t.column, -1, -1,
                               "'%.*s' at column %d is a function: call it as %.*s(%s)",
                               (int)t.length, t.start, t.column, (int)t.length, t.start,
                               parameters);
            return unknown_name(p, &t);
        }
        if ((status = make_node(p, OP_OPERAND, t.column, 0, NULL, NULL, out, height)) != BCG_OK)
            return status;
        (*out)->operand = index;
        return BCG_OK;
    }
    if (is_punct(&t, "(")) {
        if ((status = enter(p, t.column)) != BCG_OK || (status = next_token(p)) != BCG_OK)
            return status;
        if ((status = parse_binary(p, PREC_OR, out, height)) != BCG_OK)
            return status;
        if (!is_punct(&p->token, ")")) {
            char what[96];
            describe_token(&p->token, what, sizeof what);
            return fail_at(p->err, BCG_ERR_PARSE, p->token.column, -1, -1,
                           "missing ')' at column %d to close '(' at column %d (found %s)",
                           p->token.column, t.column, what);
        }
        p->depth--;
        if (++*height > BCG_MAX_DEPTH + 1)   /* the parentheses are a level too */
            return depth_error(p, t.column);
        return next_token(p);
    }
    if (t.kind == TOKEN_END)
        return fail_at(p->err, BCG_ERR_PARSE, t.column, -1, -1,
                       "expected an operand at column %d, found the end of the expression",
                       t.column);
    return unexpected(p, "an operand");
}

static bcg_status parse_unary(parser *p, expr_node **out, int *height);

static bcg_status parse_power(parser *p, expr_node **out, int *height)
{
    expr_node *args[2];
    int heights[2];
    bcg_status status = parse_primary(p, &args[0], &heights[0]);
    if (status != BCG_OK || !is_punct(&p->token, "**")) {
        *out = args[0];
        *height = heights[0];
        return status;
    }
    int column = p->token.column;
    if ((status = enter(p, column)) != BCG_OK || (status = next_token(p)) != BCG_OK ||
        (status = parse_unary(p, &args[1], &heights[1])) != BCG_OK)
        return status;
    p->depth--;
    return make_node(p, OP_POW, column, 2, args, heights, out, height);
}

static bcg_status parse_unary(parser *p, expr_node **out, int *height)
{
    if (p->token.kind != TOKEN_PUNCT || p->token.punct->unary_op == OP_COUNT)
        return parse_power(p, out, height);
    expr_op op = p->token.punct->unary_op;
    int column = p->token.column;
    expr_node *child;
    int child_height;
    bcg_status status;
    if ((status = enter(p, column)) != BCG_OK || (status = next_token(p)) != BCG_OK ||
        (status = parse_unary(p, &child, &child_height)) != BCG_OK)
        return status;
    p->depth--;
    return make_node(p, op, column, 1, &child, &child_height, out, height);
}

/* Precedence climbing: operators of MIN_PRECEDENCE and above, left-assoc. */
static bcg_status parse_binary(parser *p, int min_precedence, expr_node **out, int *height)
{
    expr_node *args[2];
    int heights[2];
    bcg_status status = parse_unary(p, &args[0], &heights[0]);
    bool left_is_comparison = false;
    while (status == BCG_OK) {
        const token *t = &p->token;
        if (t->kind != TOKEN_PUNCT || t->punct->precedence == PREC_NONE ||
            t->punct->precedence < min_precedence)
            break;
        int precedence = t->punct->precedence, column = t->column;
        expr_op op = t->punct->binary_op;
        if (precedence == PREC_COMPARE && left_is_comparison)
            return fail_at(p->err, BCG_ERR_PARSE, column, -1, -1,
                           "comparisons do not chain: '%s' at column %d follows another "
                           "comparison; write (a < b) && (b < c) or add parentheses",
                           t->punct->text, column);
        if ((status = next_token(p)) != BCG_OK ||
            (status = parse_binary(p, precedence + 1, &args[1], &heights[1])) != BCG_OK)
            return status;
        status = make_node(p, op, column, 2, args, heights, &args[0], &heights[0]);
        left_is_comparison = precedence == PREC_COMPARE;
    }
    *out = args[0];
    *height = heights[0];
    return status;
}

bcg_status expr_parse(arena *a, const char *text, const expr_names *names,
                      expr_node **root, bcg_error *err)
{
    if (root)
        *root = NULL;
    if (!a || !text || !names || !root || names->count < 0)
        return fail(err, BCG_ERR_USAGE, "expr_parse: missing arena, text, names or result");
    size_t length = strnlen(text, (size_t)BCG_MAX_EXPR + 1);
    if (length > BCG_MAX_EXPR)
        return fail_at(err, BCG_ERR_LIMIT, BCG_MAX_EXPR + 1, -1, -1,
                       "expression is longer than BCG_MAX_EXPR (%d bytes)", BCG_MAX_EXPR);
    parser p = {.arena = a, .text = text, .length = length, .names = names, .err = err};
    bcg_status status = next_token(&p);
    if (status != BCG_OK)
        return status;
    if (p.token.kind == TOKEN_END)
        return fail_at(err, BCG_ERR_PARSE, 1, -1, -1, "empty expression");
    expr_node *tree;
    int height;
    if ((status = parse_binary(&p, PREC_OR, &tree, &height)) != BCG_OK)
        return status;
    if (p.token.kind != TOKEN_END) {
        if (is_punct(&p.token, ")"))
            return fail_at(err, BCG_ERR_PARSE, p.token.column, -1, -1,
                           "unmatched ')' at column %d", p.token.column);
        return unexpected(&p, "an operator or the end of the expression");
    }
    assert(p.depth == 0);
    *root = tree;
    return BCG_OK;
}

/* ---- exact integers for folding --------------------------------------------- */

/* A Python int within [-2**63, 2**64-1], as sign and magnitude; zero is
 * never negative.  Operations return false when the exact result leaves
 * that range. */
typedef struct exact {
    bool negative;
    uint64_t magnitude;
} exact;

static const uint64_t SIGN_BIT = (uint64_t)1 << 63;

static bool exact_normalize(exact *v)
{
    if (v->magnitude == 0)
        v->negative = false;
    return !v->negative || v->magnitude <= SIGN_BIT;
}

static exact exact_of(bool negative, uint64_t magnitude)
{
    exact v = {negative, magnitude};
    exact_normalize(&v);
    return v;
}

static exact exact_from_i64(int64_t v)
{
    return exact_of(v < 0, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
}

/* Two's complement reinterpretation without implementation-defined casts. */
static int64_t to_signed(uint64_t u)
{
    return u <= INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}

static double exact_to_double(exact v)
{
    return v.negative ? -(double)v.magnitude : (double)v.magnitude;
}

static bool exact_add(exact a, exact b, exact *out)
{
    if (a.negative == b.negative) {
        if (a.magnitude > UINT64_MAX - b.magnitude)
            return false;
        *out = (exact){a.negative, a.magnitude + b.magnitude};
    } else if (a.magnitude >= b.magnitude) {
        *out = (exact){a.negative, a.magnitude - b.magnitude};
    } else {
        *out = (exact){b.negative, b.magnitude - a.magnitude};
    }
    return exact_normalize(out);
}

static exact exact_negate(exact a) { return exact_of(!a.negative, a.magnitude); }

static bool exact_mul(exact a, exact b, exact *out)
{
    if (a.magnitude != 0 && b.magnitude > UINT64_MAX / a.magnitude)
        return false;
    *out = exact_of(a.negative != b.negative, a.magnitude * b.magnitude);
    return exact_normalize(out);
}

static int exact_compare(exact a, exact b)
{
    if (a.negative != b.negative)
        return a.negative ? -1 : 1;
    int sign = a.negative ? -1 : 1;
    return a.magnitude < b.magnitude ? -sign : a.magnitude > b.magnitude ? sign : 0;
}

/* Python's floor division and modulo; b is not zero. */
static bool exact_floordiv(exact a, exact b, exact *out)
{
    uint64_t q = a.magnitude / b.magnitude, r = a.magnitude % b.magnitude;
    if (a.negative == b.negative)
        *out = exact_of(false, q);
    else
        *out = exact_of(true, q + (r != 0));   /* b.magnitude >= 2 when r != 0: no overflow */
    return exact_normalize(out);
}

static exact exact_mod(exact a, exact b)
{
    uint64_t r = a.magnitude % b.magnitude;
    if (r != 0 && a.negative != b.negative)
        r = b.magnitude - r;
    return exact_of(b.negative, r);
}

/* exponent >= 0; 0 ** 0 == 1 */
static bool exact_pow(exact base, uint64_t exponent, exact *out)
{
    bool negative = base.negative && (exponent & 1);
    if (base.magnitude == 0) {
        *out = exact_of(false, exponent == 0);
        return true;
    }
    uint64_t result = 1, square = base.magnitude;
    while (exponent) {
        if (exponent & 1) {
            if (result > UINT64_MAX / square)
                return false;
            result *= square;
        }
        exponent >>= 1;
        if (exponent) {
            if (square > UINT64_MAX / square)
                return false;
            square *= square;
        }
    }
    *out = exact_of(negative, result);
    return exact_normalize(out);
}

/* Bitwise operations as Python does them on unbounded two's complement:
 * a value in range is 65 bits, the low 64 and a sign that repeats above. */
static void to_bits(exact v, uint64_t *low, bool *sign)
{
    *low = v.negative ? (uint64_t)0 - v.magnitude : v.magnitude;
    *sign = v.negative;
}

static bool from_bits(uint64_t low, bool sign, exact *out)
{
    if (!sign) {
        *out = exact_of(false, low);
        return true;
    }
    if (low == 0)
        return false;   /* -2**64 */
    *out = exact_of(true, (uint64_t)0 - low);
    return exact_normalize(out);
}

static bool exact_bitwise(expr_op op, exact a, exact b, exact *out)
{
    uint64_t la, lb;
    bool sa, sb;
    to_bits(a, &la, &sa);
    to_bits(b, &lb, &sb);
    switch (op) {
    case OP_BITAND: return from_bits(la & lb, sa && sb, out);
    case OP_BITOR: return from_bits(la | lb, sa || sb, out);
    default: return from_bits(la ^ lb, sa != sb, out);
    }
}

static bool exact_bitnot(exact a, exact *out)
{
    uint64_t low;
    bool sign;
    to_bits(a, &low, &sign);
    return from_bits(~low, !sign, out);
}

/* count >= 0 */
static bool exact_shift(expr_op op, exact a, uint64_t count, exact *out)
{
    if (op == OP_SHL) {
        if (a.magnitude == 0) {
            *out = a;
            return true;
        }
        if (count >= 64 || (a.magnitude >> (63 - count)) >> 1 != 0)
            return false;
        *out = exact_of(a.negative, a.magnitude << count);
        return exact_normalize(out);
    }
    if (!a.negative) {
        *out = exact_of(false, count >= 64 ? 0 : a.magnitude >> count);
        return true;
    }
    /* floor(-m / 2**count) == -ceil(m / 2**count) */
    if (count >= 64) {
        *out = exact_of(true, 1);
        return true;
    }
    uint64_t q = a.magnitude >> count;
    if (a.magnitude & ((((uint64_t)1) << count) - 1))
        q++;
    *out = exact_of(true, q);
    return true;
}

static void exact_format(exact v, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%" PRIu64, v.negative ? "-" : "", v.magnitude);
}

/* ---- typing ------------------------------------------------------------------- */

/* A subtree during typing: strong (it has a dtype) or a weak literal.  The
 * order matters: promotion takes the highest weak kind. */
typedef enum weak_kind { STRONG, WEAK_BOOL, WEAK_INT, WEAK_FLOAT } weak_kind;

typedef struct typed {
    weak_kind weak;
    bcg_dtype dtype;   /* strong: its type; weak: the literal's own type (bool, i64, f64) */
    exact i;           /* WEAK_BOOL (0 or 1) and WEAK_INT */
    double f;          /* WEAK_FLOAT */
} typed;

typedef struct typer {
    const bcg_dtype *operand_dtypes;
    int operand_count;
    bcg_error *err;
} typer;

static bcg_dtype weak_default(weak_kind k)
{
    return k == WEAK_FLOAT ? BCG_F64 : k == WEAK_INT ? BCG_I64 : BCG_BOOL;
}

static typed make_weak_bool(bool b)
{
    typed r = {WEAK_BOOL, BCG_BOOL, exact_of(false, b), 0.0};
    return r;
}

static typed make_weak_int(exact v)
{
    typed r = {WEAK_INT, BCG_I64, v, 0.0};
    return r;
}

static typed make_weak_float(double f)
{
    typed r = {WEAK_FLOAT, BCG_F64, {false, 0}, f};
    return r;
}

static double weak_double(const typed *v)
{
    return v->weak == WEAK_FLOAT ? v->f : exact_to_double(v->i);
}

static bool weak_truth(const typed *v)
{
    return v->weak == WEAK_FLOAT ? v->f != 0 : v->i.magnitude != 0;   /* NaN != 0 */
}

/* "f32", "int literal", ... for messages */
static const char *typed_name(const typed *v)
{
    switch (v->weak) {
    case WEAK_BOOL: return "a bool constant";
    case WEAK_INT: return "an int literal";
    case WEAK_FLOAT: return "a float literal";
    default: return bcg_dtype_name(v->dtype);
    }
}

/* NumPy's result_type over COUNT subtrees with NEP 50 weak literals.  With
 * no strong one the result is weak, of the highest kind. */
static typed promote_all(const typed *v, int count)
{
    bool any_strong = false;
    bcg_dtype strong = BCG_BOOL;
    weak_kind weak = STRONG;
    for (int i = 0; i < count; i++) {
        if (v[i].weak == STRONG) {
            strong = any_strong ? dtype_promote(strong, v[i].dtype) : v[i].dtype;
            any_strong = true;
        } else if (v[i].weak > weak) {
            weak = v[i].weak;
        }
    }
    typed r = {STRONG, strong, {false, 0}, 0.0};
    if (!any_strong) {
        r.weak = weak;
        r.dtype = weak_default(weak);
        return r;
    }
    dtype_kind kind = dtype_kind_of(strong);
    if (weak == WEAK_INT && kind == KIND_BOOL)
        r.dtype = BCG_I64;
    if (weak == WEAK_FLOAT && kind != KIND_FLOAT)
        r.dtype = BCG_F64;
    return r;
}

static void int_range(bcg_dtype t, exact *min, exact *max)
{
    int bits = dtype_bits(t);
    if (dtype_kind_of(t) == KIND_UINT) {
        *min = exact_of(false, 0);
        *max = exact_of(false, bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1);
    } else {
        *min = exact_of(true, (uint64_t)1 << (bits - 1));
        *max = exact_of(false, ((uint64_t)1 << (bits - 1)) - 1);
    }
}

/* Stores a number (an exact int, or a double when IS_FLOAT) into literal N
 * as type TO, converting as the runtime's casts do: integers wrap to the
 * low bits, floats truncate toward zero and saturate (NaN -> 0), bool is
 * != 0, floats round to nearest. */
static void store_converted(expr_node *n, bcg_dtype to, bool is_float, exact i, double f)
{
    n->dtype = to;
    dtype_kind kind = dtype_kind_of(to);
    int bits = dtype_bits(to);
    if (kind == KIND_BOOL) {
        n->value.i = is_float ? f != 0 : i.magnitude != 0;
    } else if (kind == KIND_FLOAT) {
        double d;
        if (!is_float)
            d = to == BCG_F32 ? (double)(i.negative ? (float)to_signed((uint64_t)0 - i.magnitude)
                                                    : (float)i.magnitude)
                              : (i.negative ? (double)to_signed((uint64_t)0 - i.magnitude)
                                            : (double)i.magnitude);
        else
            d = to == BCG_F32 ? (double)(float)f : f;
        n->value.f = d;
    } else if (!is_float) {
        uint64_t low = i.negative ? (uint64_t)0 - i.magnitude : i.magnitude;
        if (bits < 64) {
            uint64_t mask = ((uint64_t)1 << bits) - 1;
            low &= mask;
            if (kind == KIND_INT && (low >> (bits - 1)))
                low |= ~mask;   /* sign-extend */
        }
        if (kind == KIND_UINT)
            n->value.u = low;
        else
            n->value.i = to_signed(low);
    } else {
        /* float to integer: truncate, NaN -> 0, saturate outside [min, max];
         * both bounds below are powers of two (or 0), so exact in double */
        exact min, max;
        int_range(to, &min, &max);
        double t = trunc(f), low = exact_to_double(min);
        double high = ldexp(1.0, kind == KIND_UINT ? bits : bits - 1);   /* max + 1 */
        if (isnan(f))
            n->value.u = 0;
        else if (t < low)
            store_converted(n, to, false, min, 0.0);
        else if (t >= high)
            store_converted(n, to, false, max, 0.0);
        else if (kind == KIND_UINT)
            n->value.u = (uint64_t)t;
        else
            n->value.i = (int64_t)t;
    }
}

/* Gives weak literal N (described by V) the type TO: an int literal must
 * fit an integer type. */
static bcg_status concretize(typer *t, expr_node *n, const typed *v, bcg_dtype to)
{
    if (v->weak == STRONG)
        return BCG_OK;
    assert(n->op == OP_LITERAL);
    dtype_kind kind = dtype_kind_of(to);
    if (v->weak == WEAK_FLOAT) {
        assert(kind == KIND_FLOAT || kind == KIND_BOOL);
        store_converted(n, to, true, v->i, v->f);
        return BCG_OK;
    }
    if (v->weak == WEAK_INT && (kind == KIND_INT || kind == KIND_UINT)) {
        exact min, max;
        int_range(to, &min, &max);
        if (exact_compare(v->i, min) < 0 || exact_compare(v->i, max) > 0) {
            char text[32];
            exact_format(v->i, text, sizeof text);
            return fail_at(t->err, BCG_ERR_TYPE, n->column, -1, -1,
                           "literal %s at column %d does not fit in %s", text, n->column,
                           bcg_dtype_name(to));
        }
    }
    store_converted(n, to, false, v->i, 0.0);
    return BCG_OK;
}

static bcg_status concretize_all(typer *t, expr_node *n, const typed *c, int first, int count,
                                 bcg_dtype to)
{
    for (int k = first; k < first + count; k++) {
        bcg_status status = concretize(t, n->args[k], &c[k], to);
        if (status != BCG_OK)
            return status;
    }
    return BCG_OK;
}

/* The rules NumPy enforces, for folded and typed nodes alike.  P is the
 * promotion of the children that take part (for unary ops, the child). */
static bcg_status check_rules(typer *t, const expr_node *n, const typed *c, const typed *p)
{
    dtype_kind kind = dtype_kind_of(p->dtype);
    switch (n->op) {
    case OP_NEG:
        if (kind == KIND_BOOL)
            return fail_at(t->err, BCG_ERR_TYPE, n->column, -1, -1,
                           "unary '-' at column %d is not defined for bool "
                           "(use '!' or '~' for logical not)", n->column);
        break;
    case OP_SUB:
        if (kind == KIND_BOOL)
            return fail_at(t->err, BCG_ERR_TYPE, n->column, -1, -1,
                           "'-' at column %d is not defined for two bools "
                           "(use '^' or '!=' for logical xor)", n->column);
        break;
    case OP_BITNOT:
        if (kind == KIND_FLOAT)
            return fail_at(t->err, BCG_ERR_TYPE, n->column, -1, -1,
                           "'~' at column %d needs an integer or bool operand, not %s",
                           n->column, typed_name(&c[0]));
        break;
    case OP_BITAND: case OP_BITOR: case OP_BITXOR: case OP_SHL: case OP_SHR:
        if (kind == KIND_FLOAT)
            return fail_at(t->err, BCG_ERR_TYPE, n->column, -1, -1,
                           "'%s' at column %d needs integer or bool operands, not %s and %s",
                           expr_op_name(n->op), n->column, typed_name(&c[0]),
                           typed_name(&c[1]));
        break;
    default:
        break;
    }
    return BCG_OK;
}

static bcg_status constant_error(typer *t, const expr_node *n, const char *what)
{
    return fail_at(t->err, BCG_ERR_TYPE, n->column, -1, -1,
                   "constant expression at column %d: %s", n->column, what);
}

static bcg_status overflow(typer *t, const expr_node *n)
{
    return constant_error(t, n, "integer overflow (the result is outside [-2**63, 2**64-1])");
}

/* Python's float floor division and modulo (Objects/floatobject.c); b != 0. */
static void python_divmod(double a, double b, double *floordiv, double *mod)
{
    double m = fmod(a, b), div = (a - m) / b;
    if (m != 0) {
        if ((b < 0) != (m < 0)) {
            m += b;
            div -= 1.0;
        }
    } else {
        m = copysign(0.0, b);
    }
    double q;
    if (div != 0) {
        q = floor(div);
        if (div - q > 0.5)
            q += 1.0;
    } else {
        q = copysign(0.0, a / b);
    }
    *floordiv = q;
    *mod = m;
}

static bcg_status python_float_pow(typer *t, const expr_node *n, double x, double y, typed *out)
{
    if (x == 0 && y < 0)
        return constant_error(t, n, "zero cannot be raised to a negative power");
    if (x < 0 && isfinite(x) && isfinite(y) && y != floor(y))
        return constant_error(t, n, "a negative number to a fractional power is complex");
    double r = pow(x, y);
    if (isinf(r) && isfinite(x) && isfinite(y))
        return constant_error(t, n, "float overflow in '**'");
    *out = make_weak_float(r);
    return BCG_OK;
}

/* minimum/maximum of two weak values of kind K, NaN propagating */
static typed weak_extreme(const typed *a, const typed *b, weak_kind k, bool maximum)
{
    if (k == WEAK_FLOAT) {
        double x = weak_double(a), y = weak_double(b);
        if (isnan(x) || isnan(y))
            return make_weak_float(isnan(x) ? x : y);
        return make_weak_float(maximum ? (x < y ? y : x) : (y < x ? y : x));
    }
    int cmp = exact_compare(a->i, b->i);
    const typed *pick = (maximum ? cmp < 0 : cmp > 0) ? b : a;
    typed r = *pick;
    r.weak = k;
    r.dtype = weak_default(k);
    return r;
}

/* Folds node N whose children C are all weak literals into a weak value. */
static bcg_status fold(typer *t, expr_node *n, const typed *c, typed *out)
{
    int first = n->op == OP_WHERE ? 1 : 0;
    typed p = promote_all(c + first, n->arg_count - first);
    bcg_status status = check_rules(t, n, c, &p);
    if (status != BCG_OK)
        return status;
    weak_kind k = p.weak;
    exact r;
    switch (n->op) {
    case OP_NEG:
        *out = k == WEAK_FLOAT ? make_weak_float(-c[0].f) : make_weak_int(exact_negate(c[0].i));
        if (k == WEAK_INT && !exact_normalize(&out->i))
            return overflow(t, n);
        break;
    case OP_POS:
        *out = c[0];
        break;
    case OP_BITNOT:
        if (k == WEAK_BOOL) {
            *out = make_weak_bool(!weak_truth(&c[0]));
        } else {
            if (!exact_bitnot(c[0].i, &r))
                return overflow(t, n);
            *out = make_weak_int(r);
        }
        break;
    case OP_NOT: *out = make_weak_bool(!weak_truth(&c[0])); break;
    case OP_AND: *out = make_weak_bool(weak_truth(&c[0]) && weak_truth(&c[1])); break;
    case OP_OR: *out = make_weak_bool(weak_truth(&c[0]) || weak_truth(&c[1])); break;
    case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE: {
        bool lt, eq, gt;
        if (k == WEAK_FLOAT) {
            double x = weak_double(&c[0]), y = weak_double(&c[1]);
            lt = x < y, eq = x == y, gt = x > y;
        } else {
            int cmp = exact_compare(c[0].i, c[1].i);
            lt = cmp < 0, eq = cmp == 0, gt = cmp > 0;
        }
        bool v = n->op == OP_EQ ? eq : n->op == OP_NE ? !eq : n->op == OP_LT ? lt
               : n->op == OP_LE ? lt || eq : n->op == OP_GT ? gt : gt || eq;
        *out = make_weak_bool(v);
        break;
    }
    case OP_BITAND: case OP_BITOR: case OP_BITXOR:
        if (!exact_bitwise(n->op, c[0].i, c[1].i, &r))
            return overflow(t, n);
        *out = k == WEAK_BOOL ? make_weak_bool(r.magnitude != 0) : make_weak_int(r);
        break;
    case OP_SHL: case OP_SHR:
        if (c[1].i.negative)
            return constant_error(t, n, "negative shift count");
        if (!exact_shift(n->op, c[0].i, c[1].i.magnitude, &r))
            return overflow(t, n);
        *out = make_weak_int(r);
        break;
    case OP_ADD: case OP_SUB: case OP_MUL:
        if (k == WEAK_BOOL) {
            bool x = weak_truth(&c[0]), y = weak_truth(&c[1]);
            *out = make_weak_bool(n->op == OP_ADD ? x || y : x && y);
        } else if (k == WEAK_FLOAT) {
            double x = weak_double(&c[0]), y = weak_double(&c[1]);
            *out = make_weak_float(n->op == OP_ADD ? x + y : n->op == OP_SUB ? x - y : x * y);
        } else {
            bool ok = n->op == OP_ADD ? exact_add(c[0].i, c[1].i, &r)
                    : n->op == OP_SUB ? exact_add(c[0].i, exact_negate(c[1].i), &r)
                                      : exact_mul(c[0].i, c[1].i, &r);
            if (!ok)
                return overflow(t, n);
            *out = make_weak_int(r);
        }
        break;
    case OP_DIV: case OP_FLOORDIV: case OP_MOD:
        if (k == WEAK_FLOAT ? weak_double(&c[1]) == 0 : c[1].i.magnitude == 0)
            return constant_error(t, n, "division by zero");
        if (n->op == OP_DIV) {
            *out = make_weak_float(weak_double(&c[0]) / weak_double(&c[1]));
        } else if (k == WEAK_FLOAT) {
            double q, m;
            python_divmod(weak_double(&c[0]), weak_double(&c[1]), &q, &m);
            *out = make_weak_float(n->op == OP_FLOORDIV ? q : m);
        } else if (n->op == OP_FLOORDIV) {
            if (!exact_floordiv(c[0].i, c[1].i, &r))
                return overflow(t, n);
            *out = make_weak_int(r);
        } else {
            *out = make_weak_int(exact_mod(c[0].i, c[1].i));
        }
        break;
    case OP_POW:
        if (k == WEAK_FLOAT || c[1].i.negative) {
            status = python_float_pow(t, n, weak_double(&c[0]), weak_double(&c[1]), out);
            if (status != BCG_OK)
                return status;
            break;
        }
        if (!exact_pow(c[0].i, c[1].i.magnitude, &r))
            return overflow(t, n);
        *out = make_weak_int(r);
        break;
    case OP_ABS:
        *out = c[0];
        if (k == WEAK_FLOAT)
            out->f = fabs(c[0].f);
        else
            out->i.negative = false;
        break;

    case OP_MINIMUM: case OP_MAXIMUM:
        *out = weak_extreme(&c[0], &c[1], k, n->op == OP_MAXIMUM);
        break;
    case OP_CLIP: {
        typed low = weak_extreme(&c[0], &c[1], k, true);
        *out = weak_extreme(&low, &c[2], k, false);
        break;
    }
    case OP_WHERE:
        *out = weak_truth(&c[0]) ? c[1] : c[2];
        if (k == WEAK_FLOAT && out->weak != WEAK_FLOAT)
            *out = make_weak_float(weak_double(out));
        else if (k == WEAK_INT)
            out->weak = WEAK_INT;
        out->dtype = weak_default(k);
        break;
    default:
        if (op_table[n->op].math_f64) {
            /* the float functions of ops.h, in double like Python's math module */
            *out = make_weak_float(op_table[n->op].math_f64(weak_double(&c[0])));
            break;
        }
        assert(!"fold: unexpected op");
        return fail(t->err, BCG_ERR_USAGE, "internal error: cannot fold '%s'",
                    expr_op_name(n->op));
    }
    /* The node becomes a literal; concretize gives it its type and value. */
    n->op = OP_LITERAL;
    n->arg_count = 0;
    n->args[0] = n->args[1] = n->args[2] = NULL;
    n->literal_is_float = out->weak == WEAK_FLOAT;
    n->dtype = out->dtype;
    return BCG_OK;
}

/* A cast of a literal folds into a strong literal; otherwise it is typed. */
static bcg_status type_cast(expr_node *n, const typed *c, typed *out)
{
    expr_node *child = n->args[0];
    if (child->op == OP_LITERAL) {
        bool is_float;
        exact i = {false, 0};
        double f = 0.0;
        if (c[0].weak != STRONG) {
            is_float = c[0].weak == WEAK_FLOAT;
            i = c[0].i;
            f = c[0].f;
        } else {
            dtype_kind kind = dtype_kind_of(child->dtype);
            is_float = kind == KIND_FLOAT;
            if (is_float)
                f = child->value.f;
            else if (kind == KIND_UINT)
                i = exact_of(false, child->value.u);
            else
                i = exact_from_i64(child->value.i);
        }
        n->op = OP_LITERAL;
        n->arg_count = 0;
        n->args[0] = NULL;
        n->literal_is_float = is_float;
        store_converted(n, n->cast_to, is_float, i, f);
    } else {
        n->dtype = n->cast_to;
    }
    *out = (typed){STRONG, n->dtype, {false, 0}, 0.0};
    return BCG_OK;
}

/* Types node N whose children C are not all weak. */
static bcg_status type_strong(typer *t, expr_node *n, const typed *c, typed *out)
{
    bcg_status status;
    typed p;
    switch (op_table[n->op].rule) {
    case RULE_SAME:
        if ((status = check_rules(t, n, c, &c[0])) != BCG_OK)
            return status;
        n->dtype = c[0].dtype;
        break;
    case RULE_NOT:
        n->dtype = BCG_BOOL;
        break;
    case RULE_FLOAT:
        n->dtype = dtype_float_for(c[0].dtype);
        break;
    case RULE_LOGICAL:
        for (int k = 0; k < 2; k++)
            if ((status = concretize(t, n->args[k], &c[k], BCG_BOOL)) != BCG_OK)
                return status;
        n->dtype = BCG_BOOL;
        break;
    case RULE_WHERE:
        if ((status = concretize(t, n->args[0], &c[0], BCG_BOOL)) != BCG_OK)
            return status;
        p = promote_all(c + 1, 2);
        if ((status = concretize_all(t, n, c, 1, 2, p.dtype)) != BCG_OK)
            return status;
        n->dtype = p.dtype;
        break;
    default:
        /* binary operators, minimum, maximum, pow, clip */
        p = promote_all(c, n->arg_count);
        if ((status = check_rules(t, n, c, &p)) != BCG_OK ||
            (status = concretize_all(t, n, c, 0, n->arg_count, p.dtype)) != BCG_OK)
            return status;
        switch (op_table[n->op].rule) {
        case RULE_COMPARE:
            n->dtype = BCG_BOOL;
            break;
        case RULE_DIVIDE:
            n->dtype = dtype_kind_of(p.dtype) == KIND_FLOAT ? p.dtype : BCG_F64;
            break;
        case RULE_INTEGRAL:
            n->dtype = p.dtype == BCG_BOOL ? BCG_I8 : p.dtype;
            break;
        default:
            n->dtype = p.dtype;
            break;
        }
        break;
    }
    *out = (typed){STRONG, n->dtype, {false, 0}, 0.0};
    return BCG_OK;
}

static bcg_status type_node(typer *t, expr_node *n, int depth, typed *out)
{
    /* DEPTH counts nodes from the root (1): a leaf under BCG_MAX_DEPTH levels */
    if (depth > BCG_MAX_DEPTH + 1)
        return fail_at(t->err, BCG_ERR_LIMIT, n->column, -1, -1,
                       "expression nests deeper than BCG_MAX_DEPTH (%d levels) at column %d",
                       BCG_MAX_DEPTH, n->column);
    if (n->op == OP_OPERAND) {
        if (n->operand < 0 || n->operand >= t->operand_count ||
            (unsigned)t->operand_dtypes[n->operand] >= BCG_DTYPE_COUNT)
            return fail_at(t->err, BCG_ERR_USAGE, n->column, n->operand, -1,
                           "operand %d at column %d has no valid dtype", n->operand, n->column);
        n->dtype = t->operand_dtypes[n->operand];
        *out = (typed){STRONG, n->dtype, {false, 0}, 0.0};
        return BCG_OK;
    }
    if (n->op == OP_LITERAL) {
        /* As expr_parse made it: weak, read from its provisional i64/u64/f64 */
        if (n->literal_is_float)
            *out = make_weak_float(n->value.f);
        else if (n->dtype == BCG_U64)
            *out = make_weak_int(exact_of(false, n->value.u));
        else
            *out = make_weak_int(exact_from_i64(n->value.i));
        return BCG_OK;
    }
    if ((unsigned)n->op >= OP_COUNT || n->arg_count < 1 || n->arg_count > 3)
        return fail(t->err, BCG_ERR_USAGE, "expr_type: malformed node at column %d", n->column);
    typed c[3];
    bool all_weak = true;
    for (int k = 0; k < n->arg_count; k++) {
        bcg_status status = type_node(t, n->args[k], depth + 1, &c[k]);
        if (status != BCG_OK)
            return status;
        all_weak = all_weak && c[k].weak != STRONG;
    }
    if (n->op == OP_CAST)
        return type_cast(n, c, out);
    if (all_weak)
        return fold(t, n, c, out);
    return type_strong(t, n, c, out);
}

bcg_status expr_type(arena *a, expr_node *root, const bcg_dtype *operand_dtypes,
                     int operand_count, bcg_error *err)
{
    (void)a;   /* typing rewrites nodes in place and allocates nothing */
    if (!root || operand_count < 0 || (operand_count > 0 && !operand_dtypes))
        return fail(err, BCG_ERR_USAGE, "expr_type: missing tree or operand dtypes");
    typer t = {operand_dtypes, operand_count, err};
    typed result;
    bcg_status status = type_node(&t, root, 1, &result);
    if (status != BCG_OK)
        return status;
    return concretize(&t, root, &result, result.dtype);
}

bcg_dtype expr_operation_type(const expr_node *n)
{
    switch (n->op) {
    case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE:
        return dtype_promote(n->args[0]->dtype, n->args[1]->dtype);
    case OP_NOT: case OP_AND: case OP_OR:
        return BCG_BOOL;
    case OP_CAST:
        return n->args[0]->dtype;
    default:
        return n->dtype;
    }
}

/* ---- printing ---------------------------------------------------------------- */

/* Shortest text that reads back as V (as a float when SINGLE), in Python's
 * repr style: "0.1", "1.0", "1e+16", "1.5e-05".  Locale-independent: the
 * digits are taken from %e whatever its decimal point is. */
static void format_double(double v, bool single, char *out, size_t cap)
{
    if (isnan(v)) {
        snprintf(out, cap, "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(out, cap, v > 0 ? "inf" : "-inf");
        return;
    }
    if (v == 0) {
        snprintf(out, cap, signbit(v) ? "-0.0" : "0.0");
        return;
    }
    char digits[32];
    int digit_count = 0, exponent = 0;
    for (int precision = 1; precision <= 17; precision++) {
        char tmp[64];
        snprintf(tmp, sizeof tmp, "%.*e", precision - 1, fabs(v));
        const char *e = strchr(tmp, 'e');
        if (!e) {
            snprintf(out, cap, "?");
            return;
        }
        digit_count = 0;
        for (const char *s = tmp; s < e; s++)
            if (is_digit(*s))
                digits[digit_count++] = *s;
        exponent = atoi(e + 1);
        char check[64];
        snprintf(check, sizeof check, "%.*se%d", digit_count, digits, exponent - (digit_count - 1));
        double back = strtod(check, NULL);
        if (single ? (float)back == (float)fabs(v) : back == fabs(v))
            break;
    }
    while (digit_count > 1 && digits[digit_count - 1] == '0')
        digit_count--;
    size_t n = 0;
#define PUT(c) do { if (n + 1 < cap) out[n++] = (c); } while (0)
    if (v < 0)
        PUT('-');
    if (exponent >= 16 || exponent < -4) {
        PUT(digits[0]);
        if (digit_count > 1) {
            PUT('.');
            for (int k = 1; k < digit_count; k++)
                PUT(digits[k]);
        }
        char tail[16];
        snprintf(tail, sizeof tail, "e%c%02d", exponent < 0 ? '-' : '+', abs(exponent));
        for (const char *s = tail; *s; s++)
            PUT(*s);
    } else if (exponent >= 0) {
        for (int k = 0; k <= exponent; k++)
            PUT(k < digit_count ? digits[k] : '0');
        PUT('.');
        if (digit_count > exponent + 1)
            for (int k = exponent + 1; k < digit_count; k++)
                PUT(digits[k]);
        else
            PUT('0');
    } else {
        PUT('0');
        PUT('.');
        for (int k = 0; k < -exponent - 1; k++)
            PUT('0');
        for (int k = 0; k < digit_count; k++)
            PUT(digits[k]);
    }
#undef PUT
    out[n < cap ? n : cap - 1] = 0;
}

static void format_literal(const expr_node *n, char *buf, size_t cap)
{
    switch (dtype_kind_of(n->dtype)) {
    case KIND_BOOL: snprintf(buf, cap, "%d", n->value.i != 0); break;
    case KIND_INT: snprintf(buf, cap, "%" PRId64, n->value.i); break;
    case KIND_UINT: snprintf(buf, cap, "%" PRIu64, n->value.u); break;
    default: format_double(n->value.f, n->dtype == BCG_F32, buf, cap); break;
    }
}

static void put_operand(strbuf *sb, const expr_node *n, const expr_names *names)
{
    if (names && names->names && n->operand >= 0 && n->operand < names->count &&
        names->names[n->operand])
        sb_puts(sb, names->names[n->operand]);
    else
        sb_printf(sb, "#%d", n->operand);
}

static void dump_node(strbuf *sb, const expr_node *n, const expr_names *names, int depth)
{
    sb_printf(sb, "%*s", depth * 2, "");
    if ((unsigned)n->op >= OP_COUNT) {
        sb_puts(sb, "?\n");
        return;
    }
    sb_puts(sb, op_table[n->op].word);
    if (n->op == OP_OPERAND) {
        sb_putc(sb, ' ');
        put_operand(sb, n, names);
    } else if (n->op == OP_LITERAL) {
        char text[64];
        format_literal(n, text, sizeof text);
        sb_printf(sb, " %s", text);
    }
    sb_printf(sb, " %s\n", bcg_dtype_name(n->dtype));
    for (int k = 0; k < n->arg_count && k < 3; k++)
        dump_node(sb, n->args[k], names, depth + 1);
}

void expr_dump(strbuf *sb, const expr_node *root, const expr_names *names)
{
    if (root)
        dump_node(sb, root, names, 0);
}

void expr_format(strbuf *sb, const expr_node *n, const expr_names *names)
{
    if (!n)
        return;
    if ((unsigned)n->op >= OP_COUNT) {
        sb_puts(sb, "?");
        return;
    }
    if (n->op == OP_OPERAND) {
        put_operand(sb, n, names);
    } else if (n->op == OP_LITERAL) {
        char text[64];
        format_literal(n, text, sizeof text);
        if (n->dtype == BCG_BOOL)
            sb_printf(sb, "bool(%s)", text);
        else if (text[0] == '-')   /* so that (-1) ** 2 keeps its meaning */
            sb_printf(sb, "(%s)", text);
        else
            sb_puts(sb, text);
    } else if (n->op == OP_CAST || (op_table[n->op].call &&
                                    strcmp(op_table[n->op].call, op_table[n->op].symbol) == 0)) {
        sb_puts(sb, n->op == OP_CAST ? bcg_dtype_name(n->cast_to) : op_table[n->op].symbol);
        sb_putc(sb, '(');
        for (int k = 0; k < n->arg_count && k < 3; k++) {
            if (k)
                sb_puts(sb, ", ");
            expr_format(sb, n->args[k], names);
        }
        sb_putc(sb, ')');
    } else if (n->arg_count == 1) {
        sb_printf(sb, "(%s", op_table[n->op].symbol);
        expr_format(sb, n->args[0], names);
        sb_putc(sb, ')');
    } else {
        sb_putc(sb, '(');
        expr_format(sb, n->args[0], names);
        sb_printf(sb, " %s ", op_table[n->op].symbol);
        expr_format(sb, n->args[1], names);
        sb_putc(sb, ')');
    }
}
