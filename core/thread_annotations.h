// Lock-rule annotations. Checked by clang's -Wthread-safety; documentation under gcc.
#pragma once

#if defined(__clang__)
#define MC_GUARDED_BY(x) __attribute__((guarded_by(x)))
#define MC_REQUIRES(...) __attribute__((requires_capability(__VA_ARGS__)))
#define MC_EXCLUDES(...) __attribute__((locks_excluded(__VA_ARGS__)))
#else
#define MC_GUARDED_BY(x)
#define MC_REQUIRES(...)
#define MC_EXCLUDES(...)
#endif
