"""Runs a Python launcher module (torch.distributed.run, or Accelerate's CLI) as `python3 -m`
would, after fixing the one function of torch 1.13's torchrun that breaks on Python 3.11.

`Std.from_str("0")` (the default of --redirects and --tee) looks the value up by iterating the
IntFlag `Std`, and since Python 3.11 iterating a Flag skips its zero member, so it returns None
and torchrun fails before starting a worker (`'NoneType' object has no attribute 'get'`). Debian
12 pairs python3-torch 1.13 with Python 3.11. The fix maps the digits to `Std` directly; nothing
else of the launcher changes, and its workers are started unpatched.

Usage: launch_py311.py MODULE [ARGS...]
"""
import re
import runpy
import sys

from torch.distributed.elastic.multiprocessing import api


def _from_str(cls, text):
    if re.match(api._VALUE_REGEX, text):
        return cls(int(text))
    if re.match(api._MAPPING_REGEX, text):
        return {int(rank): cls(int(value)) for rank, value in (item.split(":") for item in text.split(","))}
    raise ValueError(f"{text} does not match: <{api._VALUE_REGEX}> or <{api._MAPPING_REGEX}>")


api.Std.from_str = classmethod(_from_str)
module = sys.argv[1]
sys.argv = [module] + sys.argv[2:]
runpy.run_module(module, run_name="__main__", alter_sys=True)
