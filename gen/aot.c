/* aot.c - ahead-of-time output for firmware: several kernels as one .c/.h
 * pair that is the whole dependency (no bcgen header or library).
 *
 *   each kernel: compile_front -> position check -> emit_kernel (c->aot set:
 *                only the typed function, helpers it needs or-ed into aot)
 *   the pair:    templates/aot.c.tmpl  includes, typedefs, helpers once, kernels
 *                templates/aot.h.tmpl  the manual: command, sizes, prototypes
 *
 * The bodies come from the JIT's emitter unchanged; only the outer shape
 * differs.  Positions and loop counters are ptrdiff_t, and on 32-bit
 * targets that is 32 bits, so every position a kernel can reach is checked
 * here, at generation time, against the index width asked for; with 64 the
 * .c carries a compile-time check of PTRDIFF_MAX instead.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "aot.h"

/* How far any position of the plan can get from element [0, ..., 0]: a
 * position ends one full stride beyond the last element it touches. */
static uint64_t largest_position(const plan *p)
{
    uint64_t largest = 0;
    for (int k = 0; k < p->operand_count; k++) {
        uint64_t reach = 0;
        for (int l = 0; l < p->loop_count; l++) {
            int64_t stride = p->stride[k][l];
            uint64_t magnitude = stride < 0 ? 0 - (uint64_t)stride : (uint64_t)stride;
            uint64_t extent = (uint64_t)p->extent[l];
            if (magnitude != 0 && extent > UINT64_MAX / magnitude)
                return UINT64_MAX;
            if (reach > UINT64_MAX - extent * magnitude)
                return UINT64_MAX;
            reach += extent * magnitude;
        }
        if (reach > largest)
            largest = reach;
    }
    return largest;
}

/* Elements between an operand's lowest and highest element, both included:
 * what its buffer must hold (the elements, when it is contiguous). */
static int64_t operand_span(const compile_operand *op)
{
    int64_t low = 0, high = 0;
    for (int d = 0; d < op->shape.rank; d++) {
        if (op->shape.dims[d] == 0)
            return 0;
        int64_t step = (op->shape.dims[d] - 1) * op->strides[d];
        if (step < 0)
            low += step;
        else
            high += step;
    }
    return high - low + 1;
}

static void format_shape(char *buf, size_t cap, const shape *s, const int64_t *values)
{
    size_t used = (size_t)snprintf(buf, cap, "{");
    for (int d = 0; d < s->rank && used < cap; d++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%lld", d ? ", " : "",
                                 (long long)values[d]);
    if (used < cap)
        snprintf(buf + used, cap - used, "}");
}

/* "FN_A" from "fn" and "a": the macro prefix of an operand. */
static void macro_prefix(char *buf, size_t cap, const char *function, const char *operand)
{
    snprintf(buf, cap, "%s_%s", function, operand);
    for (char *c = buf; *c; c++)
        *c = (char)toupper((unsigned char)*c);
}

/* Text for a C comment: printable ASCII, and no comment end. */
static const char *comment_text(arena *a, const char *text)
{
    size_t n = strlen(text);
    char *copy = arena_alloc(a, 2 * n + 1);
    if (!copy)
        return NULL;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        char c = text[i];
        copy[j++] = c >= 0x20 && c < 0x7f ? c : '?';
        if (c == '*' && text[i + 1] == '/')
            copy[j++] = '\\';
    }
    copy[j] = 0;
    return copy;
}

typedef struct file_state {
    arena *arena;
    bcg_error *err;
    tmpl_scope *source_scope, *header_scope;
    int macro_count;
    const char **macros;   /* every macro name so far, to catch clashes */
    uint64_t largest_position;
} file_state;

static bcg_status add_macro(file_state *f, tmpl_scope *kernel, const char *name,
                            const char *value)
{
    for (int i = 0; i < f->macro_count; i++)
        if (strcmp(f->macros[i], name) == 0)
            return fail(f->err, BCG_ERR_USAGE,
                        "two macros of the header would both be named %s (kernel and operand "
                        "names are upper-cased); rename one",
                        name);
    const char *copy = arena_strndup(f->arena, name, strlen(name));
    const char *value_copy = arena_strndup(f->arena, value, strlen(value));
    if (!copy || !value_copy)
        return fail(f->err, BCG_ERR_NOMEM, "out of memory");
    f->macros[f->macro_count++] = copy;
    tmpl_scope *item = tmpl_list_add(kernel, "macros");
    tmpl_set_str(item, "name", copy);
    tmpl_set_str(item, "value", value_copy);
    return BCG_OK;
}

/* The macros and comment lines of one tensor: NAME_RANK, _SHAPE, _ELEMENTS,
 * _BYTES, and _STRIDES when they were given. */
static bcg_status describe_tensor(file_state *f, tmpl_scope *kernel, const char *prefix,
                                  const char *label, bcg_dtype dtype, const shape *s,
                                  const int64_t *strides, int64_t span, const char *note)
{
    char name[2 * BCG_MAX_NAME + 32], value[BCG_MAX_RANK * 24 + 8];
    int64_t elements = 0;
    shape_elements(s, &elements);
    bcg_status st;
    snprintf(name, sizeof name, "%s_RANK", prefix);
    snprintf(value, sizeof value, "%d", s->rank);
    if ((st = add_macro(f, kernel, name, value)))
        return st;
    if (s->rank > 0) {
        snprintf(name, sizeof name, "%s_SHAPE", prefix);
        format_shape(value, sizeof value, s, s->dims);
        if ((st = add_macro(f, kernel, name, value)))
            return st;
    }
    if (strides) {
        snprintf(name, sizeof name, "%s_STRIDES", prefix);
        format_shape(value, sizeof value, s, strides);
        if ((st = add_macro(f, kernel, name, value)))
            return st;
    }
    snprintf(name, sizeof name, "%s_ELEMENTS", prefix);
    snprintf(value, sizeof value, "%lld", (long long)elements);
    if ((st = add_macro(f, kernel, name, value)))
        return st;
    snprintf(name, sizeof name, "%s_BYTES", prefix);
    snprintf(value, sizeof value, "%lld", (long long)(span * (int64_t)bcg_dtype_size(dtype)));
    if ((st = add_macro(f, kernel, name, value)))
        return st;

    char dims[BCG_MAX_RANK * 24 + 8];
    shape_format(s, dims, sizeof dims);
    const char *line = arena_printf(f->arena, "%-6s %s %s, %s%s", label,
                                    emit_stdint_ctype(dtype), dims,
                                    strides ? "strided (see _STRIDES; _BYTES spans it)"
                                            : "C-contiguous",
                                    note);
    if (!line)
        return fail(f->err, BCG_ERR_NOMEM, "out of memory");
    tmpl_set_str(tmpl_list_add(kernel, "lines"), "text", line);
    return BCG_OK;
}

static bcg_status add_kernel(file_state *f, const aot_request *r, const aot_kernel *k,
                             emit_aot *aot)
{
    bcg_error local;
    error_clear(&local);
    compile *c = arena_alloc(f->arena, sizeof *c);
    if (!c)
        return fail(f->err, BCG_ERR_NOMEM, "out of memory");
    c->arena = f->arena;
    c->err = &local;
    c->function_name = k->name;
    c->aot = aot;
    aot->math_double = k->math_double;
    bcg_status s = BCG_OK;
    if (!k->name || !emit_aot_name_is_free(k->name, false))
        s = fail(&local, BCG_ERR_USAGE,
                 "the function name is not a C identifier, or is a C or C++ keyword, a "
                 "reserved or library name, or starts with bcg_");
    if (!s)
        s = compile_front(c, k->expression, k->operands, k->operand_count, &k->options);
    uint64_t limit = r->index_bits == 64 ? (uint64_t)INT64_MAX : (uint64_t)INT32_MAX;
    if (!s && !c->plan->empty) {
        uint64_t largest = largest_position(c->plan);
        if (largest > limit)
            s = fail(&local, BCG_ERR_LIMIT,
                     "positions reach %llu elements, beyond a %d-bit ptrdiff_t (%llu); %s",
                     (unsigned long long)largest, r->index_bits, (unsigned long long)limit,
                     r->index_bits == 64 ? "the kernel is too large"
                                         : "use --index-bits 64 for a target with a 64-bit "
                                           "ptrdiff_t");
        else if (largest > f->largest_position)
            f->largest_position = largest;
    }
    if (!s)
        s = emit_kernel(c);
    if (s)
        return fail_at(f->err, s, local.column, local.operand, local.dimension, "kernel %s: %s",
                       k->name ? k->name : "(unnamed)", local.message);

    tmpl_scope *code = tmpl_list_add(f->source_scope, "kernels");
    size_t length = strlen(c->source);
    while (length > 0 && c->source[length - 1] == '\n')
        c->source[--length] = 0;
    tmpl_set_str(code, "source", c->source);

    tmpl_scope *doc = tmpl_list_add(f->header_scope, "kernels");
    tmpl_list_declare(doc, "macros");
    tmpl_list_declare(doc, "lines");
    tmpl_set_str(doc, "name", k->name);
    /* the header is for C++ too, which has no `restrict` */
    strbuf parameters;
    sb_init(&parameters);
    for (const char *at = aot->parameters; *at;) {
        const char *found = strstr(at, "*restrict ");
        size_t n = found ? (size_t)(found - at) : strlen(at);
        sb_put(&parameters, at, n);
        if (!found)
            break;
        sb_puts(&parameters, "*BCGEN_RESTRICT ");
        at = found + strlen("*restrict ");
    }
    const char *header_parameters =
        parameters.failed ? NULL
                          : arena_strndup(f->arena, parameters.data ? parameters.data : "",
                                          parameters.len);
    sb_free(&parameters);
    if (!header_parameters)
        return fail(f->err, BCG_ERR_NOMEM, "out of memory");
    tmpl_set_str(doc, "parameters", header_parameters);
    const char *names[BCG_MAX_OPERANDS];
    for (int i = 0; i < c->operand_count; i++)
        names[i] = c->operands[i].name;
    expr_names table = {c->operand_count, names};
    strbuf text;
    sb_init(&text);
    expr_format(&text, c->root, &table);
    const char *expression = text.failed ? NULL : comment_text(f->arena, text.data ? text.data : "");
    sb_free(&text);
    if (!expression)
        return fail(f->err, BCG_ERR_NOMEM, "out of memory");
    tmpl_set_str(doc, "expression", expression);

    char prefix[2 * BCG_MAX_NAME + 8];
    int inplace = c->options.inplace;
    bcg_dtype out_dtype = inplace >= 0 ? c->operands[inplace].dtype : c->root->dtype;
    int64_t out_elements = c->plan->elements;
    macro_prefix(prefix, sizeof prefix, k->name, "out");
    s = describe_tensor(f, doc, prefix, "out", out_dtype, &c->broadcast->result, NULL,
                        out_elements, inplace >= 0 ? " (written into the in-place operand)" : "");
    for (int i = 0; i < c->operand_count && !s; i++) {
        const compile_operand *op = &c->operands[i];
        macro_prefix(prefix, sizeof prefix, k->name, op->name);
        s = describe_tensor(f, doc, prefix, op->name, op->dtype, &op->shape,
                            op->strides_given ? op->strides : NULL, operand_span(op),
                            i == inplace ? " (in place: also the output)" : "");
    }
    return s;
}

/* The include guard: the header's name upper-cased, other bytes as '_'. */
static const char *guard_name(arena *a, const char *header_name)
{
    const char *base = strrchr(header_name, '/');
    base = base ? base + 1 : header_name;
    char *guard = arena_printf(a, "BCGEN_AOT_%s", base);
    if (!guard)
        return NULL;
    for (char *c = guard; *c; c++)
        *c = isalnum((unsigned char)*c) ? (char)toupper((unsigned char)*c) : '_';
    return guard;
}

static bcg_status render_file(const char *template_name, const tmpl_scope *scope, char **out,
                              bcg_error *err)
{
    const char *text = tmpl_builtin(template_name);
    if (!text)
        return fail(err, BCG_ERR_USAGE, "the template %s is not built into the library",
                    template_name);
    strbuf sb;
    sb_init(&sb);
    bcg_status s = tmpl_render(&sb, template_name, text, scope, err);
    if (!s && sb.failed)
        s = fail(err, BCG_ERR_NOMEM, "out of memory");
    if (s) {
        sb_free(&sb);
        return s;
    }
    *out = sb_finish(&sb);
    return *out ? BCG_OK : fail(err, BCG_ERR_NOMEM, "out of memory");
}

bcg_status aot_generate(const aot_request *r, char **source, char **header, bcg_error *err)
{
    if (!r || !source || !header || r->kernel_count < 1 || !r->kernels || !r->source_name ||
        !r->header_name)
        return fail(err, BCG_ERR_USAGE, "aot_generate needs at least one kernel and the names "
                                        "of both files");
    if (r->index_bits != 32 && r->index_bits != 64)
        return fail(err, BCG_ERR_USAGE, "the index width is 32 or 64 bits, not %d",
                    r->index_bits);
    *source = *header = NULL;
    for (int i = 0; i < r->kernel_count; i++)
        for (int j = 0; j < i; j++)
            if (r->kernels[i].name && r->kernels[j].name &&
                strcmp(r->kernels[i].name, r->kernels[j].name) == 0)
                return fail(err, BCG_ERR_USAGE, "two kernels are named %s", r->kernels[i].name);

    file_state f = {.arena = arena_new(), .err = err};
    emit_aot *aot = f.arena ? arena_alloc(f.arena, sizeof *aot) : NULL;
    size_t macro_capacity = 0;
    for (int i = 0; i < r->kernel_count; i++)
        macro_capacity += 5 * ((size_t)r->kernels[i].operand_count + 1);
    f.macros = aot ? arena_alloc(f.arena, sizeof *f.macros * macro_capacity) : NULL;
    f.source_scope = f.macros ? tmpl_scope_new(f.arena, NULL) : NULL;
    f.header_scope = f.source_scope ? tmpl_scope_new(f.arena, NULL) : NULL;
    if (!f.header_scope) {
        arena_free(f.arena);
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    }
    aot->restrict_pointers = r->restrict_pointers;
    tmpl_list_declare(f.source_scope, "kernels");
    tmpl_list_declare(f.header_scope, "kernels");

    bcg_status s = BCG_OK;
    for (int i = 0; i < r->kernel_count && !s; i++)
        s = add_kernel(&f, r, &r->kernels[i], aot);

    strbuf helpers, math, names;
    sb_init(&helpers);
    sb_init(&math);
    sb_init(&names);
    if (!s)
        s = emit_helpers(f.arena, &aot->needs, &helpers, err);
    emit_math_names(&aot->needs, &math);
    for (int i = 0; i < r->kernel_count; i++)
        sb_printf(&names, "%s%s", i ? ", " : "", r->kernels[i].name);
    const char *command = comment_text(f.arena, r->command ? r->command : "(not recorded)");
    const char *guard = guard_name(f.arena, r->header_name);
    const char *source_name = comment_text(f.arena, r->source_name);
    const char *header_name = comment_text(f.arena, r->header_name);
    if (!s && (helpers.failed || math.failed || names.failed || !command || !guard ||
               !source_name || !header_name))
        s = fail(err, BCG_ERR_NOMEM, "out of memory");
    if (!s && strchr(r->header_name, '"'))
        s = fail(err, BCG_ERR_USAGE, "the header's name cannot hold a '\"'");
    if (!s) {
        bool uses_math = math.len > 0;
        tmpl_scope *scopes[2] = {f.source_scope, f.header_scope};
        for (int i = 0; i < 2; i++) {
            tmpl_scope *scope = scopes[i];
            tmpl_set_str(scope, "version", BCG_VERSION);
            tmpl_set_str(scope, "command", command);
            tmpl_set_str(scope, "source_name", source_name);
            tmpl_set_str(scope, "header_name", header_name);
            tmpl_set_str(scope, "kernel_names", names.data);
            tmpl_set_int(scope, "kernel_count", r->kernel_count);
            tmpl_set_bool(scope, "uses_math", uses_math);
            tmpl_set_str(scope, "math_names", uses_math ? math.data : "");
            tmpl_set_bool(scope, "restrict_pointers", r->restrict_pointers);
        }
        /* the templates place the blank lines between the parts */
        while (helpers.len > 0 && helpers.data[helpers.len - 1] == '\n')
            helpers.data[--helpers.len] = 0;
        tmpl_set_str(f.source_scope, "helpers", helpers.len ? helpers.data : "");
        /* a position beyond 32 bits is only allowed with --index-bits 64: then
         * the target's compiler checks that its ptrdiff_t holds it */
        tmpl_set_bool(f.source_scope, "check_index", f.largest_position > (uint64_t)INT32_MAX);
        tmpl_set_int(f.source_scope, "largest_position", (int64_t)f.largest_position);
        tmpl_set_str(f.header_scope, "guard", guard);
        s = render_file("aot.c.tmpl", f.source_scope, source, err);
        if (!s)
            s = render_file("aot.h.tmpl", f.header_scope, header, err);
    }
    sb_free(&helpers);
    sb_free(&math);
    sb_free(&names);
    arena_free(f.arena);
    if (s) {
        mem_free(*source);
        mem_free(*header);
        *source = *header = NULL;
    }
    return s;
}
