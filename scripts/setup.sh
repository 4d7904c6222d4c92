#!/usr/bin/env bash
# Installs every Debian 12 package the build and the tests need, and nothing
# when all are present (idempotent; quiet). Run as root or with sudo available.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache
  libgrpc++-dev libgrpc-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libssl-dev
  libabsl-dev prometheus-cpp-dev grpc-proto
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-14 libclang-rt-14-dev libfuzzer-14-dev clang-format-14
  coinor-libclp-dev
  python3 python3-grpcio python3-protobuf python3-yaml prometheus curl openssl yamllint
  util-linux
  python3-torch python3-torchvision
  python3-venv python3-pip python3-setuptools python3-wheel
)
# kubectl (for kustomize), unless one is already there.
if ! command -v kubectl >/dev/null 2>&1; then
  packages+=(kubernetes-client)
fi
# Node.js and npm for the Node client test, unless a Node.js is already there.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
