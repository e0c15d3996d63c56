#!/usr/bin/env bash
# The Prometheus rules and the Grafana dashboard we ship, offline: `promtool check rules` on
# examples/prometheus/rules.yml, `promtool test rules` on its rules_test.yml (every alert firing
# and silent where it should), and every dashboard query, written as a recording rule by
# tests/profiler/dashboard_check.py --as-rules, through `promtool check rules` (it parses them).
# Exits 77 (skip) with one line when promtool is missing, unless CI=true.
# Usage: rules_test.sh SOURCE_DIR
set -euo pipefail

src=${1:?usage: rules_test.sh SOURCE_DIR}
for tool in promtool:prometheus python3:python3; do
  if ! command -v "${tool%%:*}" >/dev/null; then
    if [[ ${CI:-} == true ]]; then
      echo "FAIL: ${tool%%:*} not installed (CI needs it: tools/install-deps.sh)"
      exit 1
    fi
    echo "SKIP: ${tool%%:*} not installed (Debian package ${tool#*:})"
    exit 77
  fi
done

work=$(mktemp -d /tmp/pilot-prom-rules-XXXXXX)
trap 'rm -rf "$work"' EXIT

promtool check rules "$src/examples/prometheus/rules.yml"
promtool test rules "$src/examples/prometheus/rules_test.yml"
python3 "$src/tests/profiler/dashboard_check.py" --as-rules "$work/dashboard.yml" \
  --dashboard "$src/examples/grafana/nccl-pilot-dashboard.json" \
  --rules "$src/examples/prometheus/rules.yml"
if ! promtool check rules "$work/dashboard.yml"; then
  echo "FAIL: a dashboard query does not parse; the queries as rules (dashboard:panel_ID_REFID):"
  cat "$work/dashboard.yml"
  exit 1
fi
echo "ok: rules, their unit tests and the dashboard's queries"
