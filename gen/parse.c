/* parse.c - the expression front end's first stage: a hand-written tokenizer
 * and a precedence-climbing parser that resolves names to operand indices
 * (type.c types the tree).  This file is a security boundary: the tree it
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

/* Other spellings users write for a function: C's and NumPy's aliases. */
static const struct {
    const char *alias, *name;
} aliases[] = {
    {"absolute", "abs"}, {"power", "pow"}, {"asin", "arcsin"}, {"acos", "arccos"},
    {"atan", "arctan"}, {"asinh", "arcsinh"}, {"acosh", "arccosh"}, {"atanh", "arctanh"},
    {"around", "round"}, {"atan2", "arctan2"}, {"fix", "trunc"}, {"radians", "deg2rad"},
    {"degrees", "rad2deg"}, {"sigmoid", "expit"},
};

const char *expr_function_alias(size_t i, const char **function)
{
    if (i >= sizeof aliases / sizeof aliases[0])
        return NULL;
    *function = aliases[i].name;
    return aliases[i].alias;
}

/* Finds function NAME: *op, *arity, *cast_to; false if there is none. */
static bool find_function(const char *name, size_t n, expr_op *op, int *arity,
                          const char **parameters, bcg_dtype *cast_to)
{
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strlen(aliases[i].alias) == n && memcmp(aliases[i].alias, name, n) == 0) {
            name = aliases[i].name;
            n = strlen(name);
            break;
        }
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

/* The edit distance of A and B (lengths up to QUOTE_MAX), capped at 9. */
static int edit_distance(const char *a, size_t na, const char *b, size_t nb)
{
    if (na > QUOTE_MAX || nb > QUOTE_MAX)
        return 9;
    int row[QUOTE_MAX + 1];
    for (size_t j = 0; j <= nb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= na; i++) {
        int diagonal = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= nb; j++) {
            int above = row[j];
            int best = diagonal + (a[i - 1] != b[j - 1]);
            if (above + 1 < best)
                best = above + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diagonal = above;
        }
    }
    return row[nb] > 9 ? 9 : row[nb];
}

/* The known function, alias or cast name closest to NAME (at most two
 * edits, one for names of up to four letters), or NULL: the unknown-function
 * message suggests it (the whole list is `bcgen functions`). */
static const char *closest_function(const char *name, size_t n)
{
    const char *best = NULL;
    int best_distance = n > 4 ? 3 : 2; /* short names: one edit */
    for (int k = 0; k < OP_COUNT + (int)(sizeof aliases / sizeof aliases[0]) + BCG_DTYPE_COUNT;
         k++) {
        const char *candidate = k < OP_COUNT ? op_table[k].call
                                : k < OP_COUNT + (int)(sizeof aliases / sizeof aliases[0])
                                    ? aliases[k - OP_COUNT].alias
                                    : bcg_dtype_name((bcg_dtype)(k - OP_COUNT -
                                                                 (int)(sizeof aliases /
                                                                       sizeof aliases[0])));
        if (!candidate)
            continue;
        int d = edit_distance(name, n, candidate, strlen(candidate));
        if (d < best_distance) {
            best = candidate;
            best_distance = d;
        }
    }
    return best;
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
        const char *close = closest_function(name->start, name->length);
        return fail_at(p->err, BCG_ERR_PARSE, name->column, -1, -1,
                       "unknown function '%.*s%s' at column %d%s%s%s (`bcgen functions` lists "
                       "every function)", n, name->start, more, name->column,
                       close ? "; did you mean " : "", close ? close : "", close ? "?" : "");
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
        bool is_true = t.length == 4 && memcmp(t.start, "True", 4) == 0;
        if (index < 0 && (is_true || (t.length == 5 && memcmp(t.start, "False", 5) == 0))) {
            /* Python's bool literals (an operand of that name wins): weak,
             * as NumPy takes them (NEP 50) */
            if ((status = make_node(p, OP_LITERAL, t.column, 0, NULL, NULL, out, height)) != BCG_OK)
                return status;
            (*out)->dtype = BCG_BOOL;
            (*out)->value.i = is_true;
            return BCG_OK;
        }
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
