#!/usr/bin/env bash
# Makes a Docker engine available for the compose test (make test runs it).
# An engine and docker-compose already there are used as they are. Only
# with DOCKER=install (make test DOCKER=install; CI=true sets it) does it
# install docker.io and docker-compose and start a root dockerd, on Debian
# as root; otherwise it says how, and TestDockerCompose skips.
set -uo pipefail
if docker info >/dev/null 2>&1 && command -v docker-compose >/dev/null; then
  exit 0
fi
if [ "${DOCKER:-}" != install ]; then
  echo "engine: no Docker engine with docker-compose; TestDockerCompose will skip (make test DOCKER=install installs and starts one, as root on Debian)" >&2
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "engine: DOCKER=install needs root on a Debian-like system; TestDockerCompose will skip" >&2
  exit 0
fi
if ! command -v dockerd >/dev/null || ! command -v docker-compose >/dev/null; then
  echo "engine: installing docker.io and docker-compose (DOCKER=install)" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io docker-compose >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io docker-compose >/dev/null 2>&1; } ||
    { echo "engine: apt-get install docker.io docker-compose failed; TestDockerCompose will skip" >&2; exit 0; }
fi
if ! docker info >/dev/null 2>&1; then
  echo "engine: starting dockerd (log: /tmp/arc-otel-dockerd.log; it keeps running after the tests)" >&2
  nohup dockerd >/tmp/arc-otel-dockerd.log 2>&1 &
  for _ in $(seq 60); do
    docker info >/dev/null 2>&1 && exit 0
    sleep 0.5
  done
  echo "engine: dockerd did not start (see /tmp/arc-otel-dockerd.log); TestDockerCompose will skip" >&2
fi
exit 0
