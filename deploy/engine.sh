#!/usr/bin/env bash
# Makes a Docker engine available for the compose test (make test runs it):
# as root on Debian it installs docker.io and docker-compose and starts
# dockerd; elsewhere it says why not, and the test skips with that reason.
set -uo pipefail
if docker info >/dev/null 2>&1 && command -v docker-compose >/dev/null; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "engine: not root on a Debian-like system; TestDockerCompose will skip" >&2
  exit 0
fi
if ! command -v dockerd >/dev/null || ! command -v docker-compose >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io docker-compose >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io docker-compose >/dev/null 2>&1; } ||
    { echo "engine: apt-get install docker.io docker-compose failed; TestDockerCompose will skip" >&2; exit 0; }
fi
if ! docker info >/dev/null 2>&1; then
  nohup dockerd >/tmp/arc-otel-dockerd.log 2>&1 &
  for _ in $(seq 60); do
    docker info >/dev/null 2>&1 && exit 0
    sleep 0.5
  done
  echo "engine: dockerd did not start (see /tmp/arc-otel-dockerd.log); TestDockerCompose will skip" >&2
fi
exit 0
