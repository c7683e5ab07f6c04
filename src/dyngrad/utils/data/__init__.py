"""Datasets and loaders (see issue: data)."""
