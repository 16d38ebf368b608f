#!/bin/sh
# Spark needs a Java runtime, 17 or newer.  Install one with apt when it is missing and
# this is a Debian-like machine where we are root; otherwise say what to do.
set -eu

java_major() {
    java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1
}

if command -v java >/dev/null 2>&1; then
    major=$(java_major)
    if [ -n "$major" ] && [ "$major" -ge 17 ]; then
        exit 0
    fi
    echo "Java $major found; Spark needs Java 17 or newer." >&2
fi

if [ -f /etc/debian_version ] && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing a Java 17 runtime with apt-get ..."
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless
    exit 0
fi

cat >&2 <<'MSG'
Spark needs a Java runtime (17 or newer) and none was found.
Install one and run `make demo` again, for example:
  Debian/Ubuntu:  sudo apt-get install openjdk-17-jre-headless
  macOS:          brew install openjdk@17
or set JAVA_HOME to an existing Java 17+ installation.
MSG
exit 1
