"""Judging on Ray: the driver finds what is stored, Ray Data judges the rest on an actor pool.

The driver (``judge run --engine ray``) plans the steps, drops every step whose step key or
cache key is stored (nothing is paid twice), and hands the remaining cases to Ray Data:
``from_items`` (one item per case, with the steps it still needs) -> ``map_batches`` with an
actor pool of :class:`JudgeWorker`. Each worker has its own litellm client (or Router) and
judges up to ``concurrency`` steps at once on its own event loop; it prepares each case once
(redaction, evidence, prompts) beside its calls, so the CPU work is spread over the workers.
Results stream back as batches finish and the driver stores them (SQLite: one writer), or the
workers write them themselves (a database URL: every worker its own connection) and the driver
only counts them.

Faults: Ray restarts a killed worker and retries its batch (the retried steps are called
again, never stored twice: a judgment replaces the one of its cache key, and the driver keeps
the first result of each step). A driver killed mid-batch has stored every result it received;
a rerun finds them by step key and pays only for the rest. A model server that fails or stalls
gives the typed failures of :func:`judge.judging.runner.judge_prepared`, never a verdict.

``ray`` is imported only here, inside functions: ``judge --help`` and a plain ``judge run`` never
load it. Install it with ``pip install 'calibrated-judge[ray]'``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import math
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from judge.errors import InputError, JudgeError, UnavailableError
from judge.judging.prepare import PreparedCase, StepSpec, prepare_case
from judge.judging.runner import Outcome, Runner, RunSummary, Step, judge_prepared
from judge.providers import ModelParams
from judge.rubrics import RUBRIC_FILE, Rubric, load_rubric_dir
from judge.store import Store, store_exists
from judge.types import Case, Judgment

Writes = Literal["auto", "driver", "workers"]

#: Environment variables a worker needs that a local Ray passes on by itself, but a cluster
#: started elsewhere does not have (provider keys stay on the cluster's own nodes).
_FORWARDED_ENV = ("LITELLM_LOCAL_MODEL_COST_MAP", "JUDGE_LOCAL_THREADS", "JUDGE_MODEL_DIR")


@dataclass(frozen=True)
class RayOptions:
    """Where and how wide to judge on Ray."""

    #: None: start a local Ray sized to this machine; "auto" or "ray://host:10001": join a
    #: running cluster.
    address: str | None = None
    #: Judging workers (actors); None: one per CPU Ray reports. Each runs the run's judgments
    #: in flight (``JudgeOptions.concurrency``, ``judge run --concurrency``).
    workers: int | None = None
    #: Who writes the judgments: the driver (SQLite), the workers (a database URL), or
    #: "auto": workers when the store is a database URL, else the driver.
    writes: Writes = "auto"
    #: CPUs per worker (None: Ray's share of the machine divided among the workers); the
    #: embedded model gets this many llama.cpp threads in each worker.
    cpus_per_worker: float | None = None

    def __post_init__(self) -> None:
        if self.workers is not None and self.workers < 1:
            raise InputError("must be at least 1", field="workers")


def _require_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise InputError(
            "the Ray engine needs Ray",
            field="engine",
            hint="in the clone, pip install -e '.[ray]' (ray[data]), or judge without --engine ray",
        ) from exc
    return ray


#: The variables of Ray's token authentication (Ray 2.60 clusters need them on every node and
#: every driver).
RAY_AUTH_ENV = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


def ray_unavailable(address: str | None, err: BaseException) -> UnavailableError:
    """What to do when Ray cannot be started or joined: the cause, and the token settings a
    cluster with token authentication needs (named whether or not the cause says so)."""
    where = f"the Ray cluster at {address}" if address else "a local Ray"
    first = (str(err).strip().splitlines() or [""])[0][:400]
    auth = {name: ("set" if os.environ.get(name) else "unset") for name in RAY_AUTH_ENV}
    shown = ", ".join(f"{name} {state}" for name, state in auth.items())
    return UnavailableError(
        f"could not start or join {where}: {type(err).__name__}: {first}. A Ray 2.60 cluster "
        "started with token authentication admits only drivers and nodes that have "
        "RAY_AUTH_MODE=token and its token (RAY_AUTH_TOKEN, or the file ~/.ray/auth_token or "
        f"RAY_AUTH_TOKEN_PATH; here: {shown}): export them as on the head node (DEPLOY.md, "
        "'Ray cluster'), check the address and that the head is up (`ray status`), or judge "
        "without --engine ray. Nothing was judged."
    )


def start_ray(options: RayOptions) -> Any:
    """Connect to Ray (joining a cluster, or starting a local one sized to this machine);
    a Ray already initialised in this process is used as it is. A cluster that cannot be
    reached or refuses this driver (token authentication) is an :class:`UnavailableError`
    (exit code 2 from ``judge run``), never a traceback."""
    ray = _require_ray()
    if ray.is_initialized():
        return ray
    try:
        _init(ray, options)
        ray.cluster_resources()  # a driver the cluster refuses fails here at the latest
    except Exception as err:  # noqa: BLE001 - Ray raises ConnectionError, RuntimeError, its own
        if ray.is_initialized():
            ray.shutdown()
        raise ray_unavailable(options.address, err) from err
    return ray


def _init(ray: Any, options: RayOptions) -> None:
    env = {name: os.environ[name] for name in _FORWARDED_ENV if name in os.environ}
    if options.address is None:
        ray.init(
            num_cpus=os.cpu_count() or 1,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.ERROR,
            configure_logging=False,
            runtime_env={"env_vars": env} if env else None,
        )
    else:
        # A cluster runs this copy of the code (the same prompts and keys as here).
        modules = [str(_package_dir(name)) for name in ("judge", "calibration")]
        ray.init(
            address=options.address,
            log_to_driver=False,
            logging_level=logging.ERROR,
            configure_logging=False,
            runtime_env={"env_vars": env, "py_modules": modules},
        )


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise JudgeError(f"cannot find the {name} package to send to the cluster")
    return Path(spec.origin).parent


def _rubric_files(rubric: Rubric) -> dict[str, str]:
    """The rubric's files (its spec and prompt template), to rebuild it on any node."""
    names = {RUBRIC_FILE, rubric.spec.prompt}
    return {name: (rubric.path / name).read_text(encoding="utf-8") for name in names}


def _rebuild_rubric(files: dict[str, str], rubric_id: str, version: int, digest: str) -> Rubric:
    root = Path(tempfile.mkdtemp(prefix="judge-rubric-"))
    folder = root / rubric_id / f"v{version}"
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    rubric = load_rubric_dir(folder)
    if rubric.digest != digest:
        raise JudgeError(
            f"rubric {rubric_id}@{version} rebuilt on a worker with digest "
            f"{rubric.digest}, expected {digest}"
        )
    return rubric


class JudgeWorker:
    """A Ray Data actor: prepares and judges the cases of each batch it is given.

    One per worker process: it owns the litellm client (or Router) of that process and an
    asyncio semaphore of ``concurrency`` calls shared by the batches it runs at once."""

    def __init__(
        self,
        *,
        rubric_files: dict[str, str],
        rubric_id: str,
        rubric_version: int,
        rubric_digest: str,
        params: ModelParams,
        token_budget: int,
        concurrency: int,
        store: str | None,
        lookup: str | None,
        batch_id: str,
        threads: int | None,
    ) -> None:
        if threads:
            # The embedded model: llama.cpp threads = this worker's share of the CPUs.
            os.environ["JUDGE_LOCAL_THREADS"] = str(threads)
        self.rubric = _rebuild_rubric(rubric_files, rubric_id, rubric_version, rubric_digest)
        self.params = params
        self.token_budget = token_budget
        self.concurrency = concurrency
        self.batch_id = batch_id
        self.store = Store(store) if store else None
        #: The store to look cache keys up in before calling (a step whose step key missed may
        #: still have been judged under other inputs): the driver's, when this node reaches it.
        self.lookup = self.store or (Store(lookup) if lookup and store_exists(lookup) else None)
        self._semaphore: asyncio.Semaphore | None = None

    async def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        """Judge the batch's cases; one output row per step."""
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.concurrency)
        rows: list[dict[str, Any]] = []
        tasks = []
        for case_json, steps_json in zip(batch["case"], batch["steps"], strict=True):
            case = Case.model_validate_json(case_json)
            wanted = json.loads(steps_json)
            specs = [
                StepSpec(
                    model=s["model"], order=s["order"], sample=s["sample"], variant=s["variant"]
                )
                for s in wanted
            ]
            prepared = prepare_case(case, specs, self.rubric, self.params, self.token_budget)
            for index, exc in prepared.errors:
                rows.append(_row(wanted[index]["n"], case_row=None, error=exc))
            hits = (
                self.lookup.cached_many([p.key for p in prepared.steps])
                if self.lookup is not None
                else {}
            )
            tasks.extend(self._judge(case.id, specs, wanted, prepared, hits))
        rows.extend(await asyncio.gather(*tasks))
        if self.store is not None:
            self._write(rows)
        return {name: _column([r[name] for r in rows]) for name in COLUMNS}

    def _judge(
        self,
        case_id: str,
        specs: list[StepSpec],
        wanted: list[dict[str, Any]],
        prepared: PreparedCase,
        hits: dict[str, Judgment],
    ) -> list[Any]:
        first = True
        tasks = []
        for ready in prepared.steps:
            # The case row travels with the case's first step only.
            row_of_case = json.dumps(prepared.case_row) if first else None
            first = False
            hit = hits.get(ready.key)
            if hit is not None:
                tasks.append(_done(_cached_row(wanted[ready.index], hit, row_of_case)))
                continue
            tasks.append(
                self._one(case_id, specs[ready.index], wanted[ready.index], ready, row_of_case)
            )
        return tasks

    async def _one(
        self, case_id: str, spec: StepSpec, wanted: dict[str, Any], ready: Any, case_row: str | None
    ) -> dict[str, Any]:
        assert self._semaphore is not None
        async with self._semaphore:
            try:
                judgment, calls = await judge_prepared(
                    ready, case_id, spec, self.rubric, self.params
                )
            except JudgeError as exc:
                return _row(wanted["n"], case_row=case_row, error=exc)
        return {
            "n": wanted["n"],
            "judgment": judgment.model_dump_json(),
            "calls": json.dumps(calls),
            "case_row": case_row,
            "error": None,
            "step_key": wanted["step_key"],
            "stored": False,
            "cached": False,
        }

    def _write(self, rows: list[dict[str, Any]]) -> None:
        """Workers writing directly (a database URL): one transaction per batch."""
        assert self.store is not None
        done = [r for r in rows if r["judgment"] is not None]
        judged = {id(r): Judgment.model_validate_json(r["judgment"]) for r in done}
        self.store.put_batch(
            cases=[json.loads(r["case_row"]) for r in rows if r["case_row"]],
            judgments=[(judged[id(r)], self.batch_id) for r in done if not r["cached"]],
            calls=[c for r in done if not r["cached"] for c in json.loads(r["calls"])],
            steps=[(r["step_key"], judged[id(r)].cache_key) for r in done],
        )
        for r in done:
            r["stored"] = True


#: The columns of a worker's output batch.
COLUMNS = ("n", "judgment", "calls", "case_row", "error", "stored", "cached")


async def _done(row: dict[str, Any]) -> dict[str, Any]:
    return row


def _cached_row(wanted: dict[str, Any], hit: Judgment, case_row: str | None) -> dict[str, Any]:
    return {
        "n": wanted["n"],
        "judgment": hit.model_dump_json(),
        "calls": "[]",
        "case_row": case_row,
        "error": None,
        "step_key": wanted["step_key"],
        "stored": False,
        "cached": True,
    }


def _row(n: int, *, case_row: str | None, error: JudgeError) -> dict[str, Any]:
    return {
        "n": n,
        "judgment": None,
        "calls": None,
        "case_row": case_row,
        "error": json.dumps({"type": type(error).__name__, "message": str(error)}),
        "step_key": None,
        "stored": False,
        "cached": False,
    }


def _column(values: list[Any]) -> Any:
    import numpy as np

    column = np.empty(len(values), dtype=object)
    column[:] = values
    return column


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _error(text: str) -> JudgeError:
    """A worker's step error as a JudgeError (its type named in the message)."""
    data = json.loads(text)
    return JudgeError(f"{data['type']}: {data['message']}")


def _items(todo: list[tuple[Case, list[tuple[int, Step, str]]]]) -> list[dict[str, str]]:
    return [
        {
            "case": case.model_dump_json(),
            "steps": json.dumps(
                [
                    {
                        "n": n,
                        "model": s.model,
                        "order": s.order,
                        "sample": s.sample,
                        "variant": s.variant,
                        "step_key": key,
                    }
                    for n, s, key in mine
                ]
            ),
        }
        for case, mine in todo
    ]


def _worker_writes(store: Store, writes: Writes) -> str | None:
    address = store.address  # the location with its password: the workers connect with it
    if writes == "driver" or (writes == "auto" and "://" not in address):
        return None
    if not store_exists(address):
        raise InputError(
            f"{store.location}: workers cannot write a store that does not exist", field="writes"
        )
    return address


def run_on_ray(
    store: Store,
    steps: Sequence[Step],
    *,
    rubric: Rubric,
    params: ModelParams,
    token_budget: int | None,
    concurrency: int,
    options: RayOptions,
    on_done: Callable[[Outcome], None] | None = None,
    batch_id: str,
    threads: int | None = None,
) -> RunSummary:
    """Judge ``steps`` on Ray (see the module docstring); the same summary as the runner's."""
    summary = RunSummary(batch_id=batch_id)
    started = time.perf_counter()
    keyer = Runner(store, rubric, params, token_budget=token_budget)

    def finish(outcome: Outcome) -> None:
        summary.add(outcome)
        if on_done is not None:
            on_done(outcome)

    todo = _todo(store, keyer, steps, finish)
    if todo:
        by_n = {n: step for _, mine in todo for n, step, _ in mine}
        keys = {n: key for _, mine in todo for n, _, key in mine}
        _judge_remote(
            store,
            todo,
            by_n,
            keys,
            summary,
            finish,
            rubric=rubric,
            params=params,
            token_budget=keyer.token_budget,
            concurrency=concurrency,
            options=options,
            batch_id=batch_id,
            threads=threads,
        )
    summary.seconds = time.perf_counter() - started
    return summary


def _todo(
    store: Store, keyer: Runner, steps: Sequence[Step], finish: Callable[[Outcome], None]
) -> list[tuple[Case, list[tuple[int, Step, str]]]]:
    """Serve what the store has (by step key, then by cache key without calling); the cases
    left, each with its numbered steps and their step keys."""
    groups: dict[int, tuple[Case, list[tuple[int, Step, str]]]] = {}
    keyed = [(n, step, keyer.step_key(step)) for n, step in enumerate(steps)]
    known = store.cached_steps([key for _, _, key in keyed])
    for n, step, key in keyed:
        hit = known.get(key)
        if hit is not None:
            finish(Outcome(step, hit, cached=True))
        else:
            groups.setdefault(id(step.case), (step.case, []))[1].append((n, step, key))
    return list(groups.values())


def _judge_remote(
    store: Store,
    todo: list[tuple[Case, list[tuple[int, Step, str]]]],
    by_n: dict[int, Step],
    keys: dict[int, str],
    summary: RunSummary,
    finish: Callable[[Outcome], None],
    *,
    rubric: Rubric,
    params: ModelParams,
    token_budget: int,
    concurrency: int,
    options: RayOptions,
    batch_id: str,
    threads: int | None,
) -> None:
    ray = start_ray(options)
    from ray.data import ActorPoolStrategy, DataContext

    # Ray Data's notes (execution started and finished, progress bars off) would come between
    # the progress bar and the summary: only its errors are shown.
    for name in ("ray", "ray.data"):
        logging.getLogger(name).setLevel(logging.ERROR)
    context = DataContext.get_current()
    context.enable_progress_bars = False  # the driver shows its own bar
    context.print_on_execution_start = False
    cpus = float(ray.cluster_resources().get("CPU", os.cpu_count() or 1))
    workers = max(1, options.workers or int(cpus))
    per_worker = max(1, concurrency)
    cpus_each = options.cpus_per_worker or max(0.01, min(1.0, cpus / workers))
    # A batch is about half a worker's concurrency of steps: a worker runs a few at once,
    # so its slots stay full while one batch's last answers are awaited.
    steps_per_case = max(1, len(by_n) // len(todo))
    batch_cases = max(1, math.ceil(per_worker / 2 / steps_per_case))
    items = _items(todo)
    dataset = ray.data.from_items(
        items, override_num_blocks=max(1, min(len(items), math.ceil(len(items) / batch_cases)))
    )
    results = dataset.map_batches(
        JudgeWorker,
        batch_size=batch_cases,
        batch_format="numpy",
        compute=ActorPoolStrategy(size=workers, max_tasks_in_flight_per_actor=4),
        num_cpus=cpus_each,
        fn_constructor_kwargs={
            "rubric_files": _rubric_files(rubric),
            "rubric_id": rubric.id,
            "rubric_version": rubric.version,
            "rubric_digest": rubric.digest,
            "params": params,
            "token_budget": token_budget,
            "concurrency": per_worker,
            "store": _worker_writes(store, options.writes),
            "lookup": store.address,
            "batch_id": batch_id,
            "threads": threads or (max(1, int(cpus_each)) if cpus_each >= 1 else None),
        },
    )
    seen: set[int] = set()
    for batch in _batches(results):
        _take(store, batch, by_n, keys, seen, summary, finish, batch_id)


def _batches(results: Any) -> Iterator[dict[str, Any]]:
    yield from results.iter_batches(batch_size=None, batch_format="numpy")


def _take(
    store: Store,
    batch: dict[str, Any],
    by_n: dict[int, Step],
    keys: dict[int, str],
    seen: set[int],
    summary: RunSummary,
    finish: Callable[[Outcome], None],
    batch_id: str,
) -> None:
    """Store a batch of results (unless the workers did) and report each step once."""
    cases: list[dict[str, Any]] = []
    judgments: list[tuple[Judgment, str | None]] = []
    calls: list[dict[str, Any]] = []
    pairs: list[tuple[str, str]] = []
    outcomes: list[Outcome] = []
    for n, judgment_json, calls_json, case_json, error, stored, cached in zip(
        *(batch[name] for name in COLUMNS),
        strict=True,
    ):
        # A column that is None in every row of a batch comes back as nulls (NaN).
        n, error, case_json = int(n), _text(error), _text(case_json)
        if case_json and not stored:
            cases.append(json.loads(case_json))
        if n in seen:
            continue  # a retried batch's second answer for a step already stored
        seen.add(n)
        step = by_n[n]
        if error is not None:
            summary.errors.append((step, _error(error)))
            continue
        judgment = Judgment.model_validate_json(str(judgment_json))
        if not stored:
            if not cached:
                judgments.append((judgment, batch_id))
                calls.extend(json.loads(_text(calls_json) or "[]"))
            pairs.append((keys[n], judgment.cache_key))
        outcomes.append(Outcome(step, judgment, cached=bool(cached)))
    if cases or judgments or pairs:
        store.put_batch(cases=cases, judgments=judgments, calls=calls, steps=pairs)
    for outcome in outcomes:
        finish(outcome)
