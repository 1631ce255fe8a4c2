# Sourced by the build scripts: compile through ccache when it is installed, so a rebuild of
# unchanged sources (another build directory, a fresh clone on the same machine) costs a cache
# look-up instead of a compile. Paths are hashed relative to the checkout (CCACHE_BASEDIR) and
# without the build directory (CCACHE_NOHASHDIR), so two clones share their entries. CMake
# reads the launcher variables when it first configures a build directory.
if command -v ccache >/dev/null; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR=1
  export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-20G}"  # five build trees (normal, tsa, asan, tsan, fuzz)
fi
