/* cli_cache.c - `bcgen cache`: shows or clears the cc backend's disk cache
 * (cc_cache_stats and cc_cache_clear in cc.c, which check the directory as
 * the backend does before touching it). */
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: bcgen cache [show] [--json]\n"
    "       bcgen cache clear\n"
    "\n"
    "The cc backend (--backend cc, bcg_options.backend = BCG_BACKEND_CC) keeps\n"
    "the kernels it compiled in $XDG_CACHE_HOME/bcgen (~/.cache/bcgen when\n"
    "XDG_CACHE_HOME is unset), at most BCGEN_CACHE_MAX bytes (default 256M; K, M\n"
    "and G suffixes), evicting the least recently used.\n"
    "\n"
    "  show    (the default) the directory, how many kernels it holds, their\n"
    "          bytes and the limit; --json for tools\n"
    "  clear   remove every cached kernel and temporary file (other files in\n"
    "          the directory are left alone)\n"
    "\n"
    "The directory is used only if it belongs to this user, no one else may\n"
    "write it or a directory above it, and it is not a symbolic link; otherwise\n"
    "both commands say why and exit 1.  Exit status: 0 success, 1 an unusable\n"
    "directory, 2 a usage error or a bad BCGEN_CACHE_MAX.\n";

/* "48123 (47.0 KiB)", or with NOTE "48123 (47.0 KiB, NOTE)" */
static void print_bytes(uint64_t bytes, const char *note)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    double scaled = (double)bytes;
    int unit = 0;
    while (scaled >= 1024 && unit < 4) {
        scaled /= 1024;
        unit++;
    }
    printf("%llu", (unsigned long long)bytes);
    if (unit > 0)
        printf(" (%.1f %s%s%s)", scaled, units[unit], note ? ", " : "", note ? note : "");
    else if (note)
        printf(" (%s)", note);
}

static int show(bool json)
{
    cc_cache_info info;
    bcg_error err;
    error_clear(&err);
    if (cc_cache_stats(&info, &err))
        return cli_report("cache", NULL, &err);
    if (json) {
        printf("{\"directory\": ");
        cli_json_string(stdout, info.directory);
        printf(", \"exists\": %s, \"entries\": %ld, \"bytes\": %llu, \"temporary\": %ld, "
               "\"limit\": %llu}\n",
               info.exists ? "true" : "false", info.entries, (unsigned long long)info.bytes,
               info.temporary, (unsigned long long)info.limit);
        return 0;
    }
    printf("directory  %s%s\n", info.directory, info.exists ? "" : " (not created yet)");
    printf("entries    %ld\n", info.entries);
    printf("bytes      ");
    print_bytes(info.bytes, NULL);
    printf("\nlimit      ");
    print_bytes(info.limit, "BCGEN_CACHE_MAX");
    printf("\n");
    if (info.temporary > 0)
        printf("temporary  %ld (compiles under way, or left by killed ones: removed after "
               "20 minutes)\n",
               info.temporary);
    return 0;
}

static int clear(void)
{
    cc_cache_info info;
    bcg_error err;
    error_clear(&err);
    if (cc_cache_clear(&info, &err))
        return cli_report("cache", NULL, &err);
    if (!info.exists)
        printf("nothing to clear: %s does not exist\n", info.directory);
    else
        printf("removed %ld cached kernel%s (%llu bytes) from %s\n", info.entries,
               info.entries == 1 ? "" : "s", (unsigned long long)info.bytes, info.directory);
    return 0;
}

int cli_cache(int argc, char **argv)
{
    const char *action = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(help, stdout);
            return 0;
        }
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (!action && (strcmp(argv[i], "show") == 0 || strcmp(argv[i], "clear") == 0)) {
            action = argv[i];
        } else {
            fprintf(stderr, "bcgen cache: unexpected argument '%s'\n(see bcgen cache --help)\n",
                    argv[i]);
            return 2;
        }
    }
    if (action && strcmp(action, "clear") == 0) {
        if (json) {
            fprintf(stderr, "bcgen cache: --json is for show\n(see bcgen cache --help)\n");
            return 2;
        }
        return clear();
    }
    return show(json);
}
