"""``dyngrad.fx.experimental``: of PyTorch's experimental FX passes, ``optimization`` (fusing
Conv/Linear with a following BatchNorm for inference, removing Dropout)."""
