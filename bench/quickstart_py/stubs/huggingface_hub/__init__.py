"""Import stub of huggingface_hub (see ../README.md): the names Accelerate imports, none usable."""


def _unavailable(*args, **kwargs):
    raise RuntimeError("huggingface_hub is a benchmark stub here; install the real package to use it")


split_torch_state_dict_into_shards = _unavailable
model_info = _unavailable
hf_hub_download = _unavailable
