/* egress-fake.h - a stand-in for the egress helper, for the unit tests
 * of what reads its report (net/egress-report.c, run/live-conns.c). */
#pragma once

#include "net/egress.h"

/* *e as a started helper: a child that is gone at once (egress_finish()
 * kills and reaps it) and the report socket, whose other end *w the test
 * writes as the helper would. */
void egress_fake(struct egress *e, int *w);
