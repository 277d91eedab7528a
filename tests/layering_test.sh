#!/usr/bin/env bash
# The stages' layering (DESIGN.md): gates/ and population/ build on engine/'s base types; inside
# engine/ only the parts that drive the gates and the store (the worker, the GPU evaluator, the
# run loop: the evo_loop library) include them, so engine/ has no cycle through gates/ or
# population/. Fails naming each include that breaks it.
set -u
src="${1:?source dir}"
cd "$src" || exit 2
bad=0
for f in engine/*.cpp engine/*.h engine/search/*.cpp engine/search/*.h; do
  case "$f" in engine/worker.*|engine/gpu_evaluator.*|engine/run.*) continue ;; esac
  while IFS= read -r line; do
    echo "layering: $f includes $line (only worker, gpu_evaluator and run may)"; bad=1
  done < <(grep -oE '#include "(gates|population|cli)/[^"]+"' "$f")
done
for f in gates/*.cpp gates/*.h population/*.cpp population/*.h; do
  while IFS= read -r line; do
    echo "layering: $f includes $line (gates/ and population/ build on engine/ only)"; bad=1
  done < <(grep -oE '#include "(gates|population|cli)/[^"]+"' "$f" | grep -v "\"$(dirname "$f")/")
done
[ "$bad" = 0 ] && echo "layering: engine/ -> gates/, population/ only through worker, gpu_evaluator, run: ok"
exit "$bad"
