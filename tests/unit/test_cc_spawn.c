/* test_cc_spawn.c - the cc backend's compiler process (issue 9, findings 5
 * and 6).  A probe, run as the compiler through BCGEN_CC, reports what it
 * was given: only descriptors 0 (/dev/null), 1 and 2 (the pipe) even when
 * the application holds descriptors without FD_CLOEXEC, the address-space
 * and CPU limits, its own process group, PR_SET_PDEATHSIG and the cache
 * directory as working directory.  A child another thread starts during a
 * compile inherits neither the pipe nor the cache directory, and a `sleep`
 * started then does not hold the compile up.  A compiler that never ends is
 * killed with its process group after BCGEN_CC_TIMEOUT and the kernel
 * falls back to libtcc, leaving no tmp- file; so does one that runs out
 * of its BCGEN_CC_MEMORY address space; a compiler whose host is
 * killed dies too.  The compiler is looked up only in absolute PATH
 * directories, and bad BCGEN_CC / CC / BCGEN_CC_* settings are errors the
 * note names. */
/* internal.h comes before cmocka.h: cmocka defines a fail() macro. */
#include "internal.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_cc_common.h"

static char real_cc[4200]; /* cc on PATH */
static char probe[200];    /* the probe program (see probe_source) */

static const char probe_source[] =
    "#include <dirent.h>\n#include <limits.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
    "#include <string.h>\n#include <unistd.h>\n#include <sys/prctl.h>\n"
    "#include <sys/resource.h>\n"
    "int main(int argc, char **argv)\n"
    "{\n"
    "    int list = argc > 2 && strcmp(argv[1], \"--list\") == 0;\n"
    "    FILE *f = fopen(list ? argv[2] : getenv(\"BCGEN_TEST_PROBE_OUT\"), \"a\");\n"
    "    DIR *d = opendir(\"/proc/self/fd\");\n"
    "    if (!f || !d) return 125;\n"
    "    fprintf(f, \"fds\");\n"
    "    for (struct dirent *e; (e = readdir(d)) != NULL;) {\n"
    "        int fd = atoi(e->d_name);\n"
    "        char link[64], target[512];\n"
    "        if (e->d_name[0] == '.' || fd == dirfd(d) || fd == fileno(f)) continue;\n"
    "        snprintf(link, sizeof link, \"/proc/self/fd/%d\", fd);\n"
    "        ssize_t n = readlink(link, target, sizeof target - 1);\n"
    "        target[n > 0 ? n : 0] = 0;\n"
    "        fprintf(f, \" %d=%s\", fd, target);\n"
    "    }\n"
    "    closedir(d);\n"
    "    struct rlimit r;\n"
    "    getrlimit(RLIMIT_AS, &r);\n"
    "    fprintf(f, \"\\nas %llu\\n\", (unsigned long long)r.rlim_cur);\n"
    "    getrlimit(RLIMIT_CPU, &r);\n"
    "    fprintf(f, \"cpu %llu\\n\", (unsigned long long)r.rlim_cur);\n"
    "    int sig = 0;\n"
    "    prctl(PR_GET_PDEATHSIG, &sig);\n"
    "    char cwd[PATH_MAX];\n"
    "    fprintf(f, \"leader %d\\ndeathsig %d\\ncwd %s\\n\", getpgrp() == getpid(), sig,\n"
    "            getcwd(cwd, sizeof cwd) ? cwd : \"?\");\n"
    "    fclose(f);\n"
    "    if (list) return 0;\n"
    "    argv[0] = getenv(\"BCGEN_TEST_REAL_CC\");\n"
    "    execv(argv[0], argv);\n"
    "    return 127;\n"
    "}\n";

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static char *read_text(const char *path)
{
    static char text[65536];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f)
        fclose(f);
    text[n] = 0;
    return text;
}

/* An executable shell script at cache_home/NAME. */
static void script(const char *name, const char *body, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", cache_home, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\n%s\n", body);
    fclose(f);
    assert_int_equal(chmod(path, 0700), 0);
}

static void test_compiler_gets_a_closed_limited_process(void **state)
{
    (void)state;
    if (!have_cc)
        skip();
    char report[300], note[600], expected[300];
    snprintf(report, sizeof report, "%s/probe-report", cache_home);
    setenv("BCGEN_TEST_PROBE_OUT", report, 1);
    setenv("BCGEN_TEST_REAL_CC", real_cc, 1);
    setenv("BCGEN_CC", probe, 1);
    setenv("BCGEN_CC_MEMORY", "1536M", 1);
    /* descriptors the application leaves open across exec */
    int leaked = open("/dev/null", O_RDONLY);
    int leaked_pipe[2];
    assert_true(leaked >= 0);
    assert_int_equal(pipe(leaked_pipe), 0);
    check_kernel(701, false, note, sizeof note);
    assert_string_equal(note, ""); /* the probe ran the real compiler */
    close(leaked);
    close(leaked_pipe[0]);
    close(leaked_pipe[1]);
    unsetenv("BCGEN_CC");
    unsetenv("BCGEN_CC_MEMORY");
    char *text = read_text(report);
    for (char *line = text, *end; (end = strchr(line, '\n')) != NULL; line = end + 1)
        printf("# the compiler's process: %.*s\n", (int)(end - line), line);
    char *fds = strstr(text, "fds ");
    assert_non_null(fds);
    assert_memory_equal(fds, "fds 0=/dev/null 1=pipe:[", 24);
    char *line_end = strchr(fds, '\n'), *two = strstr(fds, " 2=pipe:[");
    assert_true(two && two < line_end);
    int count = 0;
    for (char *p = fds; p < line_end; p++)
        count += *p == '=';
    assert_int_equal(count, 3);
    snprintf(expected, sizeof expected, "as %llu\n", 1536ull << 20);
    assert_non_null(strstr(text, expected));
    assert_null(strstr(text, "cpu 18446744073709551615")); /* a CPU limit */
    assert_non_null(strstr(text, "leader 1\n"));
    snprintf(expected, sizeof expected, "deathsig %d\n", SIGKILL);
    assert_non_null(strstr(text, expected));
    char real_dir[4096];
    assert_non_null(realpath(cache_dir, real_dir));
    snprintf(expected, sizeof expected, "cwd %.200s\n", real_dir);
    assert_non_null(strstr(text, expected));
}

typedef struct bystander {
    char list[300];
    pid_t sleeper;
} bystander;

/* Another thread of the application starting children the usual way
 * (fork and exec, no descriptor closing) while a compile is under way. */
static void *start_children(void *arg)
{
    bystander *b = arg;
    usleep(200000);
    pid_t lister = fork();
    if (lister == 0) {
        execl(probe, probe, "--list", b->list, (char *)NULL);
        _exit(127);
    }
    b->sleeper = fork();
    if (b->sleeper == 0) {
        execl("/bin/sleep", "sleep", "3", (char *)NULL);
        _exit(127);
    }
    int status;
    waitpid(lister, &status, 0);
    return NULL;
}

static void test_children_of_other_threads_inherit_nothing(void **state)
{
    (void)state;
    if (!have_cc)
        skip();
    char slow[300], body[4400], note[600];
    snprintf(body, sizeof body, "sleep 0.6\nexec '%s' \"$@\"", real_cc);
    script("slow-cc", body, slow, sizeof slow);
    setenv("BCGEN_CC", slow, 1);
    /* what a child may inherit: this process's descriptors without FD_CLOEXEC */
    bool inheritable[1024] = {false};
    for (int fd = 0; fd < 1024; fd++) {
        int flags = fcntl(fd, F_GETFD);
        inheritable[fd] = flags >= 0 && !(flags & FD_CLOEXEC);
    }
    bystander b = {{0}, 0};
    snprintf(b.list, sizeof b.list, "%s/bystander-fds", cache_home);
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, start_children, &b), 0);
    double start = seconds();
    check_kernel(702, false, note, sizeof note);
    double took = seconds() - start;
    pthread_join(thread, NULL);
    unsetenv("BCGEN_CC");
    assert_string_equal(note, "");
    kill(b.sleeper, SIGKILL);
    waitpid(b.sleeper, NULL, 0);
    char *text = read_text(b.list);
    printf("# a child started during the compile: %.*s\n", (int)strcspn(text, "\n"), text);
    /* it has what this process had before the compile, nothing more: not
     * the compiler's pipe, the cache directory or an object */
    char *p = strstr(text, "fds ");
    assert_non_null(p);
    for (p += 3; *p == ' ';) {
        int fd = atoi(p + 1);
        if (fd < 0 || fd >= 1024 || !inheritable[fd])
            fail_msg("the child inherited descriptor %.60s", p + 1);
        p = strpbrk(p + 1, " \n");
    }
    assert_null(strstr(text, cache_home));
    /* the old pipe stayed open in `sleep 3`, and the compile waited for it */
    printf("# the compile took %.2f s with a `sleep 3` started during it\n", took);
    assert_true(took < 2.5);
}

/* Whether process PID is gone (or a zombie nobody reaped yet). */
static bool gone(pid_t pid)
{
    char path[64], text[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return true;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    char *close_paren = strrchr(text, ')');
    return close_paren && (close_paren[2] == 'Z' || close_paren[2] == 'X');
}

static bool gone_within(pid_t pid, double limit)
{
    double start = seconds();
    while (!gone(pid) && seconds() - start < limit)
        usleep(10000);
    return gone(pid);
}

static void test_time_limit_kills_the_process_group(void **state)
{
    (void)state;
    if (!have_cc)
        skip();
    char hang[300], pids[300], body[800], note[600];
    snprintf(pids, sizeof pids, "%s/hang-pids", cache_home);
    /* a compiler that never ends, with a child of its own */
    snprintf(body, sizeof body,
             "sleep 1000 &\necho $! > '%s'\necho $$ >> '%s'\nexec sleep 1000", pids, pids);
    script("hang-cc", body, hang, sizeof hang);
    setenv("BCGEN_CC", hang, 1);
    setenv("BCGEN_CC_TIMEOUT", "0.5", 1);
    double start = seconds();
    check_kernel(703, false, note, sizeof note);
    double took = seconds() - start;
    unsetenv("BCGEN_CC");
    unsetenv("BCGEN_CC_TIMEOUT");
    printf("# %.2f s: %s\n", took, note);
    assert_non_null(strstr(note, "ran past the time limit of 0.5 s (BCGEN_CC_TIMEOUT)"));
    assert_non_null(strstr(note, "compiled with libtcc"));
    assert_true(took < 2.5);
    int child = 0, leader = 0;
    assert_int_equal(sscanf(read_text(pids), "%d %d", &child, &leader), 2);
    assert_true(gone_within(leader, 1.0));
    assert_true(gone_within(child, 1.0)); /* the whole group */
    assert_int_equal(temporary_files(), 0);
}

static void test_memory_limit_stops_the_compiler(void **state)
{
    (void)state;
    if (!have_cc)
        skip();
    char note[600];
    setenv("BCGEN_CC_MEMORY", "32M", 1); /* cc1 needs more address space */
    check_kernel(708, false, note, sizeof note);
    unsetenv("BCGEN_CC_MEMORY");
    printf("# %s\n", note);
    assert_non_null(strstr(note, "failed (under the BCGEN_CC_MEMORY limit)"));
    assert_non_null(strstr(note, "compiled with libtcc"));
    assert_int_equal(temporary_files(), 0);
    char names[8][80];
    assert_int_equal(object_names(names, 8), 2); /* 701 and 702 only */
}

static void test_compiler_dies_with_its_host(void **state)
{
    (void)state;
    if (!have_cc)
        skip();
    char hang[300], pids[300], body[600];
    snprintf(pids, sizeof pids, "%s/orphan-pid", cache_home);
    unlink(pids);
    snprintf(body, sizeof body, "echo $$ > '%s'\nexec sleep 1000", pids);
    script("orphan-cc", body, hang, sizeof hang);
    pid_t host = fork();
    if (host == 0) { /* a host process that is killed while compiling */
        setenv("BCGEN_CC", hang, 1);
        char note[600];
        check_kernel(704, false, note, sizeof note);
        _exit(0);
    }
    assert_true(host > 0);
    int compiler = 0;
    for (int i = 0; i < 500 && sscanf(read_text(pids), "%d", &compiler) != 1; i++)
        usleep(10000);
    assert_true(compiler > 0);
    kill(host, SIGKILL);
    waitpid(host, NULL, 0);
    assert_true(gone_within(compiler, 2.0));
}

static void test_compiler_lookup(void **state)
{
    (void)state;
    if (!have_cc)
        skip();
    char note[600], marker[300], body[400], fake[300], old_cwd[4096], work[300];
    char *old_path = strdup(getenv("PATH"));
    assert_non_null(old_path);
    assert_non_null(getcwd(old_cwd, sizeof old_cwd));
    /* a working directory with a `cc` and a `gcc` that must never run */
    snprintf(work, sizeof work, "%s/work", cache_home);
    snprintf(marker, sizeof marker, "%s/relative-cc-ran", cache_home);
    assert_int_equal(mkdir(work, 0700), 0);
    snprintf(body, sizeof body, "touch '%s'\nexit 1", marker);
    script("work/cc", body, fake, sizeof fake);
    script("work/gcc", body, fake, sizeof fake);
    assert_int_equal(mkdir(strcat(work, "/bin"), 0700), 0);
    script("work/bin/cc", body, fake, sizeof fake);
    assert_int_equal(chdir(cache_home), 0);
    assert_int_equal(chdir("work"), 0);

    /* only relative entries (".", "", "bin"): no compiler at all */
    setenv("PATH", ".::bin", 1);
    check_kernel(705, false, note, sizeof note);
    assert_non_null(strstr(note, "no C compiler: BCGEN_CC and CC are unset and neither cc nor "
                                 "gcc is in an absolute directory of PATH"));
    /* relative entries first, then the real ones: the real cc */
    char path[4500];
    snprintf(path, sizeof path, ".:bin::%s", old_path);
    setenv("PATH", path, 1);
    check_kernel(706, false, note, sizeof note);
    assert_string_equal(note, "");
    assert_int_equal(access(marker, F_OK), -1);

    /* settings */
    setenv("CC", "./cc", 1);
    check_kernel(707, false, note, sizeof note);
    assert_non_null(strstr(note, "CC=./cc is a relative path"));
    setenv("CC", "gcc -m32", 1);
    check_kernel(707, false, note, sizeof note);
    assert_non_null(strstr(note, "CC=gcc -m32 is not an executable in an absolute directory"));
    setenv("BCGEN_CC", real_cc, 1); /* BCGEN_CC wins over CC */
    check_kernel(707, false, note, sizeof note);
    assert_string_equal(note, "");
    setenv("BCGEN_CC", "/nonexistent/cc", 1);
    check_kernel(707, false, note, sizeof note);
    assert_non_null(strstr(note, "BCGEN_CC=/nonexistent/cc is not an executable file"));
    unsetenv("BCGEN_CC");
    unsetenv("CC");
    assert_int_equal(access(marker, F_OK), -1);

    setenv("BCGEN_CC_TIMEOUT", "soon", 1);
    check_kernel(707, false, note, sizeof note);
    assert_non_null(strstr(note, "BCGEN_CC_TIMEOUT='soon' is not a number of seconds"));
    unsetenv("BCGEN_CC_TIMEOUT");
    setenv("BCGEN_CC_MEMORY", "-1", 1);
    check_kernel(707, false, note, sizeof note);
    assert_non_null(strstr(note, "BCGEN_CC_MEMORY='-1' is not a size"));
    unsetenv("BCGEN_CC_MEMORY");

    setenv("PATH", old_path, 1);
    free(old_path);
    assert_int_equal(chdir(old_cwd), 0);
}

static int setup(void **state)
{
    (void)state;
    if (cc_common_setup("test-cc-spawn"))
        return -1;
    if (!have_cc)
        return 0;
    const char *path = getenv("PATH");
    while (path && *path && !real_cc[0]) {
        const char *colon = strchr(path, ':');
        int n = colon ? (int)(colon - path) : (int)strlen(path);
        snprintf(real_cc, sizeof real_cc, "%.*s/cc", n, path);
        if (path[0] != '/' || access(real_cc, X_OK) != 0)
            real_cc[0] = 0;
        path += n + (colon ? 1 : 0);
    }
    char source[200], command[700];
    snprintf(source, sizeof source, "%s/probe.c", cache_home);
    snprintf(probe, sizeof probe, "%s/probe", cache_home);
    FILE *f = fopen(source, "w");
    if (!f)
        return -1;
    fputs(probe_source, f);
    fclose(f);
    snprintf(command, sizeof command, "'%s' -o '%s' '%s'", real_cc, probe, source);
    return system(command) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return cc_common_teardown();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compiler_gets_a_closed_limited_process),
        cmocka_unit_test(test_children_of_other_threads_inherit_nothing),
        cmocka_unit_test(test_time_limit_kills_the_process_group),
        cmocka_unit_test(test_memory_limit_stops_the_compiler),
        cmocka_unit_test(test_compiler_dies_with_its_host),
        cmocka_unit_test(test_compiler_lookup),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
