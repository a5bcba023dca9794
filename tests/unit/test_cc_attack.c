/* test_cc_attack.c - the cc backend's disk cache against a local attacker
 * (issue 9, finding 2).  A cache directory that is a symbolic link, is
 * writable by group or others, or belongs to another user, and an ancestor
 * that others may write, are refused (the kernel is compiled with libtcc
 * and the note says why).  Then the race the issue reproduced: a thread
 * swaps the cache directory (or an ancestor) with an attacker's directory
 * in a renameat2(RENAME_EXCHANGE) loop while the main thread loads a kernel
 * 200 times; the attacker's directory holds a well-formed object under the
 * kernel's name (valid trailer, valid ELF) whose constructor creates a
 * marker file.  The test runs as one user, so the attacker's directory is
 * one the checks must refuse (writable by others, or a symbolic link);
 * the old code, which checked paths with lstat and then loaded by path,
 * ran such constructors.  The marker must never appear. */
/* internal.h comes before cmocka.h: cmocka defines a fail() macro. */
#include "internal.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_cc_common.h"

static char marker[200]; /* the attacker's constructor creates it */

static void expect_refused(const char *what, const char *reason)
{
    char note[600];
    check_kernel(37, false, note, sizeof note);
    if (!strstr(note, "the cc backend failed") || !strstr(note, reason) ||
        !strstr(note, "compiled with libtcc"))
        fail_msg("%s: the note is '%s', not a refusal naming '%s'", what, note, reason);
}

static void expect_accepted(const char *what)
{
    char note[600];
    check_kernel(37, false, note, sizeof note);
    if (strcmp(note, "") != 0)
        fail_msg("%s: the cc backend was not used: %s", what, note);
}

static void test_refused_directories(void **state)
{
    (void)state;
    if (!have_cc)
        skip();
    char command[1200], elsewhere[200];
    expect_accepted("a fresh cache");
    /* the cache directory a symbolic link to a good directory of ours */
    snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere", cache_home);
    snprintf(command, sizeof command, "mv '%s' '%s' && ln -s '%s' '%s'", cache_dir, elsewhere,
             elsewhere, cache_dir);
    shell(command);
    expect_refused("a symbolic link", "symbolic link");
    snprintf(command, sizeof command, "rm '%s' && mv '%s' '%s'", cache_dir, elsewhere,
             cache_dir);
    shell(command);
    expect_accepted("restored");

    assert_int_equal(chmod(cache_dir, 0770), 0);
    expect_refused("group-writable", "closed to others (owner");
    assert_int_equal(chmod(cache_dir, 0703), 0);
    expect_refused("writable by others", "mode 703");
    assert_int_equal(chmod(cache_dir, 0700), 0);
    expect_accepted("0700 again");

    if (geteuid() == 0) {
        assert_int_equal(chown(cache_dir, 65534, 65534), 0); /* nobody */
        expect_refused("owned by nobody", "owner 65534");
        assert_int_equal(chown(cache_dir, 0, 0), 0);
        expect_accepted("owned by root again");
    } else {
        printf("# not root: the test of a cache owned by another user is skipped\n");
    }

    /* an ancestor others may write: they could swap the cache away */
    assert_int_equal(chmod(cache_home, 0777), 0);
    expect_refused("an ancestor writable by others", "above the cache directory");
    assert_int_equal(chmod(cache_home, 0770), 0);
    expect_refused("an ancestor writable by its group", "writable by its group");
    assert_int_equal(chmod(cache_home, 01777), 0); /* sticky, as /tmp */
    expect_accepted("a sticky ancestor");
    assert_int_equal(chmod(cache_home, 0700), 0);

    /* XDG_CACHE_HOME through a link of ours, and through "..", is fine */
    char linked[300], dotted[300];
    snprintf(linked, sizeof linked, "%s-link", cache_home);
    unlink(linked);
    assert_int_equal(symlink(cache_home, linked), 0);
    setenv("XDG_CACHE_HOME", linked, 1);
    expect_accepted("XDG_CACHE_HOME through a symbolic link");
    snprintf(dotted, sizeof dotted, "%s/../%s/./", cache_home, strrchr(cache_home, '/') + 1);
    setenv("XDG_CACHE_HOME", dotted, 1);
    expect_accepted("XDG_CACHE_HOME with .. and .");
    setenv("XDG_CACHE_HOME", cache_home, 1);
    unlink(linked);
}

/* The attacker's object: the kernel's name, and a constructor that leaves
 * the marker.  Written into DIRECTORY under NAME with a valid trailer. */
static void plant_object(const char *directory, const char *name)
{
    char source[300], elf[300], command[1200];
    snprintf(source, sizeof source, "%s/evil.c", cache_home);
    snprintf(elf, sizeof elf, "%s/evil.elf", cache_home);
    FILE *f = fopen(source, "w");
    assert_non_null(f);
    fprintf(f,
            "#include <fcntl.h>\n#include <unistd.h>\n"
            "__attribute__((constructor)) static void planted(void)\n"
            "{ close(open(\"%s\", O_WRONLY | O_CREAT, 0600)); }\n"
            "void bcg_kernel(void *out, const void *const *in) { (void)out; (void)in; }\n",
            marker);
    fclose(f);
    snprintf(command, sizeof command, "cc -shared -fPIC -o '%s' '%s'", elf, source);
    shell(command);
    forge_object(elf, directory, name);
}

typedef struct swapper {
    const char *a, *b;
    atomic_bool stop;
    atomic_long swaps;
} swapper;

static void *swap_loop(void *arg)
{
    swapper *s = arg;
    while (!atomic_load(&s->stop))
        if (renameat2(AT_FDCWD, s->a, AT_FDCWD, s->b, RENAME_EXCHANGE) == 0)
            atomic_fetch_add(&s->swaps, 1);
    return NULL;
}

/* Loads kernel 37 LOADS times while A and B are swapped; the marker must
 * never appear.  Returns how many loads the cc backend made. */
static int race(const char *a, const char *b, int loads)
{
    swapper s = {a, b, false, 0};
    pthread_t thread;
    int from_cc = 0;
    unlink(marker); /* each race on its own */
    assert_int_equal(pthread_create(&thread, NULL, swap_loop, &s), 0);
    for (int i = 0; i < loads; i++) {
        char note[600];
        check_kernel(37, false, note, sizeof note); /* results checked: never the planted code */
        from_cc += note[0] == 0;
        if (access(marker, F_OK) == 0)
            break;
    }
    atomic_store(&s.stop, true);
    pthread_join(thread, NULL);
    if (atomic_load(&s.swaps) % 2) /* put the directories back */
        assert_int_equal(renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE), 0);
    printf("# %d loads, %ld swaps, %d loaded by the cc backend, the rest by libtcc\n", loads,
           atomic_load(&s.swaps), from_cc);
    if (access(marker, F_OK) == 0)
        fail_msg("the attacker's object was loaded");
    assert_true(atomic_load(&s.swaps) > 0);
    return from_cc;
}

static void test_exchange_race_on_the_cache_directory(void **state)
{
    (void)state;
    if (!have_cc)
        skip();
    char names[4][80], evil[200];
    expect_accepted("the kernel in the cache");
    assert_true(object_names(names, 4) >= 1);
    /* every object in the cache directory under the attacker's name too */
    snprintf(evil, sizeof evil, "%s/evil", cache_home);
    assert_int_equal(mkdir(evil, 0700), 0);
    int count = object_names(names, 4);
    for (int i = 0; i < count; i++)
        plant_object(evil, names[i]);
    assert_int_equal(chmod(evil, 0777), 0); /* anyone's: must be refused */
    int from_cc = race(cache_dir, evil, 200);
    assert_true(from_cc > 0); /* the real cache was used between the swaps */

    /* the attacker's directory as a symbolic link to a directory of ours */
    char link[200];
    snprintf(link, sizeof link, "%s/evil-link", cache_home);
    assert_int_equal(chmod(evil, 0700), 0);
    assert_int_equal(symlink(evil, link), 0);
    race(cache_dir, link, 100);
    unlink(link);
}

static void test_exchange_race_on_an_ancestor(void **state)
{
    (void)state;
    if (!have_cc)
        skip();
    /* XDG_CACHE_HOME=cache_home/home, swapped with an attacker's home that
     * others may write, holding a bcgen directory with the planted object */
    char home[140], evil_home[160], evil_cache[180], names[4][80];
    snprintf(home, sizeof home, "%s/home", cache_home);
    snprintf(evil_home, sizeof evil_home, "%s/evil-home", cache_home);
    snprintf(evil_cache, sizeof evil_cache, "%s/bcgen", evil_home);
    assert_int_equal(mkdir(home, 0700), 0);
    assert_int_equal(mkdir(evil_home, 0700), 0);
    assert_int_equal(mkdir(evil_cache, 0700), 0);
    setenv("XDG_CACHE_HOME", home, 1);
    char saved_dir[sizeof cache_dir];
    memcpy(saved_dir, cache_dir, sizeof cache_dir);
    snprintf(cache_dir, sizeof cache_dir, "%s/bcgen", home);
    expect_accepted("the kernel in the new cache");
    int count = object_names(names, 4);
    assert_true(count >= 1);
    for (int i = 0; i < count; i++)
        plant_object(evil_cache, names[i]);
    assert_int_equal(chmod(evil_home, 0777), 0);
    assert_true(race(home, evil_home, 200) > 0);
    setenv("XDG_CACHE_HOME", cache_home, 1);
    memcpy(cache_dir, saved_dir, sizeof cache_dir);
}

static int setup(void **state)
{
    (void)state;
    if (cc_common_setup("test-cc-attack"))
        return -1;
    snprintf(marker, sizeof marker, "%s/MARKER-attacker-code-ran", cache_home);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char link[300];
    snprintf(link, sizeof link, "%s-link", cache_home);
    unlink(link);
    return cc_common_teardown();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused_directories),
        cmocka_unit_test(test_exchange_race_on_the_cache_directory),
        cmocka_unit_test(test_exchange_race_on_an_ancestor),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
