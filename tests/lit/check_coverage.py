#!/usr/bin/env python3
"""Fails when a diagnostic code of kinds.def has no file test.

A code counts as tested when some file under the lit tree names it as `[CODE]` in an
expectation (`expected-error [A2003] {{...}}`) or a CHECK line. Notes (A0xxx) ride on other
diagnostics and are exempt. Usage: check_coverage.py KINDS_DEF LIT_DIR
"""
import os
import re
import sys

# Codes no spec can trigger through accelc today, each with where it is tested instead.
EXEMPT = {
    "A2011": "no stdlib field is deprecated yet (FSDP's sharding_strategy comes with #4); sema_test covers it",
    "A2013": "needs a broken stdlib or an overflow; sema_test and syntax/fail_rule_overflow.test cover it",
}


def main():
    kinds, lit_dir = sys.argv[1], sys.argv[2]
    codes = re.findall(r'ACCEL_DIAGNOSTIC\(\w+, "(A\d{4})", (\w+),', open(kinds).read())
    wanted = sorted(code for code, severity in codes if severity != "Note" and code not in EXEMPT)
    seen = set()
    for folder, _, files in os.walk(lit_dir):
        for name in files:
            if name.endswith((".accel", ".test")):
                with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                    seen.update(re.findall(r"\[(A\d{4})\]", f.read()))
    missing = [code for code in wanted if code not in seen]
    for code in missing:
        print(f"diagnostic {code} has no file test under {lit_dir}")
    print(f"{len(wanted) - len(missing)} of {len(wanted)} diagnostic codes have file tests ({len(EXEMPT)} exempt)")
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
