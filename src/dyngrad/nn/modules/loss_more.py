"""Multi-class and multi-label margin loss modules: ``MultiMarginLoss``,
``MultiLabelMarginLoss`` and ``MultiLabelSoftMarginLoss``."""
from __future__ import annotations

from .. import functional as F
from .loss import _Loss, _WeightedLoss


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss over class indices (listed up to the first -1)."""

    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Per-class logistic loss averaged over classes."""

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight,
                                             reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss, p = 1 or 2, optionally weighted per class."""

    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        if p != 1 and p != 2:
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got "
                             f"{weight.dim()}D instead")
        self.p = p
        self.margin = margin

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                   weight=self.weight, reduction=self.reduction)
