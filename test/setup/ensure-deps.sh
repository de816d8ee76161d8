#!/usr/bin/env bash
# Installs what the test suites need that npm does not: Debian packages (Chromium for the
# UI tests, ripgrep and libkrb5-dev for code-server, python3 for the verl reward module, Mesa 25's lavapipe from
# bookworm-backports for WebGPU without a GPU) and the code-server test editor, which is
# cached outside the clone and reused. Idempotent: it only acts on what is missing.
# Without root it prints the exact commands to run and fails.
set -euo pipefail

CODE_SERVER_VERSION=4.100.3
CACHE_DIR="${ROLLOUT_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rollout-studio-test}"
CODE_SERVER_DIR="$CACHE_DIR/code-server-$CODE_SERVER_VERSION"
MESA_MIN_MAJOR=25

log() { printf '[ensure-deps] %s\n' "$*" >&2; }

missing_apt=()
[ -x /usr/bin/chromium ] || missing_apt+=(chromium)
command -v rg >/dev/null 2>&1 || missing_apt+=(ripgrep)
dpkg -s libkrb5-dev >/dev/null 2>&1 || missing_apt+=(libkrb5-dev)
# Debian's python3 (its full standard library) runs the reward module `export verl` writes (test/integration/verl).
/usr/bin/python3 -c 'import ast, json, urllib.request' >/dev/null 2>&1 || missing_apt+=(python3)

mesa_version=$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || true)
need_mesa=1
if [ -n "$mesa_version" ] && [ "${mesa_version%%.*}" -ge "$MESA_MIN_MAJOR" ] 2>/dev/null; then need_mesa=0; fi

backports_line='deb http://deb.debian.org/debian bookworm-backports main'
backports_file=/etc/apt/sources.list.d/rollout-studio-backports.list

if [ ${#missing_apt[@]} -gt 0 ] || [ $need_mesa = 1 ]; then
  if [ "$(id -u)" != 0 ]; then
    log "missing system packages and not running as root. Run as root:"
    [ $need_mesa = 1 ] && log "  echo '$backports_line' > $backports_file"
    log "  apt-get update"
    [ ${#missing_apt[@]} -gt 0 ] && log "  apt-get install -y ${missing_apt[*]}"
    [ $need_mesa = 1 ] && log "  apt-get install -y -t bookworm-backports mesa-vulkan-drivers   # Mesa >= $MESA_MIN_MAJOR lavapipe for WebGPU tests"
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  if [ $need_mesa = 1 ] && ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "$backports_line" > "$backports_file"
  fi
  log "apt-get update"
  apt-get update -qq
  if [ ${#missing_apt[@]} -gt 0 ]; then
    log "installing ${missing_apt[*]}"
    apt-get install -y -qq --no-install-recommends "${missing_apt[@]}" >/dev/null
  fi
  if [ $need_mesa = 1 ]; then
    log "installing mesa-vulkan-drivers from bookworm-backports"
    apt-get install -y -qq --no-install-recommends -t bookworm-backports mesa-vulkan-drivers >/dev/null
  fi
fi

if [ ! -x "$CODE_SERVER_DIR/node_modules/.bin/code-server" ]; then
  log "installing code-server $CODE_SERVER_VERSION into $CODE_SERVER_DIR (about 75 s, 300 MB)"
  # @vscode/ripgrep's postinstall downloads rg from GitHub, which CI cannot reach: seed its
  # download cache with a tarball of Debian's rg instead.
  rg_cache="${TMPDIR:-/tmp}/vscode-ripgrep-cache-1.15.11"
  rg_tar="$rg_cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz"
  if [ ! -f "$rg_tar" ]; then
    mkdir -p "$rg_cache"
    tmp=$(mktemp -d); cp "$(command -v rg)" "$tmp/rg"; tar -C "$tmp" -czf "$rg_tar" rg; rm -rf "$tmp"
  fi
  staging="$CODE_SERVER_DIR.partial"
  rm -rf "$staging"; mkdir -p "$staging"
  (cd "$staging" && echo '{"name":"code-server-test-editor","private":true}' > package.json &&
    npm_config_yes=true npm install --no-save --no-audit --no-fund --unsafe-perm "code-server@$CODE_SERVER_VERSION" >install.log 2>&1) ||
    { log "code-server install failed; see $staging/install.log"; tail -30 "$staging/install.log" >&2; exit 1; }
  rm -rf "$CODE_SERVER_DIR"; mv "$staging" "$CODE_SERVER_DIR"
fi
echo "$CODE_SERVER_DIR/node_modules/.bin/code-server"
