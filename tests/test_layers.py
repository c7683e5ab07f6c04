"""The package's layers import in one direction: import-linter checks the contract written in
pyproject.toml (core, autograd, ops, then nn/optim/func/..., viz, commands) over every import,
module-level or inside a function."""
from __future__ import annotations

import os
import tomllib

import logging

import importlinter.cli as cli
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _loggers_kept():
    """import-linter configures logging with ``disable_existing_loggers``: the loggers that
    existed before (dyngrad's own among them) are enabled again afterwards, so later tests
    see their records."""
    loggers = [lg for lg in logging.Logger.manager.loggerDict.values()
               if isinstance(lg, logging.Logger)]
    before = [lg.disabled for lg in loggers]
    yield
    for lg, was in zip(loggers, before):
        lg.disabled = was


def _layers():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        return tomllib.load(fh)["tool"]["importlinter"]["contracts"][0]["layers"]


def test_layers_contract_is_kept(capsys):
    code = cli.lint_imports(config_filename=os.path.join(ROOT, "pyproject.toml"), no_cache=True)
    out = capsys.readouterr().out
    assert code == 0, out[out.find("Broken contracts"):]


def test_contract_catches_an_upward_import(tmp_path, capsys):
    """The check is live: with nn and the core swapped, every import nn makes of the core
    becomes an upward one and is reported."""
    layers = _layers()
    i_nn = next(i for i, line in enumerate(layers) if line.startswith("dyngrad.nn "))
    i_core = next(i for i, line in enumerate(layers) if line.startswith("dyngrad._tensor "))
    layers[i_nn], layers[i_core] = layers[i_core], layers[i_nn]
    ini = tmp_path / "swapped.ini"
    ini.write_text("[importlinter]\nroot_package = dyngrad\n\n[importlinter:contract:c]\n"
                   "name = swapped\ntype = layers\nlayers =\n"
                   + "".join(f"    {line}\n" for line in layers))
    assert cli.lint_imports(config_filename=str(ini), no_cache=True) == 1
    assert "dyngrad.nn is not allowed to import dyngrad._tensor" in capsys.readouterr().out
