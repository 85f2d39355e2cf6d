"""`traindoctor serve`: the language server on stdio, or on a loopback TCP port for debugging."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import socket
import sys

from . import errors


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run the language server (stdio)",
        description="Run the traindoctor language server. Editors start it on stdio; "
        "--tcp HOST:PORT listens on a loopback address instead, for debugging.",
    )
    parser.add_argument("--stdio", action="store_true", help="talk LSP on stdin/stdout (the default)")
    parser.add_argument("--tcp", metavar="HOST:PORT", help="listen on a loopback TCP address instead of stdio")
    parser.add_argument(
        "--log-level",
        default="warning",
        choices=["debug", "info", "warning", "error"],
        help="server log level (logs go to stderr)",
    )
    parser.set_defaults(func=run)


def parse_loopback(value: str) -> tuple[str, int]:
    """HOST:PORT on a loopback address; anything else is refused (the server has no
    authentication and applies edits to the user's files)."""
    host, sep, port_text = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"--tcp expects HOST:PORT, got {value!r}")
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except socket.gaierror:
        raise ValueError(f"--tcp: cannot resolve {host!r}") from None
    if not addresses or not all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses):
        raise ValueError(f"--tcp: {host!r} is not a loopback address; the server only listens on loopback")
    return host, int(port_text)


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(), format="traindoctor-lsp %(levelname)s %(name)s: %(message)s")
    tcp = None
    if args.tcp:
        try:
            tcp = parse_loopback(args.tcp)
        except ValueError as exc:
            return errors.error(str(exc))
    try:
        from ..lsp.server import serve_stdio, serve_tcp
    except ImportError as exc:
        return errors.error(f"the language server needs pygls and lsprotocol ({exc})")
    if tcp is not None:
        try:
            serve_tcp(*tcp)
        except OSError as exc:
            return errors.error(f"cannot listen on {args.tcp}: {exc.strerror or exc}")
        return 0
    serve_stdio()
    return 0
