"""``nn.utils``: gradient clipping, parameter/vector conversion, parametrizations
(``parametrize``, ``parametrizations``) and pruning (``prune``)."""
from .clip_grad import (clip_grad_norm_, clip_grad_value_, clip_grad_norm,  # noqa: F401
                        clip_grads_with_norm_, get_total_norm)
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from . import rnn  # noqa: F401
from . import fusion  # noqa: F401
from .fusion import (fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval,  # noqa: F401
                     fuse_linear_bn_weights)
from . import parametrize, parametrizations, prune  # noqa: F401
from .weight_norm import weight_norm, remove_weight_norm  # noqa: F401
from .spectral_norm import spectral_norm, remove_spectral_norm  # noqa: F401
