#!/usr/bin/env python3
"""An independent reader of TensorBoard event files, standard library only.

Written from the published formats, sharing nothing with Accel's C++ writer: TFRecord framing
(uint64 little-endian length, masked CRC-32C of the length, data, masked CRC-32C of the data)
around serialized `tensorflow.Event` protobufs (wall_time=1 double, step=2 int64,
file_version=3 string, summary=5 Summary; Summary.value=1; Value.tag=1, simple_value=2 float).
Both CRCs of every record are checked; any mismatch, truncation or malformed protobuf raises
ReadError. Scalars stored as tensors (TensorBoard's newer form) are not read.

Usage:
  tensorboard_reader.py PATH...            print `tag<TAB>step<TAB>value` for every scalar
                                           (PATH: an event file, or a directory of them)
  tensorboard_reader.py --check WRITER DIR the interop test: runs tests/runtime/tensorboard_write
                                           on known scalars and asserts exact read-back
"""
import math
import os
import re
import shutil
import socket
import struct
import subprocess
import sys


class ReadError(Exception):
    pass


def _crc32c_table():
    # Castagnoli polynomial, bit-reflected.
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked_crc(data):
    c = crc32c(data)
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def read_records(blob, name="<bytes>"):
    """The data of every TFRecord in `blob`, after checking both CRCs."""
    records = []
    pos = 0
    while pos < len(blob):
        if len(blob) - pos < 12:
            raise ReadError(f"{name}: truncated record header at byte {pos}")
        header = blob[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", blob[pos + 8:pos + 12])
        if length_crc != masked_crc(header):
            raise ReadError(f"{name}: length CRC mismatch at byte {pos}")
        start = pos + 12
        end = start + length
        if end + 4 > len(blob):
            raise ReadError(f"{name}: truncated record data at byte {pos}")
        data = blob[start:end]
        (data_crc,) = struct.unpack("<I", blob[end:end + 4])
        if data_crc != masked_crc(data):
            raise ReadError(f"{name}: data CRC mismatch at byte {pos}")
        records.append(data)
        pos = end + 4
    return records


def _varint(buf, pos):
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise ReadError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise ReadError("varint longer than 10 bytes")


def parse_message(buf):
    """[(field number, wire type, value)] of one protobuf message, in order."""
    fields = []
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            size, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + size], pos + size
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ReadError(f"unsupported wire type {wire} for field {field}")
        if pos > len(buf):
            raise ReadError(f"field {field} runs past the end of its message")
        fields.append((field, wire, value))
    return fields


def _expect(wire, want, what):
    if wire != want:
        raise ReadError(f"{what} has wire type {wire}, expected {want}")


def parse_event(data):
    """An Event as a dict: wall_time, step, file_version (or None), values [(tag, simple_value)]."""
    event = {"wall_time": 0.0, "step": 0, "file_version": None, "values": []}
    for field, wire, value in parse_message(data):
        if field == 1:
            _expect(wire, 1, "Event.wall_time")
            event["wall_time"] = struct.unpack("<d", value)[0]
        elif field == 2:
            _expect(wire, 0, "Event.step")
            event["step"] = value - (1 << 64) if value >= (1 << 63) else value
        elif field == 3:
            _expect(wire, 2, "Event.file_version")
            event["file_version"] = value.decode("utf-8")
        elif field == 5:
            _expect(wire, 2, "Event.summary")
            for sfield, swire, svalue in parse_message(value):
                if sfield != 1:
                    continue
                _expect(swire, 2, "Summary.value")
                tag, simple = None, None
                for vfield, vwire, vvalue in parse_message(svalue):
                    if vfield == 1:
                        _expect(vwire, 2, "Summary.Value.tag")
                        tag = vvalue.decode("utf-8")
                    elif vfield == 2:
                        _expect(vwire, 5, "Summary.Value.simple_value")
                        simple = struct.unpack("<f", vvalue)[0]
                if tag is not None and simple is not None:
                    event["values"].append((tag, simple))
    return event


def read_events(path):
    """The Events of one event file, in order."""
    with open(path, "rb") as f:
        blob = f.read()
    records = read_records(blob, path)
    try:
        return [parse_event(r) for r in records]
    except (ReadError, UnicodeDecodeError) as e:
        raise ReadError(f"{path}: {e}") from None


def read_scalars(path):
    """[(tag, step, value, wall_time)] from an event file or every event file in a directory."""
    if os.path.isdir(path):
        files = sorted(os.path.join(path, n) for n in os.listdir(path) if "tfevents" in n)
    else:
        files = [path]
    scalars = []
    for name in files:
        for event in read_events(name):
            for tag, value in event["values"]:
                scalars.append((tag, event["step"], value, event["wall_time"]))
    return scalars


# --- the interop test -----------------------------------------------------------------------

def _as_float32(v):
    try:
        return struct.unpack("<f", struct.pack("<f", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def _same(a, b):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return struct.pack("<d", a) == struct.pack("<d", b)


def _fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def check(writer, workdir):
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    cases = [
        ("loss", 0, 2.5, 1718000000.0),
        ("loss", 1, 0.1, 1718000000.125),
        ("lr", 1, 3e-4, 1718000000.125),
        ("train/loss", 127, -0.0, 1718000001.5),
        ("train/loss", 128, 1e-40, 1718000002.0),  # a float32 subnormal
        ("ünïcode/λ", 300, 123456789.0, 1718000003.0),
        ("x" * 200, 2 ** 40, 3.4e38, 0.0),  # a tag longer than one varint byte
        ("overflow", 5, 1e39, -1.0),  # past float32's range: inf
        ("special", -1, math.inf, 1e-9),
        ("special", 2 ** 63 - 1, -math.inf, 1e300),
        ("special", -(2 ** 63), math.nan, 1718000004.25),
    ]
    # Enough records to pass the writer's buffer size, with a flush in the middle.
    bulk = [("bulk/value", s, s * 0.37 - 100.0, 1718000010.0 + s / 8) for s in range(3000)]
    lines = [f"{t}\t{s}\t{v.hex()}\t{w.hex()}" for t, s, v, w in cases]
    lines.append("flush")
    lines += [f"{t}\t{s}\t{v.hex()}\t{w.hex()}" for t, s, v, w in bulk]
    expected = cases + bulk
    stdin = ("\n".join(lines) + "\n").encode("utf-8")

    out_dir = os.path.join(workdir, "runs", "project")
    run = subprocess.run([writer, out_dir], input=stdin, capture_output=True, timeout=30)
    if run.returncode != 0:
        _fail(f"writer exited {run.returncode}: {run.stderr.decode()}")
    path = run.stdout.decode().strip()
    name = os.path.basename(path)
    if os.path.dirname(path) != out_dir:
        _fail(f"event file {path} is not in {out_dir}")
    if not re.fullmatch(r"events\.out\.tfevents\.\d{10}\." + re.escape(socket.gethostname()), name):
        _fail(f"unexpected event file name {name}")

    events = read_events(path)
    first = events[0]
    if first["file_version"] != "brain.Event:2" or first["values"] or first["step"] != 0:
        _fail(f"first event is not the file_version event: {first}")
    if abs(first["wall_time"] - int(name.split(".")[3])) > 2:
        _fail(f"file_version wall_time {first['wall_time']} far from the name's time")

    got = read_scalars(path)
    if len(got) != len(expected):
        _fail(f"{len(got)} scalars read, {len(expected)} written")
    if len(events) != len(expected) + 1:
        _fail(f"{len(events)} events, expected one per scalar plus file_version")
    for i, ((tag, step, value, wall), (gtag, gstep, gvalue, gwall)) in enumerate(zip(expected, got)):
        want = _as_float32(value)
        if gtag != tag or gstep != step or not _same(gvalue, want) or not _same(gwall, wall):
            _fail(f"scalar {i}: read {(gtag, gstep, gvalue, gwall)}, wrote {(tag, step, want, wall)}")

    # The reader must catch damage: a flipped bit in a length, in data, and a cut-off tail.
    with open(path, "rb") as f:
        blob = f.read()
    for what, damaged in [("length", blob[:1] + bytes([blob[1] ^ 1]) + blob[2:]),
                          ("data", blob[:20] + bytes([blob[20] ^ 0x40]) + blob[21:]),
                          ("truncation", blob[:-3])]:
        try:
            read_records(damaged)
        except ReadError:
            continue
        _fail(f"damaged {what} not detected")

    # A second writer in the same directory gets a file of its own.
    run2 = subprocess.run([writer, out_dir], input=b"loss\t7\t1.0\t2.0\n", capture_output=True, timeout=30)
    if run2.returncode != 0:
        _fail(f"second writer exited {run2.returncode}: {run2.stderr.decode()}")
    path2 = run2.stdout.decode().strip()
    if path2 == path or read_scalars(path2) != [("loss", 7, 1.0, 2.0)]:
        _fail(f"second writer's file {path2} is not separate and exact")
    if len(read_scalars(out_dir)) != len(expected) + 1:
        _fail("reading the directory does not give both files' scalars")

    print(f"ok: {len(events)} events in {name}, {len(expected)} scalars exact, damage detected")


def main(argv):
    if len(argv) == 4 and argv[1] == "--check":
        check(argv[2], argv[3])
        return 0
    if len(argv) < 2 or argv[1].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        for path in argv[1:]:
            for tag, step, value, _ in read_scalars(path):
                print(f"{tag}\t{step}\t{value!r}")
    except ReadError as e:
        print(f"tensorboard_reader: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
