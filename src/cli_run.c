#include "config.h"
#include "cli.h"
#include "exit-codes.h"
int verb_run(int argc, char **argv) { return EXIT_SETUP; }
