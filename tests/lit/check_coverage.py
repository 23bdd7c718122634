#!/usr/bin/env python3
"""Fails when a diagnostic code or a stdlib rule has no file test, or a passing case would
pass with warnings.

Diagnostic codes (kinds.def): some file under the lit tree names the code as `[CODE]` in an
expectation (`expected-error [A2003] {{...}}`) or a CHECK line. Notes (A0xxx) are exempt.

Stdlib rules (`rule ID ...` in stdlib/*.accel):
- a failing test: some file under LIT_DIR/rules names `[ID]`;
- a passing test: a file `ID.pass.<ext>` under LIT_DIR/rules;
- for rules of records a config file can reach (from ClusterConfig, SageMakerConfig or
  DeepSpeedConfig), also a failing test in config-file form: a `.yaml`, `.yml` or `.test` file
  under LIT_DIR/rules that names `[ID]`.

Rules with several conditions (docs/rules/clauses.md, DOCS_DIR):
- a rule id declared more than once (one declaration per condition) needs, for each
  declaration, a failing test under LIT_DIR/rules whose expectation quotes that declaration's
  message, and at least as many failing tests as declarations;
- every such id is listed in the clause table of DOCS_DIR/clauses.md, and each row of that
  table names either failing tests (files under LIT_DIR/rules that name `[ID]`; outcomes
  `test` and `changed`) or, for a condition Accel leaves out, the reason; every test file a
  row names exists.

Usage: check_coverage.py KINDS_DEF LIT_DIR STDLIB_DIR [DOCS_DIR]
"""
import os
import re
import sys

# Codes no spec can trigger through accelc, each with where it is tested instead.
EXEMPT = {
    "A2013": "needs a broken stdlib or an overflow; syntax/fail_rule_overflow.test covers the overflow",
    "A2009": "retired: `import` and `extends` work now; the row stays so the code is never reused",
    "A4001": "retired: every distributed_type lowers or has its own code (A4004, A4024); the row stays so the code is never reused",
    "A4007": "retired: accelrun starts a job with `mpirun_config` through mpirun; the row stays so the code is never reused",
}
CONFIG_ROOTS = ["ClusterConfig", "SageMakerConfig", "DeepSpeedConfig"]


def lit_files(lit_dir):
    for folder, _, files in os.walk(lit_dir):
        for name in files:
            if name.endswith((".accel", ".test", ".yaml", ".yml")):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    yield path, f.read()


def parse_stdlib(stdlib_dir):
    """Returns ({record: set of type names its fields use}, {rule id: set of records})."""
    uses, rules = {}, {}
    for name in sorted(os.listdir(stdlib_dir)):
        if not name.endswith(".accel"):
            continue
        record = None
        with open(os.path.join(stdlib_dir, name), encoding="utf-8") as f:
            for line in f:
                code = line.split("//")[0]
                m = re.match(r"\s*(kwargs|plugin|config|record|extend)\s+(\w+)\s*\{", code)
                if m:
                    record = m.group(2)
                    uses.setdefault(record, set())
                    continue
                if record is None:
                    continue
                m = re.match(r"\s*rule\s+([A-Za-z0-9_-]+)\s", code)
                if m:
                    rules.setdefault(m.group(1), set()).add(record)
                    continue
                m = re.match(r"\s*\w+\s*:\s*([^=]+?)(=|\bfrom\b|\bwhere\b|\balias\b|\bkey\b|\bdeprecated\b|$)", code)
                if m and not code.strip().startswith(("rule", "}")):
                    uses[record].update(re.findall(r"[A-Za-z_]\w*", m.group(1)))
    return uses, rules


def rule_messages(stdlib_dir):
    """Returns {rule id: [message of each declaration]}."""
    pattern = re.compile(r'^\s*rule\s+([A-Za-z0-9_-]+)\s+(?:error|warning)\s+"((?:[^"\\]|\\.)*)"', re.M)
    messages = {}
    for name in sorted(os.listdir(stdlib_dir)):
        if name.endswith(".accel"):
            text = open(os.path.join(stdlib_dir, name), encoding="utf-8").read()
            for rule, message in pattern.findall(text):
                messages.setdefault(rule, []).append(message.replace('\\"', '"'))
    return messages


def expectation_fragments(text, tag):
    """The literal text a test expects on its lines that name `tag`: `{{...}}` of --verify
    expectations, and the parts of a FileCheck line between its regular expressions."""
    fragments = []
    for line in text.splitlines():
        if tag not in line:
            continue
        fragments += re.findall(r"expected-(?:error|warning|note)(?:@[+-]?\d+)? \[[^]]+\] \{\{(.*?)\}\}", line)
        if re.search(r"\b[A-Z0-9-]*CHECK[A-Z-]*:|^\W*[A-Z0-9]+(-DAG|-NEXT|-NOT)?:", line):
            body = re.sub(r"^.*?\b(error|warning): ", "", line).replace(tag, "")
            fragments += re.split(r"\{\{.*?\}\}", body)
    return [f.strip() for f in fragments if len(f.strip()) >= 8]


def clause_rows(docs_dir):
    """Rows of the clause table in DOCS_DIR/clauses.md: (id, clause, outcome, tests or reason)."""
    path = os.path.join(docs_dir, "clauses.md")
    rows = []
    for line in open(path, encoding="utf-8"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and re.match(r"^[A-Z][A-Z0-9]*(-[A-Z0-9]+)+$", cells[0]):
            rows.append((cells[0], cells[1], cells[2], cells[3]))
    return rows


def check_clauses(rules_dir, rule_files, messages, docs_dir):
    problems = []
    for rule, declared in sorted(messages.items()):
        if len(declared) < 2:
            continue
        tag = f"[{rule}]"
        failing = [(p, t) for p, t in rule_files if tag in t and ".pass." not in os.path.basename(p)]
        # Two declarations may share a message (one condition on two records): count the
        # expectations, one per reported diagnostic, as well as matching each message.
        expected = sum(len(re.findall(r"expected-(?:error|warning)\S* " + re.escape(tag), t)) +
                       len(re.findall(r"CHECK\S*:.*" + re.escape(tag), t)) for _, t in failing)
        if expected < len(declared):
            problems.append(f"rule {rule} has {len(declared)} declarations but {expected} failing expectations")
        fragments = [f for _, t in failing for f in expectation_fragments(t, tag)]
        for message in declared:
            if not any(f in message for f in fragments):
                problems.append(f"rule {rule}: no failing test quotes the declaration \"{message[:70]}...\"")
    if docs_dir is None:
        return problems
    rows = clause_rows(docs_dir)
    listed = {row[0] for row in rows}
    for rule, declared in sorted(messages.items()):
        if len(declared) > 1 and rule not in listed:
            problems.append(f"rule {rule} has {len(declared)} conditions but no rows in {docs_dir}/clauses.md")
    by_name = {os.path.relpath(p, rules_dir): t for p, t in rule_files}
    for rule, clause, outcome, where in rows:
        # `changed` rows name their tests too; other rows give a reason.
        tests = [t for t in re.findall(r"`([^`]+)`", where) if "/" in t and t.endswith((".accel", ".test", ".yaml", ".yml"))]
        for test in tests:
            if test not in by_name:
                problems.append(f"clauses.md: {rule} ({clause}): no test `{test}` under {rules_dir}")
        if outcome in ("test", "changed"):
            # A removed false alarm (`changed`) may show in a passing test alone.
            if outcome == "changed" and tests and all(".pass." in t for t in tests):
                continue
            tests = [t for t in tests if ".pass." not in t]
            if not tests:
                problems.append(f"clauses.md: {rule} ({clause}) says `test` but names no file")
            for test in tests:
                if f"[{rule}]" not in by_name.get(test, ""):
                    problems.append(f"clauses.md: {rule} ({clause}): `{test}` is not a test under {rules_dir} that names [{rule}]")
        elif not where:
            problems.append(f"clauses.md: {rule} ({clause}) is `{outcome}` with no reason")
    return problems


def reachable(uses, roots):
    seen, stack = set(), [r for r in roots if r in uses]
    while stack:
        record = stack.pop()
        if record in seen:
            continue
        seen.add(record)
        stack.extend(t for t in uses.get(record, ()) if t in uses)
    return seen


def main():
    kinds, lit_dir, stdlib_dir = sys.argv[1], sys.argv[2], sys.argv[3]
    docs_dir = sys.argv[4] if len(sys.argv) > 4 else None
    files = list(lit_files(lit_dir))
    problems = []

    codes = re.findall(r'ACCEL_DIAGNOSTIC\(\w+, "(A\d{4})", (\w+),', open(kinds).read())
    wanted = sorted(code for code, severity in codes if severity != "Note" and code not in EXEMPT)
    seen = set()
    for _, text in files:
        seen.update(re.findall(r"\[(A\d{4})\]", text))
    problems += [f"diagnostic {code} has no file test under {lit_dir}" for code in wanted if code not in seen]

    uses, rules = parse_stdlib(stdlib_dir)
    surface = reachable(uses, CONFIG_ROOTS)
    rules_dir = os.path.join(lit_dir, "rules")
    rule_files = [(p, t) for p, t in files if p.startswith(rules_dir + os.sep)]
    names = {os.path.basename(p) for p, _ in rule_files}
    for rule in sorted(rules):
        tag = f"[{rule}]"
        failing = [p for p, t in rule_files if tag in t]
        if not failing:
            problems.append(f"rule {rule} has no failing file test under {rules_dir}")
        if not any(n.startswith(rule + ".pass.") for n in names):
            problems.append(f"rule {rule} has no passing file test ({rule}.pass.accel or .yaml) under {rules_dir}")
        if rules[rule] & surface and not any(p.endswith((".yaml", ".yml", ".test")) for p in failing):
            problems.append(f"rule {rule} reads a config file's keys but has no YAML/JSON failing test under {rules_dir}")

    problems += check_clauses(rules_dir, rule_files, rule_messages(stdlib_dir), docs_dir)

    # A passing case must fail on any warning, not only on an error: with a plain `check` (exit 0
    # with warnings) a new false alarm on a valid file would go unnoticed.
    for path, text in files:
        if ".pass." not in os.path.basename(path):
            continue
        for line in re.findall(r"RUN: (.*)", text):
            if "%accelc check" in line and "--werror" not in line:
                problems.append(f"{path}: a passing case runs `accelc check` without --werror: {line.strip()}")

    for problem in problems:
        print(problem)
    print(f"{len(wanted)} diagnostic codes ({len(EXEMPT)} exempt) and {len(rules)} stdlib rules "
          f"({len([r for r in rules if rules[r] & surface])} on config files): {len(problems)} missing tests")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
