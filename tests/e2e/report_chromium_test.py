#!/usr/bin/env python3
"""`accelrun report` end to end, as a person sees the page: in headless Chromium.

Trains the quickstart on 2 processes with evaluation every 50 steps and checkpoints at steps 100
and 200, drops the second checkpoint and resumes from the first, so metrics.jsonl repeats steps
101..200. Then:
  * the done line of each run ends its loss with a sparkline, one block per logged loss value;
  * `accelrun report` writes the page;
  * Chromium's DOM of it (--dump-dom) holds the loss curve with one vertex per logged step (the
    resumed run's values replacing the first run's, counted here from metrics.jsonl), the
    evaluation curve with one per evaluation, and the resume point at step 100 (as the console
    names it), listed once;
  * Chromium's screenshot of it has the loss curve's colour drawn across the plot: a continuous
    line from the first step to the last, not only dots, and likewise the evaluation curve.
The PNG is decoded here with zlib (standard library only). Exits 77 (skipped) only when Chromium
is not installed.
Usage: report_chromium_test.py ACCELC ACCELRUN SPEC WORKDIR
"""
import html.parser
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_support import run, skip  # noqa: E402

# The colours report_page.cpp gives the curves, and the geometry of svg_chart.cpp's plot area.
LOSS_COLOUR = (0x1F, 0x77, 0xB4)
EVAL_COLOUR = (0xFF, 0x7F, 0x0E)
PLOT_LEFT, PLOT_RIGHT = 72, 696
SPARK = "▁▂▃▄▅▆▇█×"


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def browse(browser, workdir, page, *mode):
    """Runs headless Chromium on `page` with `mode` (--dump-dom, --screenshot=...)."""
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
               "--force-device-scale-factor=1", "--window-size=800,2000",
               f"--user-data-dir={os.path.join(workdir, 'chromium-profile')}", *mode, "file://" + page]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"chromium exited {result.returncode}:\n{result.stderr[-2000:]}"
    return result.stdout


def decode_png(path):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit, non-interlaced RGB or RGBA PNG."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour_type, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour_type in (2, 6) and interlace == 0, (depth, colour_type, interlace)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    channels = 4 if colour_type == 6 else 3
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            up_left = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - up_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else up_left)) & 0xFF
        rows.append([tuple(line[x * channels : x * channels + 3]) for x in range(width)])
        previous = line
    return width, height, rows


def columns_with(rows, colour, tolerance=8):
    """The x of every screenshot column with at least one pixel of `colour`."""
    found = set()
    for row in rows:
        for x, pixel in enumerate(row):
            if all(abs(a - b) <= tolerance for a, b in zip(pixel, colour)):
                found.add(x)
    return found


def assert_line_drawn(rows, colour, name, first_x, last_x):
    """Pixels of `colour` fill the columns from `first_x` to `last_x` (page pixels) almost all:
    a line joins the points, where dots alone would leave most columns empty."""
    columns = columns_with(rows, colour)
    assert columns, f"{name}: no pixel of its colour in the screenshot"
    inside = [x for x in columns if first_x <= x <= last_x]
    span = last_x - first_x + 1
    assert len(inside) >= 0.9 * span, (
        f"{name}: its colour fills {len(inside)} of the {span} columns between x {first_x} and {last_x}")
    print(f"{name}: drawn across {len(inside)} of {span} columns")


class Svg(html.parser.HTMLParser):
    """The polylines' vertices by data-series, resume marks and figure order of a DOM dump."""

    def __init__(self):
        super().__init__()
        self.vertices = {}
        self.resumes = []
        self.figures = []
        self.body_left = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "polyline" and "data-series" in attrs:
            points = attrs["points"].split()
            self.vertices.setdefault(attrs["data-series"], []).extend(tuple(map(float, p.split(","))) for p in points)
        elif tag == "g" and attrs.get("class") == "resume":
            self.resumes.append(int(attrs["data-step"]))
        elif tag == "figure":
            self.figures.append(attrs.get("data-metric"))


def expected_steps(metrics_path, field):
    """The steps of `field` that metrics.jsonl keeps, computed here from docs/training.md's rules:
    a later record replaces an earlier one; a resume marker at step S drops the values after S;
    without a marker, a step that goes back drops the values from there on."""
    values, highest = {}, -1
    with open(metrics_path) as f:
        for line in f:
            record = json.loads(line)
            step = record["step"]
            if "event" in record:
                if record["event"] == "resume":
                    values = {s: v for s, v in values.items() if s <= step}
                    highest = step
                continue
            if step < highest:
                values = {s: v for s, v in values.items() if s < step}
                highest = step
            highest = max(highest, step)
            if field in record:
                values[step] = record[field]
    return sorted(values)


def check_done_line(output, metrics_path):
    loss_points = len(expected_steps(metrics_path, "loss"))
    done = re.search(rf"^accelrun: done in .*? loss .*?([{SPARK}]+) \(min ([^,]+), max ([^)]+)\)", output, re.M)
    assert done, "the done line has no loss sparkline"
    bars = done.group(1)
    assert set(bars) <= set(SPARK), f"not a sparkline: {bars!r}"
    assert len(bars) == min(24, loss_points), f"{len(bars)} bars for {loss_points} loss values"
    # The quickstart's loss falls: the first bar is the highest, the last one of the lowest.
    assert bars[0] == "█" and bars[-1] in "▁▂", bars
    assert float(done.group(2)) < float(done.group(3)), done.group(0)
    print(f"done line: {done.group(0)}")


def main():
    accelc, accelrun, spec, workdir = sys.argv[1:5]
    browser = chromium()
    if browser is None:
        skip("chromium is not installed (scripts/setup.sh installs it)")
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    out = os.path.join(workdir, "run")
    plan = os.path.join(workdir, "plan.json")
    run([accelc, "build", spec, "--set", "train.eval_samples=256", "--set", "train.eval_every=50",
         "--set", "train.checkpoint_every=100", "--set", "accelerator.project_config.automatic_checkpoint_naming=true",
         "--set", f"accelerator.project_dir={json.dumps(out)}", "-o", plan])
    metrics = os.path.join(out, "metrics.jsonl")
    first = run([accelrun, plan, "--output-dir", out], timeout=240)
    check_done_line(first.stdout, metrics)
    # Back to the checkpoint at step 100: the resumed run logs steps 101..200 again.
    shutil.rmtree(os.path.join(out, "checkpoints", "checkpoint_1"))
    resumed = run([accelrun, plan, "--output-dir", out, "--resume", "auto"], timeout=240)
    check_done_line(resumed.stdout, metrics)

    report = run([accelrun, "report", out])
    page = os.path.join(out, "report.html")
    assert f"accelrun: wrote {page}:" in report.stdout, report.stdout

    dom = Svg()
    dom.feed(browse(browser, workdir, page, "--dump-dom"))
    loss_steps = expected_steps(metrics, "loss")
    eval_steps = expected_steps(metrics, "eval_loss")
    assert loss_steps[:3] == [1, 20, 40] and 101 in loss_steps and loss_steps[-1] == 200, loss_steps
    assert eval_steps == [50, 100, 150, 200], eval_steps
    assert dom.figures[:3] == ["loss", "lr", "samples_per_second"], dom.figures
    assert "eval_loss" in dom.figures, dom.figures
    loss = dom.vertices.get("loss", [])
    assert len(loss) == len(loss_steps), f"the loss curve has {len(loss)} vertices for {len(loss_steps)} steps"
    xs = [x for x, _ in loss]
    assert xs == sorted(xs) and xs[0] == PLOT_LEFT and xs[-1] == PLOT_RIGHT, xs
    assert len(dom.vertices.get("eval_loss", [])) == len(eval_steps), dom.vertices.get("eval_loss")
    # At the step the console and metrics.json name, once in the list.
    assert dom.resumes and set(dom.resumes) == {100}, dom.resumes
    assert "(resumed at step 100)" in resumed.stdout, resumed.stdout
    with open(page) as f:
        html = f.read()
    assert html.count('<li class="resume-point"') == 1 and "resumed_at_step" not in html, "the resume is listed twice"
    print(f"DOM: loss curve of {len(loss)} vertices, evaluation of {len(eval_steps)}, resume at step 100")

    shot = os.path.join(workdir, "report.png")
    browse(browser, workdir, page, f"--screenshot={shot}")
    width, height, rows = decode_png(shot)
    assert (width, height) == (800, 2000), (width, height)
    # The page's body is centred (max-width 760 plus padding): the plot's left edge sits at
    # the body's left plus PLOT_LEFT. Found from the loss colour's first column, which must
    # then be that far from the last.
    loss_columns = sorted(columns_with(rows, LOSS_COLOUR))
    assert loss_columns, "no pixel of the loss curve's colour in the screenshot"
    left = loss_columns[0]
    assert_line_drawn(rows, LOSS_COLOUR, "loss curve", left, left + (PLOT_RIGHT - PLOT_LEFT))
    eval_x = [x for x, _ in dom.vertices["eval_loss"]]
    assert_line_drawn(rows, EVAL_COLOUR, "evaluation curve", left + round(eval_x[0] - PLOT_LEFT),
                      left + round(eval_x[-1] - PLOT_LEFT))
    print("e2e report: the page renders in Chromium with its curves drawn")


if __name__ == "__main__":
    main()
