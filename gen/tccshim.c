/* tccshim.c - lets Debian's libtcc.a link into libbcgen.so.
 *
 * Debian ships libtcc only as a static archive built without -fPIC.  Its
 * code reaches its own globals and three of glibc's data symbols (stdout,
 * stderr, environ) with PC-relative relocations, which a shared object may
 * not have against symbols defined elsewhere.  runtime/bcgen.map keeps
 * libtcc's globals local, and this file gives the library hidden local copies
 * of the three glibc symbols, filled from the real ones when it is loaded.
 * bcgen never lets libtcc print (errors go to a callback), so these copies
 * only matter as a fallback.  Linked into libbcgen.so only, never into
 * libbcgen.a or the bcgen executable. */
#include <dlfcn.h>

__attribute__((visibility("hidden"))) void *stdout;
__attribute__((visibility("hidden"))) void *stderr;
__attribute__((visibility("hidden"))) char **environ;

__attribute__((constructor)) static void tccshim_init(void)
{
    void **p;
    if ((p = dlsym(RTLD_DEFAULT, "stdout")))
        stdout = *p;
    if ((p = dlsym(RTLD_DEFAULT, "stderr")))
        stderr = *p;
    char ***e = dlsym(RTLD_DEFAULT, "environ");
    if (e)
        environ = *e;
}
