#!/usr/bin/env python3
"""Writes the seed corpus of safetensors_fuzzer into tests/fuzz/safetensors-corpus/.

Seeds are small files of every shape the reader must handle: valid files of each dtype, the
layouts foreign writers produce (unpadded headers, whitespace, unknown members, escapes), and
one file per rule of catalog §8.4 that the reader must reject. Standard library only.
Usage: make_safetensors_corpus.py [OUT_DIR]
"""
import json
import os
import struct
import sys


def image(header, data=b"", pad=True):
    text = header if isinstance(header, bytes) else header.encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def tensors(entries, metadata=None):
    """entries: (name, dtype, shape, bytes) in file order."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in entries:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    return json.dumps(header, separators=(",", ":")), data


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "safetensors-corpus")
    os.makedirs(out, exist_ok=True)
    seeds = {}
    seeds["empty_header"] = image("{}")
    seeds["metadata_only"] = image(*tensors([], {"format": "pt"}))
    seeds["catalog_example"] = image(*tensors([("w", "F32", [2], struct.pack("<2f", 1, 2)),
                                               ("b", "F16", [3], b"\x00\x3c\x00\x40\x00\x42")], {"format": "pt"}))
    seeds["every_dtype"] = image(*tensors([
        ("f64", "F64", [1], struct.pack("<d", 1.5)), ("i64", "I64", [1], struct.pack("<q", -3)),
        ("u64", "U64", [1], struct.pack("<Q", 7)), ("c64", "C64", [1], struct.pack("<2f", 1, -1)),
        ("f32", "F32", [2], struct.pack("<2f", 0.5, -0.5)), ("i32", "I32", [1], struct.pack("<i", -1)),
        ("u32", "U32", [1], struct.pack("<I", 9)), ("bf16", "BF16", [2], b"\x80\x3f\x00\x40"),
        ("f16", "F16", [1], b"\x00\x3c"), ("i16", "I16", [1], b"\xff\xff"), ("u16", "U16", [1], b"\x01\x00"),
        ("f8", "F8_E4M3", [2], b"\x38\x40"), ("f8b", "F8_E5M2", [1], b"\x3c"), ("e8", "F8_E8M0", [1], b"\x7f"),
        ("i8", "I8", [2], b"\x80\x7f"), ("u8", "U8", [3], b"abc"), ("bool", "BOOL", [2], b"\x00\x01"),
        ("f4", "F4", [4], b"\x12\x34"), ("f6", "F6_E2M3", [4], b"\x00\x11\x22")]))
    seeds["scalar_and_empty"] = image(*tensors([("s", "F32", [], struct.pack("<f", 3)), ("e", "F32", [0, 4], b"")]))
    seeds["nan_values"] = image(*tensors([("n", "F32", [2], struct.pack("<2f", float("nan"), float("inf")))]))
    seeds["unpadded"] = image(*tensors([("a", "F32", [1], b"wxyz")]), pad=False)
    seeds["whitespace"] = image(b'\n {"a" : {"dtype" : "U8", "shape" : [ 1 ], "data_offsets" : [0, 1]}}\t', b"x")
    seeds["unknown_member"] = image(b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":[1.5,{"y":null}]}}',
                                    b"x")
    seeds["escapes"] = image(*tensors([("caf\u00e9 \U0001f600 \"q\" \\ \n", "U8", [1], b"x")],
                                      {"k\u0001": "\u2603"}))
    seeds["reordered_offsets"] = image(b'{"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]},'
                                       b'"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"xyz")
    # One rejection per rule.
    seeds["st001_short"] = b"\x02\x00\x00"
    seeds["st002_huge_length"] = b"\x00" * 7 + b"\x80{}"
    seeds["st003_past_end"] = struct.pack("<Q", 64) + b"{}"
    seeds["st004_bad_utf8"] = image(b'{"\xff":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"x")
    seeds["st004_lone_surrogate"] = image(b'{"__metadata__":{"k":"\\ud800"}}')
    seeds["st005_float_shape"] = image(b'{"a":{"dtype":"U8","shape":[2.0],"data_offsets":[0,2]}}', b"xy")
    seeds["st005_metadata_number"] = image(b'{"__metadata__":{"n":1}}')
    seeds["st006_overlap"] = image(b'{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},'
                                   b'"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}', b"xyz")
    seeds["st007_overflow"] = image(b'{"a":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,0]}}')
    seeds["st008_half_byte"] = image(b'{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}', b"xy")
    seeds["st009_size"] = image(b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}', b"abcd")
    seeds["st010_trailing"] = image(b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"xy")
    seeds["st011_duplicate"] = image(b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                                     b'"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"x")
    seeds["deep_nesting"] = image(b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":' + b"[" * 100 +
                                  b"]" * 100 + b"}}", b"x")
    for name, data in seeds.items():
        with open(os.path.join(out, name + ".safetensors"), "wb") as f:
            f.write(data)
    print(f"wrote {len(seeds)} seeds to {out}")


if __name__ == "__main__":
    main()
