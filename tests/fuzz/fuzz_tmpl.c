/* fuzz_tmpl.c - the template engine: any bytes as a template, rendered
 * with a scope holding a string, an integer, a bool, an empty list and a
 * list of two items (each with its own variables), must render or fail with
 * a status and a message; never read or write outside its buffers, never
 * loop without end. */
#include "internal.h"

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_string(data, size);
    arena *a = arena_new();
    FUZZ_CHECK(a != NULL);
    tmpl_scope *scope = tmpl_scope_new(a, NULL);
    tmpl_set_str(scope, "name", "value {{name}}");
    tmpl_set_int(scope, "count", -3);
    tmpl_set_bool(scope, "flag", true);
    tmpl_list_declare(scope, "none");
    for (int i = 0; i < 2; i++) {
        tmpl_scope *item = tmpl_list_add(scope, "items");
        tmpl_set_int(item, "count", i);
        tmpl_set_str(item, "name", i ? "second" : "first");
        tmpl_scope *inner = tmpl_list_add(item, "inner");
        tmpl_set_bool(inner, "flag", i == 0);
    }
    strbuf sb;
    sb_init(&sb);
    bcg_error err;
    error_clear(&err);
    bcg_status s = tmpl_render(&sb, "fuzz.tmpl", text, scope, &err);
    if (s != BCG_OK)
        FUZZ_CHECK(err.status == s && err.message[0]);
    sb_free(&sb);
    arena_free(a);
    free(text);
    return 0;
}
