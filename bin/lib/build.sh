# Shared by bin/phrony-worker and bin/bench in a source checkout (sourced, not run): rebuilds
# with the Maven wrapper when a stamp is missing or older than any source.

# stale HOME STAMP: true when STAMP is missing or any pom, main source, bin/ or conf/ file is newer.
stale() {
  local home=$1 stamp=$2
  [ ! -f "$stamp" ] && return 0
  [ -n "$(find "$home/pom.xml" "$home"/*/pom.xml "$home"/plugins/*/pom.xml \
      "$home"/*/src/main "$home"/plugins/*/src/main "$home/bin" "$home/conf" \
      -newer "$stamp" -type f -print -quit 2>/dev/null)" ]
}

# lock_build HOME WHO: waits until no other launcher builds in HOME, then holds the lock on file
# descriptor 9 (close it with 'exec 9>&-'). Without flock it returns at once.
lock_build() {
  command -v flock >/dev/null 2>&1 || return 0
  mkdir -p "$1/dist/target"
  exec 9>"$1/dist/target/.build.lock"
  if ! flock -n 9; then
    echo "$2: waiting for the build another command started..." >&2
    flock 9
  fi
}

# build HOME JAVA_BIN WHO MVN_ARGS...: runs ./mvnw quietly with that JDK; on failure prints the
# tail of the log and returns 1.
build() {
  local home=$1 java_bin=$2 who=$3; shift 3
  local log; log=$(mktemp "${TMPDIR:-/tmp}/$who-build.XXXXXX")
  if ! (cd "$home" && JAVA_HOME=$(dirname "$(dirname "$java_bin")") \
        ./mvnw -B -q "$@" >"$log" 2>&1); then
    tail -n 40 "$log" >&2
    echo "$who: build failed; full log: $log" >&2
    return 1
  fi
  rm -f "$log"
}
