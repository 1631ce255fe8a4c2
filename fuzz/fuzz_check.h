// FUZZ_CHECK: a property a fuzz target asserts. A failure prints what broke and aborts, which
// libFuzzer reports as a crash (and scripts/fuzz.sh as a failure), with the input saved.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond)                                                                  \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            std::fprintf(stderr, "%s:%d: fuzz property failed: %s\n", __FILE__, __LINE__, \
                         #cond);                                                          \
            std::abort();                                                                 \
        }                                                                                 \
    } while (0)
