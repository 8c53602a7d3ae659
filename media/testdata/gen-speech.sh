#!/usr/bin/env bash
# Synthesizes the speech fixtures used by the VAD, Twilio and WebRTC tests:
# short English utterances from espeak-ng (22050 Hz), resampled by sox to
# 16 kHz and 8 kHz mono PCM16, with 300 ms of silence before and 500 ms after
# so tests know where speech starts and ends. Output is committed; rerun only
# to change the fixtures:  bash media/testdata/gen-speech.sh
set -euo pipefail
cd "$(dirname "$0")"
command -v espeak-ng >/dev/null || { echo "need espeak-ng (apt-get install espeak-ng)" >&2; exit 1; }
command -v sox >/dev/null || { echo "need sox (apt-get install sox)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

synth() { # name text
  espeak-ng -v en-us -s 160 -w "$tmp/$1.wav" "$2"
  for rate in 16000 8000; do
    sox "$tmp/$1.wav" -r "$rate" -c 1 -b 16 -e signed-integer "$1-${rate%000}k.wav" pad 0.3 0.5
  done
}

synth hello "Hello, I would like to book a table for two tonight."
synth stop "Wait, stop. That is not what I asked."
ls -l ./*.wav
