"""Ready-made programs behind the ``dyngrad`` command (the demo and digits training)."""
