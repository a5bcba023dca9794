/* shape.c - shapes, their text forms, and the broadcast rules.
 *
 * The rules are NumPy's (right-align, pad the shorter shapes with 1 on the
 * left, per dimension the sizes must be equal or one of them 1, the result
 * takes the larger; 0 broadcasts only against 0 and 1) with three optional
 * additions from the frameworks that share them:
 *   - in-place (PyTorch's x.add_(y)): the result must have exactly the shape
 *     of the receiving operand;
 *   - strict rank (PyTorch's "each tensor has at least one dimension"):
 *     rank-0 operands are rejected instead of broadcasting as scalars;
 *   - Paddle's axis (two operands): the lower-rank operand y is placed into
 *     the other, x, starting at dimension `axis` instead of at the right.
 *     y's trailing 1s that would run past the end of x are dropped.  When
 *     both have the same rank, y is the second operand and the axis must be
 *     -1 or 0 (both plain right alignment): any other axis is an error, as
 *     the planner places only a lower-rank operand at the axis.
 * Errors name the operands, their shapes, the dimension index in the
 * aligned result (as PyTorch reports it) and both sizes.  When several
 * pairs conflict, the reported one is the first operand (in order) that
 * cannot join the broadcast of those before it, against the first earlier
 * operand it conflicts with, at their rightmost conflicting dimension.
 */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* Room for one shape in a message: long shapes are cut with "...)" so the
 * rest of the message (the dimension and sizes) survives. */
#define MESSAGE_SHAPE 96

/* snprintf that may cut its output, on purpose: messages have fixed room. */
static void print_bounded(char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void print_bounded(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
}

/* ---- text --------------------------------------------------------------- */

static bool is_space(char c) { return c == ' ' || c == '\t'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* The text for messages: at most 40 bytes, non-printable bytes as '?'. */
static void quote_text(const char *text, size_t len, char *buf, size_t cap)
{
    size_t n = 0, limit = 40;
    for (size_t i = 0; i < len && i < limit && n + 1 < cap; i++) {
        unsigned char c = (unsigned char)text[i];
        buf[n++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    if (len > limit && n + 4 < cap) {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = 0;
}

/* "'q'" for a printable byte, "byte 0x07" otherwise. */
static void describe_char(char c, char *buf, size_t cap)
{
    unsigned char u = (unsigned char)c;
    if (u >= 0x20 && u < 0x7f)
        snprintf(buf, cap, "'%c'", c);
    else
        snprintf(buf, cap, "byte 0x%02x", u);
}

static bcg_status parse_error(bcg_error *err, const char *text, size_t len,
                              const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static bcg_status parse_error(bcg_error *err, const char *text, size_t len,
                              const char *fmt, ...)
{
    char quoted[48], detail[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    quote_text(text, len, quoted, sizeof quoted);
    return fail(err, BCG_ERR_SHAPE, "bad shape \"%s\": %s", quoted, detail);
}

bcg_status shape_parse(const char *text, size_t len, shape *out, bcg_error *err)
{
    if (!text || !out)
        return fail(err, BCG_ERR_USAGE, "shape_parse: text and out must not be NULL");
    if (len == (size_t)-1)
        len = strlen(text);
    out->rank = 0;

    size_t begin = 0, end = len;
    while (begin < end && is_space(text[begin]))
        begin++;
    while (end > begin && is_space(text[end - 1]))
        end--;
    if (begin == end)
        return parse_error(err, text, len,
                           "empty shape text (write [], () or scalar for rank 0)");
    if (end - begin == 6 && memcmp(text + begin, "scalar", 6) == 0)
        return BCG_OK;

    char open = text[begin];
    bool bracketed = open == '(' || open == '[';
    if (bracketed) {
        char close = open == '(' ? ')' : ']';
        char last = text[end - 1];
        if (end - begin < 2 || (last != ')' && last != ']'))
            return parse_error(err, text, len, "'%c' at character %zu is never closed",
                               open, begin + 1);
        if (last != close)
            return parse_error(err, text, len, "'%c' at character %zu is closed by '%c'",
                               open, begin + 1, last);
        begin++;
        end--;
    }

    size_t pos = begin, separator_pos = 0;
    char separator = 0;
    while (pos < end && is_space(text[pos]))
        pos++;
    if (pos == end) {
        if (bracketed)
            return BCG_OK;   /* "[]", "( )": rank 0 */
    }
    for (;;) {
        while (pos < end && is_space(text[pos]))
            pos++;
        if (pos == end)   /* only after a separator: the empty text was handled */
            return parse_error(err, text, len, "expected a size after '%c' at character %zu",
                               separator, separator_pos + 1);
        size_t start = pos;
        char c = text[pos];
        if (c == '-' && pos + 1 < end && is_digit(text[pos + 1])) {
            pos++;
            while (pos < end && is_digit(text[pos]))
                pos++;
            return parse_error(err, text, len, "negative size %.*s at character %zu",
                               (int)(pos - start), text + start, start + 1);
        }
        if (!is_digit(c)) {
            char what[16];
            describe_char(c, what, sizeof what);
            return parse_error(err, text, len,
                               "unexpected %s at character %zu (expected a size)",
                               what, start + 1);
        }
        int64_t value = 0;
        bool too_large = false;
        while (pos < end && is_digit(text[pos])) {
            int digit = text[pos] - '0';
            if (value > (INT64_MAX - digit) / 10)
                too_large = true;
            else
                value = value * 10 + digit;
            pos++;
        }
        if (too_large)
            return parse_error(err, text, len,
                               "size %.*s at character %zu is above INT64_MAX (%lld)",
                               (int)(pos - start), text + start, start + 1,
                               (long long)INT64_MAX);
        if (out->rank == BCG_MAX_RANK)
            return parse_error(err, text, len,
                               "more than %d dimensions (the limit BCG_MAX_RANK)",
                               BCG_MAX_RANK);
        out->dims[out->rank++] = value;

        while (pos < end && is_space(text[pos]))
            pos++;
        if (pos == end)
            return BCG_OK;
        c = text[pos];
        if (c != ',' && c != 'x') {
            char what[16];
            describe_char(c, what, sizeof what);
            return parse_error(err, text, len,
                               "unexpected %s at character %zu (expected ',' or 'x' between sizes)",
                               what, pos + 1);
        }
        if (separator && c != separator)
            return parse_error(err, text, len,
                               "'%c' at character %zu mixes ',' and 'x' as separators",
                               c, pos + 1);
        separator = c;
        separator_pos = pos;
        pos++;
        while (pos < end && is_space(text[pos]))
            pos++;
        /* NumPy writes a rank-1 shape "(5,)", so a trailing comma is fine
         * inside brackets; a bare "5," or "5x" is more likely a typo. */
        if (pos == end && c == ',' && bracketed)
            return BCG_OK;
    }
}

/* Formats into BUF; when the text does not fit it ends in "...)". */
static void format_shape(const shape *s, const char *separator, bool rank1_comma,
                         char *buf, size_t cap)
{
    if (cap == 0)
        return;
    char full[BCG_MAX_RANK * 24 + 8];
    size_t n = 0;
    full[n++] = '(';
    for (int i = 0; i < s->rank; i++) {
        n += (size_t)snprintf(full + n, sizeof full - n, "%s%lld", i ? separator : "",
                              (long long)s->dims[i]);
    }
    if (s->rank == 1 && rank1_comma)
        full[n++] = ',';
    full[n++] = ')';
    full[n] = 0;
    if (n < cap) {
        memcpy(buf, full, n + 1);
    } else if (cap >= 5) {
        memcpy(buf, full, cap - 5);
        memcpy(buf + cap - 5, "...)", 5);
    } else {
        memcpy(buf, full, cap - 1);
        buf[cap - 1] = 0;
    }
}

void shape_format(const shape *s, char *buf, size_t cap)
{
    format_shape(s, ", ", true, buf, cap);
}

void shape_format_compact(const shape *s, char *buf, size_t cap)
{
    format_shape(s, ",", true, buf, cap);
}

bool shape_elements(const shape *s, int64_t *out)
{
    int64_t product = 1;
    for (int i = 0; i < s->rank; i++) {
        if (s->dims[i] == 0) {
            *out = 0;
            return true;
        }
    }
    for (int i = 0; i < s->rank; i++) {
        if (product > INT64_MAX / s->dims[i])
            return false;
        product *= s->dims[i];
    }
    *out = product;
    return true;
}

/* ---- broadcasting -------------------------------------------------------- */

static void operand_label(const char *const *names, int i, char *buf, size_t cap)
{
    if (names && names[i])
        snprintf(buf, cap, "%s", names[i]);
    else
        snprintf(buf, cap, "operand %d", i);
}

/* "b (3,1,1)" */
static void operand_text(const char *const *names, const shape *shapes, int i,
                         char *buf, size_t cap)
{
    char label[BCG_MAX_NAME + 16], text[MESSAGE_SHAPE];
    operand_label(names, i, label, sizeof label);
    shape_format_compact(&shapes[i], text, sizeof text);
    snprintf(buf, cap, "%s %s", label, text);
}

static bool shapes_equal(const shape *a, const shape *b)
{
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

/* The rightmost dimension where aligned shapes A and B conflict, or -1. */
static int conflict_dimension(const shape *a, const shape *b)
{
    for (int d = a->rank - 1; d >= 0; d--) {
        int64_t x = a->dims[d], y = b->dims[d];
        if (x != 1 && y != 1 && x != y)
            return d;
    }
    return -1;
}

static bcg_status check_operands(int count, const shape *shapes, const char *const *names,
                                  const broadcast_rules *rules, bcg_error *err)
{
    char label[BCG_MAX_NAME + 16];
    for (int i = 0; i < count; i++) {
        operand_label(names, i, label, sizeof label);
        if (shapes[i].rank < 0 || shapes[i].rank > BCG_MAX_RANK)
            return fail_at(err, BCG_ERR_SHAPE, 0, i, -1,
                           "%s has rank %d; ranks go from 0 to %d (BCG_MAX_RANK)",
                           label, shapes[i].rank, BCG_MAX_RANK);
        for (int d = 0; d < shapes[i].rank; d++)
            if (shapes[i].dims[d] < 0)
                return fail_at(err, BCG_ERR_SHAPE, 0, i, -1,
                               "%s has negative size %lld at dimension %d", label,
                               (long long)shapes[i].dims[d], d);
    }
    if (rules->inplace < -1 || rules->inplace >= count)
        return fail(err, BCG_ERR_USAGE,
                    "in-place operand %d does not exist: there %s %d operand%s",
                    rules->inplace, count == 1 ? "is" : "are", count, count == 1 ? "" : "s");
    if (rules->axis != BCG_AXIS_NONE && count != 2)
        return fail(err, BCG_ERR_USAGE,
                    "axis %d needs exactly two operands (x and y), not %d", rules->axis,
                    count);
    if (rules->strict_rank) {
        for (int i = 0; i < count; i++) {
            if (shapes[i].rank == 0) {
                operand_label(names, i, label, sizeof label);
                return fail_at(err, BCG_ERR_BROADCAST, 0, i, -1,
                               "%s is rank 0 (a scalar); strict rank requires every "
                               "operand to have at least one dimension", label);
            }
        }
    }
    for (int i = 0; i < count; i++) {
        int64_t elements;
        if (!shape_elements(&shapes[i], &elements)) {
            char text[BCG_MAX_NAME + MESSAGE_SHAPE + 16];
            operand_text(names, shapes, i, text, sizeof text);
            return fail_at(err, BCG_ERR_LIMIT, 0, i, -1,
                           "%s has more elements than INT64_MAX", text);
        }
    }
    return BCG_OK;
}

/* Paddle's alignment: y goes into x's rank starting at dimension AXIS. */
static bcg_status align_axis(const shape *shapes, const char *const *names, int axis,
                             broadcast_result *out, int *x_out, int *y_out,
                             bcg_error *err)
{
    int y = shapes[0].rank < shapes[1].rank ? 0 : 1, x = 1 - y;
    const shape *xs = &shapes[x], *ys = &shapes[y];
    char x_text[BCG_MAX_NAME + MESSAGE_SHAPE + 16], y_text[BCG_MAX_NAME + MESSAGE_SHAPE + 16];
    operand_text(names, shapes, x, x_text, sizeof x_text);
    operand_text(names, shapes, y, y_text, sizeof y_text);
    int rank = xs->rank;
    if (xs->rank == ys->rank && axis != 0 && axis >= -1 && axis < rank)
        return fail_at(err, BCG_ERR_BROADCAST, 0, y, -1,
                       "axis %d needs operands of different ranks, but %s and %s both have "
                       "rank %d (with equal ranks the axis must be -1 or 0)",
                       axis, x_text, y_text, rank);
    if (axis < 0 || axis >= rank) {
        if (rank == 0)
            return fail_at(err, BCG_ERR_BROADCAST, 0, x, -1,
                           "axis %d is out of range: %s has rank 0, so the axis must be -1",
                           axis, x_text);
        return fail_at(err, BCG_ERR_BROADCAST, 0, x, -1,
                       "axis %d is out of range for %s: the axis must be -1 or 0 to %d",
                       axis, x_text, rank - 1);
    }
    for (int k = 0; k < ys->rank; k++) {
        if (axis + k >= rank && ys->dims[k] != 1)
            return fail_at(err, BCG_ERR_BROADCAST, 0, y, -1,
                           "%s does not fit into %s at axis %d: its dimension %d (size %lld) "
                           "would be past the end, and only trailing 1s can be dropped",
                           y_text, x_text, axis, k, (long long)ys->dims[k]);
    }
    out->aligned[x] = *xs;
    out->aligned[y].rank = rank;
    for (int d = 0; d < rank; d++) {
        int k = d - axis;
        out->aligned[y].dims[d] = k >= 0 && k < ys->rank ? ys->dims[k] : 1;
    }
    *x_out = x;
    *y_out = y;
    return BCG_OK;
}

static bcg_status report_conflict(int count, const shape *shapes, const char *const *names,
                                  const broadcast_result *out, int axis, int axis_y,
                                  bcg_error *err)
{
    /* Find the first operand that cannot join those before it ... */
    shape running = {.rank = out->result.rank};
    for (int d = 0; d < running.rank; d++)
        running.dims[d] = 1;
    int later = -1;
    for (int j = 0; j < count; j++) {
        if (conflict_dimension(&running, &out->aligned[j]) >= 0) {
            later = j;
            break;
        }
        for (int d = 0; d < running.rank; d++)
            if (out->aligned[j].dims[d] != 1)
                running.dims[d] = out->aligned[j].dims[d];
    }
    assert(later > 0);
    /* ... and the first one before it that it conflicts with. */
    int earlier = 0, dimension = -1;
    for (int i = 0; i < later; i++) {
        dimension = conflict_dimension(&out->aligned[i], &out->aligned[later]);
        if (dimension >= 0) {
            earlier = i;
            break;
        }
    }
    assert(dimension >= 0);
    /* With an axis, y is the one placed into x: name it first. */
    int first = later, second = earlier;
    if (axis != BCG_AXIS_NONE && axis != -1 && axis_y == earlier) {
        first = earlier;
        second = later;
    }
    char first_label[BCG_MAX_NAME + 16], second_label[BCG_MAX_NAME + 16];
    char first_shape[MESSAGE_SHAPE], second_shape[MESSAGE_SHAPE], at_axis[32] = "";
    operand_label(names, first, first_label, sizeof first_label);
    operand_label(names, second, second_label, sizeof second_label);
    shape_format_compact(&shapes[first], first_shape, sizeof first_shape);
    shape_format_compact(&shapes[second], second_shape, sizeof second_shape);
    if (axis != BCG_AXIS_NONE && axis != -1)
        snprintf(at_axis, sizeof at_axis, " at axis %d", axis);
    return fail_at(err, BCG_ERR_BROADCAST, 0, first, dimension,
                   "cannot broadcast %s %s%s against %s %s: dimension %d has size %lld "
                   "in %s and %lld in %s",
                   first_label, first_shape, at_axis, second_label, second_shape, dimension,
                   (long long)out->aligned[first].dims[dimension], first_label,
                   (long long)out->aligned[second].dims[dimension], second_label);
}

static bcg_status check_inplace(const shape *shapes, const char *const *names, int target,
                                const broadcast_result *out, bcg_error *err)
{
    const shape *have = &shapes[target], *aligned = &out->aligned[target];
    const shape *result = &out->result;
    if (shapes_equal(have, result))
        return BCG_OK;
    char label[BCG_MAX_NAME + 16], have_text[MESSAGE_SHAPE], result_text[MESSAGE_SHAPE];
    operand_label(names, target, label, sizeof label);
    shape_format_compact(have, have_text, sizeof have_text);
    shape_format_compact(result, result_text, sizeof result_text);
    for (int d = result->rank - 1; d >= 0; d--) {
        if (aligned->dims[d] != result->dims[d])
            return fail_at(err, BCG_ERR_BROADCAST, 0, target, d,
                           "in-place result cannot change the shape of %s %s: broadcast "
                           "result is %s, dimension %d has size %lld in %s and %lld in the result",
                           label, have_text, result_text, d, (long long)aligned->dims[d],
                           label, (long long)result->dims[d]);
    }
    return fail_at(err, BCG_ERR_BROADCAST, 0, target, -1,
                   "in-place result cannot change the shape of %s %s: broadcast result is "
                   "%s, which has rank %d where %s has rank %d",
                   label, have_text, result_text, result->rank, label, have->rank);
}

/* PyTorch's backwards-compatibility warning: before broadcasting, operands
 * of different shapes but the same number of elements were combined
 * pointwise, as 1-D, into a result of the first operand's shape.  Warn only
 * when that old rule gives something else than the broadcast: a result of
 * another shape (and, when the broadcast grows the element count, other
 * values).  (1,4) with (4) broadcasts to (1,4) and pairs the same elements:
 * no warning. */
static void legacy_warning(int count, const shape *shapes, const char *const *names,
                           broadcast_result *out)
{
    /* check_operands made sure every count fits in int64 */
    int64_t elements = 0, first_elements = 0, result_elements = 0;
    shape_elements(&shapes[0], &first_elements);
    int different = -1;
    for (int i = 1; i < count; i++) {
        shape_elements(&shapes[i], &elements);
        if (elements != first_elements)
            return;
        if (different < 0 && !shapes_equal(&shapes[0], &shapes[i]))
            different = i;
    }
    if (different < 0 || shapes_equal(&shapes[0], &out->result))
        return;
    shape_elements(&out->result, &result_elements);
    char a[BCG_MAX_NAME + 48], b[BCG_MAX_NAME + 48], result[48];
    char a_shape[40], b_shape[40];
    operand_label(names, 0, a, sizeof a);
    operand_label(names, different, b, sizeof b);
    shape_format_compact(&shapes[0], a_shape, sizeof a_shape);
    shape_format_compact(&shapes[different], b_shape, sizeof b_shape);
    shape_format_compact(&out->result, result, sizeof result);
    if (result_elements != first_elements)
        print_bounded(out->warning, sizeof out->warning,
                      "%s %s and %s %s have different shapes but the same number of "
                      "elements (%lld): they broadcast to %s (%lld elements), where the old "
                      "pointwise (1-D) behaviour paired them element by element into %s",
                      a, a_shape, b, b_shape, (long long)first_elements, result,
                      (long long)result_elements, a_shape);
    else
        print_bounded(out->warning, sizeof out->warning,
                      "%s %s and %s %s have different shapes but the same number of "
                      "elements (%lld): they broadcast to %s, where the old pointwise (1-D) "
                      "behaviour gave the same elements in %s's shape %s",
                      a, a_shape, b, b_shape, (long long)first_elements, result, a, a_shape);
}

bcg_status shape_broadcast(int count, const shape *shapes, const char *const *names,
                           const broadcast_rules *rules, size_t element_size,
                           broadcast_result *out, bcg_error *err)
{
    static const broadcast_rules defaults = {BCG_AXIS_NONE, -1, false, false};
    if (!out || (!shapes && count > 0))
        return fail(err, BCG_ERR_USAGE, "shape_broadcast: shapes and out must not be NULL");
    if (count < 1 || count > BCG_MAX_OPERANDS)
        return fail(err, BCG_ERR_USAGE,
                    "%d operands: broadcasting takes 1 to %d (BCG_MAX_OPERANDS)", count,
                    BCG_MAX_OPERANDS);
    if (!rules)
        rules = &defaults;
    out->warning[0] = 0;
    bcg_status status = check_operands(count, shapes, names, rules, err);
    if (status != BCG_OK)
        return status;

    int axis = rules->axis, axis_y = -1, axis_x = -1;
    if (axis != BCG_AXIS_NONE && axis != -1) {
        status = align_axis(shapes, names, axis, out, &axis_x, &axis_y, err);
        if (status != BCG_OK)
            return status;
        out->result.rank = shapes[axis_x].rank;
    } else {
        int rank = 0;
        for (int i = 0; i < count; i++)
            if (shapes[i].rank > rank)
                rank = shapes[i].rank;
        out->result.rank = rank;
        for (int i = 0; i < count; i++) {
            int pad = rank - shapes[i].rank;
            out->aligned[i].rank = rank;
            for (int d = 0; d < rank; d++)
                out->aligned[i].dims[d] = d < pad ? 1 : shapes[i].dims[d - pad];
        }
    }

    bool conflict = false;
    for (int d = 0; d < out->result.rank; d++) {
        int64_t size = 1;
        for (int i = 0; i < count; i++) {
            int64_t s = out->aligned[i].dims[d];
            if (s == 1)
                continue;
            if (size != 1 && size != s)
                conflict = true;
            size = s;
        }
        out->result.dims[d] = size;
    }
    if (conflict)
        return report_conflict(count, shapes, names, out, axis, axis_y, err);

    int64_t elements;
    char result_text[MESSAGE_SHAPE];
    shape_format_compact(&out->result, result_text, sizeof result_text);
    if (!shape_elements(&out->result, &elements))
        return fail(err, BCG_ERR_LIMIT,
                    "broadcast result %s has more elements than INT64_MAX", result_text);
    if (element_size > 0 && (uint64_t)elements > (uint64_t)INT64_MAX / element_size)
        return fail(err, BCG_ERR_LIMIT,
                    "broadcast result %s has %lld elements of %zu bytes: more than "
                    "INT64_MAX bytes", result_text, (long long)elements, element_size);

    if (rules->inplace >= 0) {
        status = check_inplace(shapes, names, rules->inplace, out, err);
        if (status != BCG_OK)
            return status;
    }
    if (rules->warn_legacy)
        legacy_warning(count, shapes, names, out);
    return BCG_OK;
}

/* ---- public API ------------------------------------------------------------ */

bcg_status bcg_broadcast_shapes(int count, const int64_t *const *shapes,
                                const int *ranks, const char *const *names,
                                const bcg_options *options, int64_t *result,
                                int *result_rank, char *warning,
                                size_t warning_size, bcg_error *err)
{
    error_clear(err);
    if (warning && warning_size > 0)
        warning[0] = 0;
    if (count < 1 || count > BCG_MAX_OPERANDS)
        return fail(err, BCG_ERR_USAGE,
                    "bcg_broadcast_shapes: count is %d; it must be 1 to %d (BCG_MAX_OPERANDS)",
                    count, BCG_MAX_OPERANDS);
    if (!shapes || !ranks || !result || !result_rank)
        return fail(err, BCG_ERR_USAGE,
                    "bcg_broadcast_shapes: shapes, ranks, result and result_rank must not be NULL");
    for (int i = 0; i < count; i++) {
        char label[BCG_MAX_NAME + 16];
        operand_label(names, i, label, sizeof label);
        if (ranks[i] < 0 || ranks[i] > BCG_MAX_RANK)
            return fail_at(err, BCG_ERR_SHAPE, 0, i, -1,
                           "%s has rank %d; ranks go from 0 to %d (BCG_MAX_RANK)", label,
                           ranks[i], BCG_MAX_RANK);
        if (ranks[i] > 0 && !shapes[i])
            return fail_at(err, BCG_ERR_USAGE, 0, i, -1,
                           "bcg_broadcast_shapes: the shape of %s (rank %d) is NULL", label,
                           ranks[i]);
    }
    broadcast_rules rules = {BCG_AXIS_NONE, -1, false, false};
    if (options) {
        rules.axis = options->axis;
        rules.inplace = options->inplace;
        rules.strict_rank = options->strict_rank != 0;
        rules.warn_legacy = options->warn_legacy != 0;
    }

    /* About 66 KB: too much for the stack of a library call. */
    struct work {
        shape in[BCG_MAX_OPERANDS];
        broadcast_result out;
    } *work = mem_alloc(sizeof *work);
    if (!work)
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    for (int i = 0; i < count; i++) {
        work->in[i].rank = ranks[i];
        if (ranks[i] > 0)
            memcpy(work->in[i].dims, shapes[i], (size_t)ranks[i] * sizeof(int64_t));
    }
    bcg_status status = shape_broadcast(count, work->in, names, &rules, 0, &work->out, err);
    if (status == BCG_OK) {
        *result_rank = work->out.result.rank;
        memcpy(result, work->out.result.dims,
               (size_t)work->out.result.rank * sizeof(int64_t));
        if (warning && warning_size > 0)
            snprintf(warning, warning_size, "%s", work->out.warning);
    }
    mem_free(work);
    return status;
}
