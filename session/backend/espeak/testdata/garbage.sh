#!/bin/sh
echo "this is not a wav file at all, no"
