"""The training script every case names. It only writes what it was given, so that a real
`accelerate launch` of it needs no GPU and no torch: $DUMP_DIR/rank-$RANK.json (rank 0 when
RANK is unset) with the interpreter's argv (sys.orig_argv, which shows -u) and os.environ."""
import json
import os
import sys

out = os.environ.get("DUMP_DIR")
if out:
    path = os.path.join(out, f"rank-{os.environ.get('RANK', '0')}.json")
    with open(path, "w") as f:
        json.dump({"orig_argv": sys.orig_argv, "env": dict(os.environ)}, f)
