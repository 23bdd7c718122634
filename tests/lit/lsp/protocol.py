"""A scripted editor session against `accelc lsp`: open a spec with a typo, read its
diagnostic, hover, complete, jump to the stdlib, apply the quick fix, format, fix the text,
shut down. Each step asserts what the server answered; every wait has a timeout.

usage: protocol.py ACCELC WORKDIR
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lsp_client import Client, apply_edits  # noqa: E402

accelc, workdir = sys.argv[1], sys.argv[2]
shutil.rmtree(workdir, ignore_errors=True)
os.makedirs(workdir)
env = dict(os.environ, XDG_CACHE_HOME=os.path.join(workdir, "cache"))

# Before the typo, é is two bytes and one UTF-16 unit, and the emoji four bytes and two units:
# the range must count units.
SPEC = """job typo {
  output { dir = "runs/caf\u00e9\U0001F600" }; accelerator { mixed_precison = bf16 }
  model = MLP {
  inputs = 4; outputs = 1 }
  data = SyntheticRegression { samples = 8; features = 4; batch_size = 2 }
  train {
    steps = 1

    optimizer = AdamW { lr = 0.1 }
  }
}
"""
path = os.path.join(workdir, "typo.accel")
with open(path, "w") as f:
    f.write(SPEC)
uri = "file://" + path
text = SPEC


def position_of(needle, after=0):
    """The LSP position of the first `needle` in the text (UTF-16 columns)."""
    index = text.index(needle, after)
    line = text.count("\n", 0, index)
    column = index - (text.rfind("\n", 0, index) + 1)
    units = len(text[index - column:index].encode("utf-16-le")) // 2
    return {"line": line, "character": units}


client = Client(accelc, env)
init = client.request("initialize", {"processId": None, "rootUri": None, "capabilities": {},
                                     "initializationOptions": {"referenceUrl": "https://docs.example/ref/"}})
capabilities = init["result"]["capabilities"]
assert capabilities["textDocumentSync"]["change"] == 2, capabilities
assert capabilities["positionEncoding"] == "utf-16", capabilities
for provider in ("hoverProvider", "completionProvider", "definitionProvider", "documentSymbolProvider",
                 "documentFormattingProvider", "codeActionProvider"):
    assert provider in capabilities, provider
client.notify("initialized", {})
print("initialize: ok")

client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "accel", "version": 1, "text": text}})
diagnostics = client.diagnostics(uri, 1)
assert len(diagnostics) == 1, diagnostics
typo = diagnostics[0]
assert typo["code"] == "A2003", typo
assert typo["source"] == "accelc", typo
assert typo["severity"] == 1, typo
assert typo["codeDescription"]["href"] == "https://docs.example/ref/diagnostics.md#a2003", typo
start = position_of("mixed_precison")
assert typo["range"] == {"start": start, "end": {"line": start["line"], "character": start["character"] + 14}}, typo
assert start["character"] == 48, start  # 51 if columns counted bytes, 47 if code points
# The same diagnostic `accelc check` prints for the file.
check = subprocess.run([accelc, "check", "--format=json", path], capture_output=True, text=True)
assert '"code": "A2003"' in check.stdout and check.stdout.count('"code"') == 1, check.stdout
print("diagnostics: %s %s at %d:%d" % (typo["code"], typo["message"], start["line"] + 1, start["character"] + 1))

hover = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": position_of("batch_size")})
value = hover["result"]["contents"]["value"]
assert "SyntheticRegression.batch_size: int" in value, value
print("hover: " + value.splitlines()[1])
code_hover = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": position_of("steps")})
assert "Train.steps" in code_hover["result"]["contents"]["value"], code_hover

# Completion on the empty line in `train { ... }`: its fields that are not set yet.
completion = client.request("textDocument/completion", {"textDocument": {"uri": uri},
                                                        "position": {"line": 7, "character": 4}})
labels = [item["label"] for item in completion["result"]["items"]]
assert "loss" in labels and "log_every" in labels, labels
assert "steps" not in labels and "optimizer" not in labels, labels
# After `=` of a misspelt field there is nothing to offer: its type is unknown.
unknown = client.request("textDocument/completion", {"textDocument": {"uri": uri}, "position": position_of("bf16")})
assert unknown["result"]["items"] == [], unknown
print("completion: %d fields, e.g. %s" % (len(labels), ", ".join(labels[:3])))

definition = client.request("textDocument/definition", {"textDocument": {"uri": uri}, "position": position_of("batch_size")})
location = definition["result"]
assert location["uri"].startswith("file://" + os.path.join(workdir, "cache", "accelc")), location
stdlib_file = location["uri"][len("file://"):]
line = open(stdlib_file).read().split("\n")[location["range"]["start"]["line"]]
assert "batch_size" in line, line
assert not os.access(stdlib_file, os.W_OK) or os.geteuid() == 0, "stdlib copy must be read-only"
assert oct(os.stat(stdlib_file).st_mode & 0o777) == "0o444", oct(os.stat(stdlib_file).st_mode)
print("definition: %s:%d" % (os.path.basename(stdlib_file), location["range"]["start"]["line"] + 1))

actions = client.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": typo["range"],
                                                     "context": {"diagnostics": [typo]}})
assert len(actions["result"]) == 1, actions
action = actions["result"][0]
assert action["kind"] == "quickfix" and action["title"] == "Replace `mixed_precison` with `mixed_precision`", action
text = apply_edits(text, action["edit"]["changes"][uri])
assert "accelerator { mixed_precision = bf16 }" in text, text
client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                         "contentChanges": [{"text": text}]})
assert client.diagnostics(uri, 2) == []
members = client.request("textDocument/completion", {"textDocument": {"uri": uri},
                                                     "position": position_of("bf16")})
assert [item["label"] for item in members["result"]["items"]] == ["no", "fp8", "fp16", "bf16"], members
print("code action: applied, diagnostics now empty")

formatting = client.request("textDocument/formatting", {"textDocument": {"uri": uri},
                                                        "options": {"tabSize": 2, "insertSpaces": True}})
formatted = apply_edits(text, formatting["result"])
expected = subprocess.run([accelc, "fmt", "-"], input=text, capture_output=True, text=True).stdout
assert formatted == expected and formatted != text, formatted
text = formatted
# An incremental edit that breaks the text: its syntax error comes back, formatting offers nothing.
client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3}, "contentChanges": [
    {"range": {"start": {"line": 0, "character": 9}, "end": {"line": 0, "character": 10}}, "text": "= {"}]})
broken = client.diagnostics(uri, 3)
assert broken and broken[0]["code"].startswith("A1"), broken
assert client.request("textDocument/formatting", {"textDocument": {"uri": uri}, "options": {}})["result"] == []
print("formatting: ok; malformed text gets no edits and %s" % broken[0]["code"])

symbols = client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
assert symbols["result"][0]["name"] == "job typo", symbols

client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
assert client.diagnostics(uri) == []
assert client.request("shutdown")["result"] is None
client.notify("exit")
status = client.finish()
assert status == 0, status
print("shutdown, exit: 0")
