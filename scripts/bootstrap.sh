#!/usr/bin/env bash
# Install servesim's build dependencies (Debian 12 packages) when missing, then configure and build
# into ./build (or the folder given as $1, with extra CMake arguments after it).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
shift || true

pkgs=(build-essential cmake pkg-config libglib2.0-dev libjson-glib-dev libyaml-dev
      libprotobuf-c-dev protobuf-c-compiler zlib1g-dev libcunit1-dev)
pkgs+=(help2man groff-base) # man pages (packaging/man.cmake) and their test (tests/install)
if ! pkg-config --exists glib-2.0 gmodule-2.0 json-glib-1.0 yaml-0.1 libprotobuf-c zlib cunit \
     || ! command -v protoc-c >/dev/null || ! command -v cmake >/dev/null \
     || ! command -v help2man >/dev/null; then
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo_cmd apt-get update -qq
    $sudo_cmd apt-get install -y -qq --no-install-recommends "${pkgs[@]}"
fi

cmake -S . -B "$build_dir" "$@"
cmake --build "$build_dir" -j"$(nproc)"
