#!/usr/bin/env bash
# Proves the runtime stage of docker/Dockerfile complete without a Docker
# engine: every shared library the binaries load must come from a Debian
# package that the runtime stage installs. Also checks the image hygiene the
# deployment relies on. Usage: runtime_libs_test.sh DOCKERFILE BINARY...
set -u
dockerfile=$1
shift
passed=0
failed=0
check() {
  local name=$1
  shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $name"; fi
}

# The package list of the runtime stage's apt-get install.
runtime=$(awk '/^FROM .* AS runtime/{on=1} on' "$dockerfile")
packages=$(printf '%s\n' "$runtime" | sed -n '/apt-get install/,/rm -rf/p' |
  tr ' \\' '\n\n' | grep -E '^[a-z0-9][a-z0-9.+-]+$' |
  grep -vE '^(apt-get|install|rm|DEBIAN_FRONTEND|noninteractive|no-install-recommends)$' | sort -u)
check "runtime stage installs packages" test -n "$packages"

for binary in "$@"; do
  check "$binary exists" test -x "$binary"
  libs=$(ldd "$binary" | awk '$3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u)
  check "$binary loads libraries" test -n "$libs"
  for lib in $libs; do
    package=$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null | head -1 | cut -d: -f1)
    [ -n "$package" ] || package=$(dpkg -S "$lib" 2>/dev/null | head -1 | cut -d: -f1)
    if [ -z "$package" ]; then
      check "$lib belongs to a Debian package" false
      continue
    fi
    check "$lib ($package) is installed by the runtime stage" \
      grep -qx -- "$package" <<<"$packages"
  done
done

# Image hygiene.
check "base images pinned by digest" grep -qE '^ARG DEBIAN_IMAGE=debian:bookworm-slim@sha256:[0-9a-f]{64}$' "$dockerfile"
check "every stage uses the pinned base" test "$(grep -c '^FROM \${DEBIAN_IMAGE} AS ' "$dockerfile")" = 2
check "numeric non-root user" grep -qE '^USER [1-9][0-9]*:[1-9][0-9]*$' <<<"$runtime"
check "exec-form entrypoint" grep -qE '^ENTRYPOINT \["/usr/local/bin/slackswap-server"\]$' <<<"$runtime"
check "gRPC and metrics ports exposed" grep -qE '^EXPOSE 50051 9464$' <<<"$runtime"
check "apt lists removed" grep -q 'rm -rf /var/lib/apt/lists' <<<"$runtime"

echo "$passed passed, $failed failed"
test "$failed" = 0
