"""What every command shares: global options, the error boundary and the consoles."""

from __future__ import annotations

import inspect
import math
import os
import select
import signal
import sys
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.status import Status
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
from typer.core import TyperGroup
from typer.exceptions import Abort, Exit

from compare import inert, outputfile
from compare.errors import EXIT_FAILED, EXIT_INTERNAL, EXIT_USAGE, CompareError, first_line
from compare.paths import DEFAULT_APP, cache_dir

if TYPE_CHECKING:  # imported where used: `compare cluster ...` needs neither (nor pydantic)
    from compare.approaches import CommandOption
    from compare.cluster import ClusterTarget
    from compare.webapp import WebApp

console = Console(soft_wrap=True, highlight=False)
err_console = Console(stderr=True, soft_wrap=True, highlight=False)

KubeconfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--kubeconfig",
        help="Use this kubeconfig instead of the embedded cluster.",
        dir_okay=False,
    ),
]
AppOpt = Annotated[
    Path | None,
    typer.Option(
        "--app",
        help=f"WebApp manifest (default {DEFAULT_APP.name} from examples/).",
        dir_okay=False,
    ),
]
ContextOpt = Annotated[
    str | None, typer.Option("--context", help="Context in the kubeconfig to use.")
]


@dataclass
class GlobalOptions:
    kubeconfig: Path | None = None
    context: str | None = None


class ErrorBoundaryGroup(TyperGroup):
    """Turns CompareError (from any nested command) into one line on stderr and its exit code,
    and usage errors (a wrong flag or value) into one line too, instead of click's usage box."""

    def main(  # type: ignore[override]
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            with sigterm_as_interrupt():
                result = super().main(
                    args=args,
                    prog_name=prog_name,
                    complete_var=complete_var,
                    standalone_mode=False,
                    **extra,
                )
                sys.stdout.flush()  # a reader gone (`| head -0`) is found here, not at exit
            code = result if isinstance(result, int) else 0
        except NoArgsIsHelpError as exc:
            exc.show()
            code = EXIT_USAGE
        except UsageError as exc:
            where = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
            print_error(f"{exc.format_message()}{where}")
            code = exc.exit_code
        except ClickException as exc:
            print_error(exc.format_message())
            code = exc.exit_code
        except Abort:
            err_console.print("aborted")
            code = EXIT_FAILED
        except CompareError as exc:  # raised while parsing options (a callback)
            print_error(exc.message)
            code = exc.exit_code
        except (KeyboardInterrupt, EOFError):
            err_console.print("interrupted")
            code = 130
        except BrokenPipeError as exc:
            code = EXIT_FAILED if _stdout_gone() else _unexpected(exc)
        except Exception as exc:
            code = _lost_cluster(exc) or _unexpected(exc)
        if standalone_mode:
            sys.exit(code)
        return code

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except CompareError as exc:
            print_error(exc.message)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            err_console.print("interrupted")
            raise typer.Exit(130) from None
        except (Exit, Abort, ClickException):
            raise
        except BrokenPipeError:
            raise  # `main` tells a closed stdout from another pipe
        except Exception as exc:
            raise typer.Exit(_lost_cluster(exc) or _unexpected(exc)) from None


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM is handled like Ctrl-C by every command (deploy and undeploy roll back, a run
    saves and cleans up, `cluster up` stops what it started): a KeyboardInterrupt."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (an embedding caller): its signals are its own
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stdout_gone() -> bool:
    """Whether stdout is a pipe whose reader has gone (`compare report | head -0`): then the
    command ends quietly with exit 1, as `cat` does, instead of an "unexpected" error. Its
    descriptor is pointed at /dev/null, so the interpreter's last flush cannot fail again."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    if not any(events & select.POLLERR for _, events in poller.poll(0)):
        return False
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, fd)
    os.close(null)
    return True


def print_error(message: str) -> None:
    """`error: <message>` on stderr, one line; the message is text, never rich markup (a
    `[a-z]` in a pattern or `[webapp]` in a path stays as it is) and never a control
    character (`compare.inert.terminal`: a newline or an ESC in a file name is shown escaped)."""
    err_console.print(
        f"[bold red]error:[/] {inert.terminal(message)}", highlight=False, soft_wrap=True
    )


def print_warning(text: str) -> None:
    """A line on stderr, as inert text (never rich markup, never a control character)."""
    err_console.print(inert.visible(text), markup=False)


def spinner(text: str) -> Status:
    """A spinner line on stdout while work runs, its text inert (`compare.inert.terminal`)."""
    return console.status(inert.terminal(text))


def say(text: str) -> None:
    """A line on stdout, as inert text: every line the CLI prints that holds a string from a
    file, a cluster or the environment (a name, a path, a context, an error) goes through this
    or `compare.inert` (`compare.inert.visible`: never rich markup, never a control character)."""
    console.print(inert.visible(text), markup=False)


def log_dir() -> Path:
    return cache_dir() / "logs"


def _lost_cluster(exc: BaseException) -> int | None:
    """A connection to the API server that failed where the core did not expect it (the
    cluster stopped mid-run: `compare cluster down` in another terminal): a cluster problem,
    exit 2 in one line, not an "unexpected" error. None when `exc` is something else."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        # urllib3's errors (the Kubernetes client's transport), by module: this layer does
        # not import the client; a refused or reset connection is an OSError of its own.
        if type(current).__module__.split(".")[0] == "urllib3" or isinstance(
            current, ConnectionError
        ):
            print_error(
                f"lost the connection to the cluster ({first_line(current, typed=False)});"
                " was it stopped (`compare cluster down`) or is it unreachable?"
            )
            return EXIT_USAGE
        current = current.__cause__ or current.__context__
    return None


def _unexpected(exc: BaseException) -> int:
    """Any exception the core did not turn into a CompareError: one line on the terminal, the
    traceback in a log file whose path the line names. Never a traceback on the terminal."""
    text = "".join(traceback.format_exception(exc))
    where = "(no log written)"
    try:
        directory = log_dir()
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = directory / f"compare-error-{stamp}-{os.getpid()}.log"
        with outputfile.create_new(path) as handle:  # O_EXCL: never over anything
            # backslashreplace: an argument or message may hold undecodable bytes (LANG=C).
            log = f"compare {' '.join(sys.argv[1:])}\n{text}"
            handle.write(log.encode("utf-8", "backslashreplace"))
        where = f"(traceback in {path})"
    except CompareError as problem:
        where = f"(no log written: {problem.message})"
    except OSError as problem:
        where = f"(no log written: {problem.strerror or problem})"
    print_error(f"unexpected {first_line(exc)} {where}")
    return EXIT_INTERNAL


# -- checks of option values --------------------------------------------------------------


def finite(low: float, high: float, unit: str = "s") -> Any:
    """A typer callback: the float must be a finite number in [low, high] (`inf`, `nan` and
    `1e9` are refused: they would reach results.json as invalid JSON or never end)."""

    def check(ctx: typer.Context, param: typer.CallbackParam, value: float | None) -> Any:
        if value is None:
            return value
        if not math.isfinite(value) or not low <= value <= high:
            flag = param.opts[0] if param.opts else param.name
            raise typer.BadParameter(
                f"{value:g} is not in the range {low:g} to {high:g} {unit}", param_hint=flag
            )
        return value

    return check


def not_empty(ctx: typer.Context, param: typer.CallbackParam, value: str | None) -> Any:
    """A typer callback: a name given on the command line is never empty. An empty `--name`
    or `-n` must not fall back to a default - for a delete that would widen its scope (an empty
    name lists the whole collection)."""
    if value is not None and not value.strip():
        flag = param.opts[0] if param.opts else param.name
        raise typer.BadParameter("must not be empty", param_hint=flag)
    return value


# Namespaces of the cluster itself: a WebApp deployed (and later undeployed, with its
# namespace-wide waits and rollbacks) there could disturb the control plane's own objects.
SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")


def refuse_system_namespace(namespace: str) -> str:
    """Deploys and undeploys never act in a system namespace; `default` is allowed (a shared
    namespace: only what the command itself made is ever removed there) with a note."""
    if namespace in SYSTEM_NAMESPACES:
        raise CompareError(
            f"namespace {namespace!r}: a system namespace of the cluster; choose your own"
        )
    if namespace == "default":
        print_warning(
            "note: namespace 'default' is shared; only what this command makes is removed there"
        )
    return namespace


def resolve_namespace(given: str | None, webapp: WebApp, app: Path | None, default: str) -> str:
    """The namespace of a deploy: `-n`, else the file's metadata.namespace, else `default`.

    A file that names a namespace and a `-n` that names another contradict each other: that is
    an error, never a silent override."""
    own = webapp.metadata.namespace
    if given is not None and own is not None and given != own:
        raise CompareError(
            f"{app or DEFAULT_APP}: metadata.namespace {own!r} conflicts with -n {given!r}"
            " (drop one of them)"
        )
    if given is not None:
        return given
    return own or default


def cluster_from(
    ctx: typer.Context,
    kubeconfig: Path | None = None,
    context: str | None = None,
    *,
    start_embedded: bool = True,
) -> ClusterTarget:
    """Command-level --kubeconfig/--context win over the root-level ones."""
    from compare.cluster import resolve_target

    root = ctx.find_root().obj
    glob = root if isinstance(root, GlobalOptions) else GlobalOptions()
    return resolve_target(
        kubeconfig or glob.kubeconfig,
        context or glob.context,
        start_embedded=start_embedded,
    )


# -- the options an approach declares (`compare.approaches.CommandOption`) ------------------


def keyword(
    name: str, annotation: Any, default: Any = inspect.Parameter.empty
) -> inspect.Parameter:
    """A keyword parameter of a command whose signature is built (`__signature__`)."""
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default
    )


def option_annotation(option: CommandOption) -> Any:
    """An approach's option (`CommandOption`) as Typer reads it: its type and `typer.Option`."""
    kind: Any = option.kind if option.default is not None else option.kind | None
    extra: dict[str, Any] = {}
    if option.bounds is not None:
        extra["callback"] = finite(*option.bounds)
    elif option.kind is str:
        extra["callback"] = not_empty
    if option.kind is Path:
        extra["dir_okay"] = False
    return Annotated[kind, typer.Option(*option.flags, help=option.help, **extra)]
