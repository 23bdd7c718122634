"""Import stub of safetensors (see ../README.md): the names Accelerate imports, none usable."""


def safe_open(*args, **kwargs):
    raise RuntimeError("safetensors is a benchmark stub here; install the real package to use it")
