#!/usr/bin/env bash
# The test command (`npm test`): provisions what the tests need, then runs lint, type checks and
# every test. Tests start their own redis-server (also as a six-node Cluster, and with redis-sentinel
# as a Sentinel set) and PostgreSQL server (a throwaway cluster in a temp directory, run as the
# postgres user when root) on free loopback ports and stop them afterwards; the
# browser test drives Debian's chromium (never a downloaded browser) through playwright-core; the path
# tests put Debian's nginx (nginx-light) and Python's http.server behind the edge as real origins.
# wrk is the load generator of `npm run bench`, provisioned here with the rest. Debian's prometheus
# (the server and promtool) scrapes the edge and the origin in test/prometheus.test.ts. Debian's dnsmasq
# (dnsmasq-base: the binary, no service) answers the crawler checks' DNS on loopback (test/support/dnsmasq.ts).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
command -v redis-sentinel >/dev/null 2>&1 || need_apt+=(redis-sentinel)
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || need_apt+=(postgresql)
[ -x /usr/sbin/nginx ] || need_apt+=(nginx-light)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
command -v wrk >/dev/null 2>&1 || need_apt+=(wrk)
command -v prometheus >/dev/null 2>&1 || need_apt+=(prometheus)
[ -x /usr/sbin/dnsmasq ] || need_apt+=(dnsmasq-base)
# A Japanese font for the queue page's screenshots in Chromium (DejaVu Sans, already here, has Arabic).
[ -e /usr/share/fonts/opentype/ipafont-gothic/ipag.ttf ] || need_apt+=(fonts-ipafont-gothic)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test: installing ${need_apt[*]} with apt-get"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "test: missing ${need_apt[*]}. Install with: sudo apt-get update && sudo apt-get install -y ${need_apt[*]}" >&2
    exit 1
  fi
fi

if [ ! -x node_modules/.bin/vitest ]; then
  npm install --no-audit --no-fund
fi

echo "test: lint and format (biome)"
npx biome check .
echo "test: types (strict; the core with no runtime types)"
npx tsc -p tsconfig.json --noEmit
npx tsc -p tsconfig.core.json --noEmit
echo "test: vitest"
npx vitest run "$@"
