"""``torch.backends`` flags that scripts set; they have no effect on the CPU."""
import types

cudnn = types.SimpleNamespace(benchmark=False, deterministic=False, enabled=True,
                              is_available=lambda: False)
mps = types.SimpleNamespace(is_available=lambda: False, is_built=lambda: False)
