/* caps.h - strips a process of every privilege before it becomes the job. */
#pragma once

/* Drop every capability from the bounding, ambient, inheritable,
 * permitted and effective sets, lock the securebits so a uid 0 job
 * cannot regain any at execve, and set no_new_privs so setuid binaries
 * and file capabilities give nothing. 0 or -errno. */
int caps_drop_all(void);

/* Restore the effective set from the permitted set (after a uid change
 * with PR_SET_KEEPCAPS). 0 or -errno. */
int caps_raise_effective(void);
