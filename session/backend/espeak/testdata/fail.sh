#!/bin/sh
echo "espeak-ng: voice not found" >&2
exit 1
