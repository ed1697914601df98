"""`python -m agent`: the command line (`chat`, `dev`, `gc`) and its argument parser."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import logging
import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from agent.cli.readers import Reader, echo_reader, terminal_reader
from agent.cli.session import ChatSession
from agent.settings import Settings, SettingsError
from memory.errors import ChatMemoryError

if TYPE_CHECKING:
    from agent.service import ChatAgent

# `ChatAgent` is imported by the commands that open one: `python -m agent dev` only starts
# `langgraph dev`, whose server imports the agent itself

logger = logging.getLogger("agent.cli")

DEFAULT_SESSION = "cli"
LOG_FILE = "cli.log"
DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 2024
CHAT_PAGE_BANNER = (
    "chat page: http://{host}:{port}/  (HTTP API under /api/; LangGraph's own banner follows)"
)
PORT_BUSY = (
    "port {port} on {host} is already in use (is another `make dev` running?): stop it, "
    "or choose another port: make dev PORT={next}"
)


def open_session(
    agent: ChatAgent,
    *,
    session_id: str,
    conversation_id: str | None,
    read_line: Reader,
    markdown: bool = False,
) -> ChatSession:
    """A chat on `conversation_id`, else the session's selected conversation, else a new
    one (`InvalidRequest` for a malformed id, `ConversationNotFound` for another's)."""
    registry = agent.conversations(session_id=session_id)  # validates the session id
    titles = {entry["id"]: entry["title"] for entry in registry["conversations"]}
    if conversation_id is not None:
        agent.select(session_id=session_id, conversation_id=conversation_id)
    elif registry["selectedConversationId"] in titles:
        conversation_id = registry["selectedConversationId"]
    model = "offline model (no model endpoint)" if agent.settings.offline else agent.settings.model
    print(f'agent chat · session "{session_id}" · {model} · /help lists the commands')
    if conversation_id is None:
        print("new conversation: your first message creates it")
    else:
        print(f"continuing: {titles.get(conversation_id, conversation_id)}")
    return ChatSession(
        agent,
        session_id=session_id,
        conversation_id=conversation_id,
        read_line=read_line,
        markdown=markdown,
    )


def configure_logging(data_dir: Path, verbose: bool) -> None:
    """Log to stderr when `verbose`, else to `<data_dir>/cli.log` (never over the chat)."""
    handler: logging.Handler
    if verbose:
        handler = logging.StreamHandler(sys.stderr)
    else:
        try:
            data_dir.mkdir(parents=True, exist_ok=True)
            handler = logging.FileHandler(data_dir / LOG_FILE, encoding="utf-8")
        except OSError:
            handler = logging.NullHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    level = logging.INFO if verbose else logging.WARNING
    logging.basicConfig(level=level, handlers=[handler], force=True)
    logging.captureWarnings(True)


def build_parser() -> argparse.ArgumentParser:
    """The `python -m agent` argument parser."""
    parser = argparse.ArgumentParser(
        prog="python -m agent",
        description="A LangGraph chat agent with bounded, per-conversation memory.",
    )
    commands = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND")
    chat = commands.add_parser(
        "chat",
        help="interactive terminal chat (streams answers; /help inside lists its commands)",
        description="Chat in the terminal. Settings come from the environment "
        "(AGENT_DATABASE_URL, AGENT_DATA_DIR, OPENAI_API_KEY, ...); without OPENAI_API_KEY "
        "a deterministic offline model answers.",
    )
    chat.add_argument(
        "--session",
        default=DEFAULT_SESSION,
        metavar="NAME",
        help="the session whose conversations you see (default: %(default)s)",
    )
    chat.add_argument(
        "--conversation",
        metavar="ID",
        help="continue this conversation (default: the session's selected one, else a new one)",
    )
    chat.add_argument(
        "--verbose",
        action="store_true",
        help=f"log to stderr (default: log to $AGENT_DATA_DIR/{LOG_FILE})",
    )
    dev = commands.add_parser(
        "dev",
        help="run the agent under `langgraph dev` (what `make dev` runs)",
        description="Run `langgraph dev` with this repository's langgraph.json: the graph, "
        "the HTTP API and the chat page. Fails plainly when the port is taken, instead "
        "of moving to a random one.",
    )
    dev.add_argument("--host", default=DEFAULT_HOST, help="interface (default: %(default)s)")
    dev.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default: %(default)s)")
    gc = commands.add_parser(
        "gc",
        help="apply the retention policy now (AGENT_RETENTION_DAYS, AGENT_MEMORY_TTL_DAYS)",
        description="Remove conversations idle for more than AGENT_RETENTION_DAYS (registry "
        "entry, memory and run threads) and expired long-term items; print what went.",
    )
    gc.add_argument("--dry-run", action="store_true", help="print what would go; remove nothing")
    return parser


def port_free(host: str, port: int) -> bool:
    """Whether `host:port` can be bound now."""
    with socket.socket() as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def run_dev(host: str, port: int) -> int:
    """`langgraph dev` on `host:port`, in this process, once the port is free (it would
    silently move to a random one); its file watcher kept to warnings (it logs every write)."""
    if not port_free(host, port):
        return _fail(PORT_BUSY.format(host=host, port=port, next=port + 1))
    from langgraph_cli.cli import cli  # the dev tools are a development dependency

    logging.getLogger("watchfiles").setLevel(logging.WARNING)
    # uvicorn would take a local peer's X-Forwarded-For as the client's address; the
    # trusted-proxy check must see the connection's own peer
    os.environ.setdefault("FORWARDED_ALLOW_IPS", "")
    # LangGraph's banner names its API, Studio and docs; the chat page is this app's
    print(CHAT_PAGE_BANNER.format(host=host, port=port), flush=True)
    arguments = ["dev", "--no-browser", "--host", host, "--port", str(port)]
    try:
        cli.main(arguments, prog_name="langgraph", standalone_mode=False)
    except KeyboardInterrupt:
        return 130
    return 0


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 1


def run_chat(session_id: str, conversation_id: str | None, *, verbose: bool = False) -> int:
    """Start the agent from the environment and chat until the person leaves."""
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        return _fail(str(exc))
    configure_logging(settings.data_dir, verbose)
    from agent.service import ChatAgent

    try:
        agent = ChatAgent(settings=settings)
    except (ChatMemoryError, SettingsError) as exc:  # the local model's too
        return _fail(str(exc))
    except Exception:
        logger.exception("could not start the agent")
        return _fail("could not start the agent; details are in the log")
    with agent:
        read_line: Reader
        if sys.stdin.isatty():
            with contextlib.suppress(ImportError):
                importlib.import_module("readline")  # line editing and history for input()
            read_line = terminal_reader
        else:
            read_line = echo_reader(sys.stdin, sys.stdout)
        try:
            session = open_session(
                agent,
                session_id=session_id,
                conversation_id=conversation_id,
                read_line=read_line,
                markdown=sys.stdout.isatty(),  # piped output stays plain text
            )
        except ChatMemoryError as exc:
            return _fail(str(exc))
        return session.run()


GC_REPORT = (
    "{verb} {conversations} conversation(s) idle for more than {days:g} day(s) "
    "({sessions} whole session(s), {threads} thread(s)); {memories} long-term item(s) "
    "expired or of sessions that never chatted; "
    "{archivedLines} archived line(s) of conversations idle that long"
)


def run_gc(*, dry_run: bool) -> int:
    """`python -m agent gc`: sweep once and say what went."""
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        return _fail(str(exc))
    configure_logging(settings.data_dir, verbose=False)
    from agent.service import ChatAgent

    try:
        with ChatAgent(settings=settings) as agent:
            removed = agent.sweep(dry_run=dry_run)
            if not dry_run:  # a clean file: no deleted text in free pages or index segments
                agent.memory.threads.compact_storage()
    except ChatMemoryError as exc:
        return _fail(str(exc))
    if settings.retention_days == 0:
        print("AGENT_RETENTION_DAYS is 0: conversations are kept")
    verb = "would remove" if dry_run else "removed"
    print(GC_REPORT.format(verb=verb, days=settings.retention_days, **removed))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run `python -m agent`; returns the exit code."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="replace")  # a narrow terminal encoding never crashes
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "dev":
        return run_dev(args.host, args.port)
    if args.command == "gc":
        return run_gc(dry_run=args.dry_run)
    if args.command != "chat":
        parser.print_help()
        return 0
    try:
        return run_chat(args.session, args.conversation, verbose=args.verbose)
    except KeyboardInterrupt:
        return 130
