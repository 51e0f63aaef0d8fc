# hutch-flags.m4 - add a compiler or linker flag only when it works.
#
# HUTCH_APPEND_CFLAG(VARIABLE, FLAG)
#   Append FLAG to VARIABLE when $CC compiles a program with it and with
#   -Werror, so a flag the compiler only warns about stays out.
# HUTCH_APPEND_LDFLAG(VARIABLE, FLAG)
#   The same for a flag given when linking, tried with AC_LINK_IFELSE.
#
# Both cache the answer (hutch_cv_cflag_FLAG, hutch_cv_ldflag_FLAG) and
# try the flag after the user's own CFLAGS and LDFLAGS, as it will be
# used. Written for hutch rather than taken from autoconf-archive, so
# that building hutch needs no package beyond autoconf and automake.

AC_DEFUN([HUTCH_APPEND_CFLAG], [
  AS_VAR_PUSHDEF([hutch_cache], [hutch_cv_cflag_$2])
  AC_CACHE_CHECK([whether $CC accepts $2], [hutch_cache], [
    hutch_save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS -Werror $2"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <stdio.h>]], [[char b[8]; snprintf(b, sizeof(b), "%d", 1); puts(b);]])],
      [AS_VAR_SET([hutch_cache], [yes])], [AS_VAR_SET([hutch_cache], [no])])
    CFLAGS=$hutch_save_CFLAGS])
  AS_VAR_IF([hutch_cache], [yes], [$1="${$1:+$$1 }$2"])
  AS_VAR_POPDEF([hutch_cache])
])

AC_DEFUN([HUTCH_APPEND_LDFLAG], [
  AS_VAR_PUSHDEF([hutch_cache], [hutch_cv_ldflag_$2])
  AC_CACHE_CHECK([whether the linker accepts $2], [hutch_cache], [
    hutch_save_LDFLAGS=$LDFLAGS
    LDFLAGS="$LDFLAGS -Werror $2"
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <stdio.h>]], [[puts("");]])],
      [AS_VAR_SET([hutch_cache], [yes])], [AS_VAR_SET([hutch_cache], [no])])
    LDFLAGS=$hutch_save_LDFLAGS])
  AS_VAR_IF([hutch_cache], [yes], [$1="${$1:+$$1 }$2"])
  AS_VAR_POPDEF([hutch_cache])
])
