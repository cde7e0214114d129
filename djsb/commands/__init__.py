"""The ``djsb`` subcommands, one module each: its arguments and its body (djsb/cli.py builds the
parser from them and dispatches), over the libraries that do the work. What they share (their
declaration, output directory, end and errors) is :mod:`djsb.commands.frame`; no command module
imports another."""
