/* expr.c - the typed expression tree as text: expr_dump (one node a line,
 * for explain) and expr_format (one line, fully parenthesised, with the
 * operands' names), in Python's spelling of literals.  parse.c builds the
 * tree and type.c types it. */
#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static bool is_digit(char c) { return c >= '0' && c <= '9'; }


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
