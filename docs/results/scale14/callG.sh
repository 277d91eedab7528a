#!/usr/bin/env bash
# Call G (fifteenth session, 4 x H200, 64 cores): store_fills_ahead for Kernel Tuner's convolution (two
# 67 MB fills), timed alone and beside 64 busy processes at nice 0, 10 and 19. fb.s: fill_bench.cpp
# built against this checkout's libevo_engine.a, carried untracked (not committed).
set -u
tar xJf bundle.tar.xz 2>/dev/null
export LD_LIBRARY_PATH=$PWD/bundle/lib
P=examples/kernel_tuner/convolution.json
run() { rm -rf /tmp/g-store; ./fb.s $P /tmp/g-store | head -1 | sed "s/^/$1: /"; }
echo "cores $(nproc)"
run alone; run alone2
for i in $(seq 64); do yes > /dev/null & done; sleep 1
run "64 hogs nice 0"; run "64 hogs nice 0 (2)"
kill $(jobs -p) 2>/dev/null; wait 2>/dev/null
for i in $(seq 64); do nice -n 10 yes > /dev/null & done; sleep 1
run "64 hogs nice 10"; run "64 hogs nice 10 (2)"
kill $(jobs -p) 2>/dev/null; wait 2>/dev/null
for i in $(seq 64); do nice -n 19 yes > /dev/null & done; sleep 1
run "64 hogs nice 19"
kill $(jobs -p) 2>/dev/null; wait 2>/dev/null
run "alone again"
df -h /tmp | tail -1
