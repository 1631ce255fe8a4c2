// Lock-rule annotations. Checked by clang's -Wthread-safety (scripts/thread-safety.sh builds
// core that way, -Werror); documentation under gcc. They only bite on capability types:
// use core/base/mutex.h's Mutex and SharedMutex, not std::mutex, for state they guard.
#pragma once

#if defined(__clang__)
#define MC_THREAD_ATTRIBUTE(x) __attribute__((x))
#else
#define MC_THREAD_ATTRIBUTE(x)
#endif

#define MC_CAPABILITY(x) MC_THREAD_ATTRIBUTE(capability(x))
#define MC_SCOPED_CAPABILITY MC_THREAD_ATTRIBUTE(scoped_lockable)
#define MC_GUARDED_BY(x) MC_THREAD_ATTRIBUTE(guarded_by(x))
#define MC_PT_GUARDED_BY(x) MC_THREAD_ATTRIBUTE(pt_guarded_by(x))
#define MC_REQUIRES(...) MC_THREAD_ATTRIBUTE(requires_capability(__VA_ARGS__))
#define MC_REQUIRES_SHARED(...) MC_THREAD_ATTRIBUTE(requires_shared_capability(__VA_ARGS__))
#define MC_ACQUIRE(...) MC_THREAD_ATTRIBUTE(acquire_capability(__VA_ARGS__))
#define MC_ACQUIRE_SHARED(...) MC_THREAD_ATTRIBUTE(acquire_shared_capability(__VA_ARGS__))
#define MC_RELEASE(...) MC_THREAD_ATTRIBUTE(release_capability(__VA_ARGS__))
#define MC_RELEASE_SHARED(...) MC_THREAD_ATTRIBUTE(release_shared_capability(__VA_ARGS__))
#define MC_RELEASE_GENERIC(...) MC_THREAD_ATTRIBUTE(release_generic_capability(__VA_ARGS__))
#define MC_TRY_ACQUIRE(...) MC_THREAD_ATTRIBUTE(try_acquire_capability(__VA_ARGS__))
#define MC_TRY_ACQUIRE_SHARED(...) MC_THREAD_ATTRIBUTE(try_acquire_shared_capability(__VA_ARGS__))
#define MC_EXCLUDES(...) MC_THREAD_ATTRIBUTE(locks_excluded(__VA_ARGS__))
#define MC_ASSERT_CAPABILITY(x) MC_THREAD_ATTRIBUTE(assert_capability(x))
#define MC_RETURN_CAPABILITY(x) MC_THREAD_ATTRIBUTE(lock_returned(x))
#define MC_NO_THREAD_SAFETY_ANALYSIS MC_THREAD_ATTRIBUTE(no_thread_safety_analysis)
