#!/usr/bin/env bash
# GPU acceptance for live diagnosis (issue 5): run on a machine with a CUDA GPU.
# Writes one JSON diagnosis per script into tests/gpu-records/ and checks kind,
# location and that the CUDA memory probes are present. Under 5 minutes.
set -u
cd "$(dirname "$0")/../../.."
PY=${PYTHON:-.venv/bin/python}
OUT=${1:-tests/gpu-records}
mkdir -p "$OUT"
status=0
for name in cuda_oom device_assert device_mismatch; do
  CUDA_LAUNCH_BLOCKING=1 timeout 120 "$PY" -m traindoctor run --format json -- "$PY" "tests/live/gpu/$name.py" \
    > "$OUT/$name.stdout" 2> "$OUT/$name.stderr"
  echo "$name: exit $?"
  tail -n 1 "$OUT/$name.stdout" > "$OUT/$name.json"
  "$PY" - "$OUT/$name.json" "$name" <<'PYCHECK' || status=1
import json, sys
data = json.load(open(sys.argv[1]))
name = sys.argv[2]
expected = {"cuda_oom": "cuda-oom", "device_assert": "device-side-assert", "device_mismatch": "device-mismatch"}[name]
d = data["diagnosis"]
env = d["details"]["probes"].get("env", {})
print(f"  kind={d['kind']} location={d['location']['path']}:{d['location']['line']} "
      f"device={env.get('device', {}).get('name')} cuda_memory={env.get('cuda_memory')}")
assert d["kind"] == expected, d["kind"]
assert d["location"] and d["location"]["path"].endswith(name + ".py")
assert "cuda_memory" in env, "no CUDA memory probe"
if name == "cuda_oom":
    assert d["details"]["memory"]["parameters"] > 0 and d["details"]["memory"].get("summary")
PYCHECK
done
exit $status
