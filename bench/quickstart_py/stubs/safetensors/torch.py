"""Import stub of safetensors.torch (see ../README.md)."""
from safetensors import safe_open as _unavailable

load_model = _unavailable
load_file = _unavailable
save_file = _unavailable
