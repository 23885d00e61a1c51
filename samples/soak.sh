#!/usr/bin/env bash
# Soak: hark at its measured capacity for an hour, embedded calls and relayed calls at once,
# resident memory recorded after every round and plotted (BENCHMARKS.md "Soak").
#
#   samples/soak.sh [OUT_DIR]      # env: MINUTES=60 CALLS=18 RELAY_CALLS=4 ROUND_S=180
#
# Runs the release binary (build it first: cargo build --release). The relayed calls go to
# the Deepgram mock of the test kit (hark-testkit/src/provider_mock.rs), served by its
# provider-mock binary (built and started here). Nothing else should run on the machine:
# the embedded recognizer decodes at idle priority, so other load fails calls by lag.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/hark-soak}
minutes=${MINUTES:-60}
calls=${CALLS:-18}
relay_calls=${RELAY_CALLS:-4}
round_s=${ROUND_S:-180}
port=${PORT:-18080}
mkdir -p "$out"
hark=target/release/hark
export DEEPGRAM_API_KEY=soak-key

pids=()
cleanup() { for p in "${pids[@]}"; do pkill -P "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

# The provider mock, for as long as the soak and a margin.
rm -f "$out/mock-url"
HARK_SOAK_MOCK_URL_FILE="$out/mock-url" HARK_SOAK_MOCK_SECS=$((minutes * 60 + 1200)) \
  cargo run --release -p hark-testkit --bin provider-mock >"$out/mock.log" 2>&1 &
pids+=($!)
for _ in $(seq 600); do [ -s "$out/mock-url" ] && break; sleep 1; done
mock_url=$(cat "$out/mock-url")

cat >"$out/hark.toml" <<TOML
listen = "127.0.0.1:$port"
[backends.dg]
type = "deepgram"
url = "$mock_url"
[profiles.relay]
backend = "dg"
TOML
HARK_LOG=warn "$hark" serve --config "$out/hark.toml" >"$out/serve.log" 2>&1 &
server=$!
pids+=($server)
until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; do sleep 1; done

rss_kb() { awk '/VmRSS/{print $2}' "/proc/$server/status"; }
anon_kb() { awk '/RssAnon/{print $2}' "/proc/$server/status"; }
field() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"; }
echo -e "round\tminute\trss_mb\tanon_mb\tcalls\tfailed\trelay_calls\trelay_failed\tttf_p50_ms\tttf_p95_ms" >"$out/rounds.tsv"
echo -e "0\t0\t$(( $(rss_kb) / 1024 ))\t$(( $(anon_kb) / 1024 ))\t0\t0\t0\t0\t\t" >>"$out/rounds.tsv"
start=$(date +%s)
round=0
while [ $(( $(date +%s) - start )) -lt $((minutes * 60)) ]; do
  round=$((round + 1))
  nice -n 10 "$hark" bench --url "ws://127.0.0.1:$port/api/custom-transcriber" \
    --calls "$calls" --duration "$round_s" --seed "$round" --report "$out/embedded-$round.json" \
    >"$out/embedded-$round.txt" 2>&1 &
  a=$!
  nice -n 10 "$hark" bench --url "ws://127.0.0.1:$port/api/custom-transcriber/relay" \
    --calls "$relay_calls" --duration "$round_s" --seed "$round" --report "$out/relay-$round.json" \
    >"$out/relay-$round.txt" 2>&1 &
  b=$!
  wait $a || true
  wait $b || true
  # Calls that end together are trimmed (src/memory.rs) within SETTLE + MIN_INTERVAL.
  sleep 15
  minute=$(( ($(date +%s) - start) / 60 ))
  e="$out/embedded-$round.json"
  r="$out/relay-$round.json"
  echo -e "$round\t$minute\t$(( $(rss_kb) / 1024 ))\t$(( $(anon_kb) / 1024 ))\t$(field "$e" "r['targets'][0]['calls']")\t$(field "$e" "r['targets'][0]['failed_calls']")\t$(field "$r" "r['targets'][0]['calls']")\t$(field "$r" "r['targets'][0]['failed_calls']")\t$(field "$e" "round(r['targets'][0]['time_to_final_ms']['p50'])")\t$(field "$e" "round(r['targets'][0]['time_to_final_ms']['p95'])")" >>"$out/rounds.tsv"
  tail -1 "$out/rounds.tsv"
done
sleep 30
echo -e "idle\t$(( ($(date +%s) - start) / 60 ))\t$(( $(rss_kb) / 1024 ))\t$(( $(anon_kb) / 1024 ))\t\t\t\t\t\t" >>"$out/rounds.tsv"
curl -s "http://127.0.0.1:$port/metrics" >"$out/metrics.txt"
python3 samples/plot-rss.py "$out/rounds.tsv" "$out/rss.svg"
cat "$out/rounds.tsv"
