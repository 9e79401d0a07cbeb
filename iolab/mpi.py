"""Launch an MPI program: the argv of ``mpirun`` or ``srun``, with only the flags this machine needs.

IOR and mdtest are MPI programs; every lesson (and the Slurm helpers) starts them through
:func:`command`, so the rules live in one place:

* Open MPI refuses to run as root unless asked: ``--allow-run-as-root`` is added only when the
  caller is root (it is never needed otherwise, and other MPI flavours do not know the flag).
* Open MPI refuses to start more ranks than there are cores: ``--oversubscribe`` is added only when
  the task count exceeds the cores of this machine.
* ``srun`` needs neither; it is given ``-n`` (and ``--mpi=`` when a plugin is named).
* Open MPI keeps a session directory (``ompi.<host>.<uid>/``) under ``$TMPDIR``, ``/tmp`` by default.
  A run that is killed, or a program that exits without ``MPI_Finalize`` (``ior --version``), leaves
  it in the node's shared ``/tmp``: every launch gets :func:`runtime_env`, which puts it in the
  workspace instead.

>>> launcher_argv(4, cores=2, root=True, flavour="openmpi")
['mpirun', '-np', '4', '--allow-run-as-root', '--oversubscribe']
>>> launcher_argv(2, launcher="srun")
['srun', '-n', '2']
"""
from __future__ import annotations

import os
from collections.abc import Sequence

from . import runner

LAUNCHERS = ("mpirun", "srun")
FLAVOURS = ("openmpi", "mpich", "intel", "unknown")


def cores() -> int:
    """Cores this process may run on (the affinity mask, which a batch system may have narrowed)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def is_root() -> bool:
    return os.geteuid() == 0


def flavour_of(version_line: str | None) -> str:
    """Which MPI an ``mpirun --version`` first line belongs to: openmpi, mpich, intel or unknown."""
    if not version_line:
        return "unknown"
    v = version_line.lower()
    if "open mpi" in v or "openrte" in v or "open-mpi" in v:
        return "openmpi"
    if "intel" in v:
        return "intel"
    if "hydra" in v or "mpich" in v:
        return "mpich"
    return "unknown"


def flavour(launcher: str = "mpirun") -> str:
    """The MPI flavour of the installed ``mpirun`` ("unknown" when it is missing or unrecognised)."""
    return flavour_of(runner.tool_version(launcher))


def launcher_argv(tasks: int, *, launcher: str = "mpirun", cores: int | None = None, root: bool | None = None,
                  flavour: str | None = None, mpi_plugin: str | None = None,
                  extra: Sequence[str] = ()) -> list[str]:
    """The launcher part of the argv for ``tasks`` ranks on this machine.

    cores / root / flavour default to this machine's; pass them to build an argv for elsewhere (a
    compute node, a test). ``extra`` goes after the launcher's own flags.
    """
    if isinstance(tasks, bool) or not isinstance(tasks, int) or tasks < 1:
        raise ValueError(f"tasks must be a positive int, got {tasks!r}")
    if launcher not in LAUNCHERS:
        raise ValueError(f"launcher must be one of {', '.join(LAUNCHERS)}, got {launcher!r}")
    if isinstance(extra, str):
        raise TypeError("extra must be a list of arguments, not a string")
    if launcher == "srun":
        argv = ["srun", "-n", str(tasks)]
        if mpi_plugin:
            argv.append(f"--mpi={mpi_plugin}")
        return argv + list(extra)
    n_cores = _cores() if cores is None else cores
    as_root = is_root() if root is None else root
    kind = _flavour("mpirun") if flavour is None else flavour
    argv = ["mpirun", "-np", str(tasks)]
    if kind in ("openmpi", "unknown"):
        # Open MPI's guards; an unknown mpirun is most likely Open MPI (the commonest on clusters)
        if as_root:
            argv.append("--allow-run-as-root")
        if tasks > n_cores:
            argv.append("--oversubscribe")
    return argv + list(extra)


def command(program_argv: Sequence[str], tasks: int, *, launcher: str = "mpirun", **kwargs: object) -> list[str]:
    """The full argv: launcher, its flags, then the program and its arguments."""
    if isinstance(program_argv, str):
        raise TypeError("program_argv must be a list of arguments, never a shell string")
    if not program_argv:
        raise ValueError("program_argv is empty")
    return launcher_argv(tasks, launcher=launcher, **kwargs) + [str(a) for a in program_argv]  # type: ignore[arg-type]


# the parameters of launcher_argv shadow these names
_cores, _flavour = cores, flavour


def runtime_env(directory: str | os.PathLike[str], *, singleton: bool = False) -> dict[str, str]:
    """Environment for an MPI launch whose runtime files stay in ``directory`` (in the workspace).

    TMPDIR is where Open MPI (ORTE and PRRTE) and PMIx put their session directories; MPICH makes
    none. ``singleton=True`` (a program started without mpirun) adds Open MPI's permission to run as
    root when the caller is root, which mpirun gets as ``--allow-run-as-root``.
    """
    d = os.fspath(directory)
    os.makedirs(d, mode=0o700, exist_ok=True)
    env = {"TMPDIR": d}
    if singleton and is_root():
        env |= {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    return env


def available(launcher: str = "mpirun") -> bool:
    return runner.which(launcher) is not None
