/* libm-lazy.c - the math functions of the SQLite linked into hutch,
 * loaded from libm only when one is called.
 *
 * Why: SQLite's SQL math functions (acos() ... trunc(), and FTS5's log)
 * are the only users of libm in hutch, and no statement hutch runs
 * calls them. Still, linking them made libm.so.6 a NEEDED library,
 * which the dynamic loader opens, maps and relocates before main() on
 * every start of hutch: about 50 us of each `hutch run`, a sixth of all
 * the work before the sandbox is cloned. Defining the functions here
 * takes them off libm (the linker finds them in the program and, with
 * --as-needed, drops libm); each still runs libm's own code, looked up
 * with dlopen() the first time it is called. So a query that does use
 * one gets exactly libm's result, errno included.
 *
 * Only the program links this file, never libhutch.a: the unit tests
 * and a build with the libraries linked dynamically keep their libm.
 * If a newer SQLite needs a function missing below, libm simply stays
 * NEEDED, as before.
 */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

/* libm's function `name`, resolved once. Failing to find libm is not a
 * state hutch can go on from (a query would get a wrong number), and
 * cannot happen where glibc is installed: libm is part of it. */
static void *lookup(const char *name)
{
        static void *libm;
        void *h = __atomic_load_n(&libm, __ATOMIC_ACQUIRE);

        if (!h) {
                h = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
                if (!h) {
                        fprintf(stderr, "hutch: cannot load libm.so.6: %s\n", dlerror());
                        abort();
                }
                __atomic_store_n(&libm, h, __ATOMIC_RELEASE);
        }
        void *f = dlsym(h, name);
        if (!f) {
                fprintf(stderr, "hutch: libm.so.6 has no %s\n", name);
                abort();
        }
        return f;
}

#define LAZY1(name)                                                            \
        double name(double x);                                                 \
        double name(double x)                                                  \
        {                                                                      \
                static double (*real)(double);                                 \
                double (*f)(double) = __atomic_load_n(&real, __ATOMIC_ACQUIRE); \
                if (!f) {                                                      \
                        f = (double (*)(double))lookup(#name);                 \
                        __atomic_store_n(&real, f, __ATOMIC_RELEASE);          \
                }                                                              \
                return f(x);                                                   \
        }

#define LAZY2(name)                                                            \
        double name(double x, double y);                                       \
        double name(double x, double y)                                        \
        {                                                                      \
                static double (*real)(double, double);                         \
                double (*f)(double, double) = __atomic_load_n(&real, __ATOMIC_ACQUIRE); \
                if (!f) {                                                      \
                        f = (double (*)(double, double))lookup(#name);         \
                        __atomic_store_n(&real, f, __ATOMIC_RELEASE);          \
                }                                                              \
                return f(x, y);                                                \
        }

LAZY1(acos) LAZY1(acosh) LAZY1(asin) LAZY1(asinh) LAZY1(atan) LAZY1(atanh)
LAZY1(cos) LAZY1(cosh) LAZY1(sin) LAZY1(sinh) LAZY1(tan) LAZY1(tanh)
LAZY1(exp) LAZY1(log) LAZY1(sqrt) LAZY1(trunc)
LAZY2(atan2) LAZY2(fmod) LAZY2(pow)
