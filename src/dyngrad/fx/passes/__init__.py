"""Graph passes of dyngrad.fx (``shape_prop``)."""
