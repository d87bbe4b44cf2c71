# GPU clocks, power and temperature beside a device script's runs, so a side by side shows what
# the GPUs ran at (the H3 forward is power-bound on an H200: its SM clock sits well below the
# boost clock at the 700 W cap, bench/RESULTS.md session 7). Source it, then:
#   telemetry_start "$OUT"          # nvidia-smi samples every 100 ms into $OUT/telemetry.csv
#   telemetry_mark "orochi 480p"    # before a run; the samples until the next mark belong to it
#   telemetry_mark ""               # after it (samples between runs belong to no label)
#   telemetry_stop                  # ends the sampling and prints one line per label and GPU
# Without nvidia-smi the functions do nothing.

telemetry_start() {
  TELEMETRY_DIR="$1"
  TELEMETRY_PID=""
  command -v nvidia-smi > /dev/null || return 0
  : > "$TELEMETRY_DIR/telemetry_marks.txt"
  local fields="index,timestamp,clocks.sm,power.draw,power.limit,temperature.gpu"
  # The power-cap throttle reason, where this driver's nvidia-smi knows the field.
  if nvidia-smi --query-gpu="$fields,clocks_throttle_reasons.sw_power_cap" --format=csv,noheader > /dev/null 2>&1; then
    fields="$fields,clocks_throttle_reasons.sw_power_cap"
  fi
  nvidia-smi --query-gpu="$fields" --format=csv,noheader,nounits -lms 100 > "$TELEMETRY_DIR/telemetry.csv" 2>/dev/null &
  TELEMETRY_PID=$!
}

telemetry_mark() {
  [ -n "${TELEMETRY_PID:-}" ] || return 0
  printf '%s\t%s\n' "$(date '+%Y/%m/%d %H:%M:%S.%3N')" "$1" >> "$TELEMETRY_DIR/telemetry_marks.txt"
}

telemetry_stop() {
  [ -n "${TELEMETRY_PID:-}" ] || return 0
  telemetry_mark ""
  kill "$TELEMETRY_PID" 2> /dev/null
  wait "$TELEMETRY_PID" 2> /dev/null
  TELEMETRY_PID=""
  python3 "$(dirname "${BASH_SOURCE[0]}")/telemetry_summary.py" "$TELEMETRY_DIR/telemetry.csv" \
    "$TELEMETRY_DIR/telemetry_marks.txt"
}
