# Shared by bin/phrony-worker and bin/bench (sourced, not run): finds a JDK.
#
#   source "$here/lib/java.sh"
#   java_bin=$(find_java 21) || { echo "no Java 21+" >&2; exit 1; }
#
# Looks at JAVA_HOME, then java on the PATH, then the newest /usr/lib/jvm/*/bin/java.

java_home_of() { # prints the home (links resolved) of the JDK or JRE whose java binary is $1
  local real
  real=$(readlink -f "$1" 2>/dev/null) || real=$1
  dirname "$(dirname "$real")"
}

java_major() { # prints the major version of the java binary $1, or nothing
  # The JDK's release file answers without starting a JVM (tens of milliseconds on every launch).
  local rel v
  rel="$(java_home_of "$1")/release"
  if [ -f "$rel" ]; then
    v=$(sed -n 's/^JAVA_VERSION="\([0-9][0-9]*\).*/\1/p' "$rel" | head -n 1)
    if [ -n "$v" ]; then echo "$v"; return 0; fi
  fi
  "$1" -version 2>&1 | sed -n 's/.*version "\([0-9][0-9]*\)\(\.[^"]*\)\{0,1\}".*/\1/p' | head -n 1
}

java_usable() { # $1: java binary, $2: minimum major version
  [ -x "$1" ] || return 1
  local v; v=$(java_major "$1")
  [ -n "$v" ] && [ "$v" -ge "$2" ]
}

find_java() { # $1: minimum major version; prints the java binary or returns 1
  local min=$1
  if [ -n "${JAVA_HOME:-}" ] && java_usable "$JAVA_HOME/bin/java" "$min"; then
    echo "$JAVA_HOME/bin/java"; return 0
  fi
  if command -v java >/dev/null 2>&1 && java_usable "$(command -v java)" "$min"; then
    command -v java; return 0
  fi
  local best="" best_v=0 j v
  for j in /usr/lib/jvm/*/bin/java; do
    [ -x "$j" ] || continue
    v=$(java_major "$j")
    if [ -n "$v" ] && [ "$v" -ge "$min" ] && [ "$v" -gt "$best_v" ]; then
      best=$j; best_v=$v
    fi
  done
  [ -n "$best" ] && { echo "$best"; return 0; }
  return 1
}
