"""tf.distribute strategies for training: one process with several devices, or several hosts.

``strategy(None)`` is TensorFlow's default strategy (no replication); ``"mirrored"`` replicates
over all local GPUs (or the CPU alone); ``"multi_worker"`` is a ``MultiWorkerMirroredStrategy``
over the hosts named in the ``TF_CONFIG`` environment variable (docs/distributed.md). Every
replica computes the same update from all-reduced gradients, so Bop's flips, the quantizers and
their stochastic-rounding generators stay identical on every replica.

Build the model under the strategy, e.g. pass :func:`edgebnn.train.train` a function that builds
it, or build it inside ``with scope(name):``. A ``MultiWorkerMirroredStrategy`` must be made
before any other TensorFlow work in the process: call ``strategy("multi_worker")`` first.
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any

from ..errors import EdgebnnError

NAMES = ("mirrored", "multi_worker")
WORKER_TIMEOUT = 600.0  # seconds a task waits for the others to start (train.worker_timeout)

_made: dict[str, Any] = {}  # one strategy per name and process (a second MultiWorkerMirroredStrategy fails)


class DistributeError(EdgebnnError):
    """A distribution strategy that cannot be made (a missing or malformed TF_CONFIG)."""


def tf_config() -> dict[str, Any]:
    """The checked ``TF_CONFIG`` of this process: {"cluster": {"worker": [...], ...}, "task": {...}}."""
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        raise DistributeError(
            "distribute: multi_worker needs the TF_CONFIG environment variable on every host "
            '(e.g. {"cluster": {"worker": ["host1:12345", "host2:12345"]}, "task": {"type": "worker", "index": 0}}); '
            "see docs/distributed.md"
        )
    try:
        config = json.loads(raw)
    except ValueError as err:
        raise DistributeError(f"distribute: TF_CONFIG is not valid JSON ({err}); see docs/distributed.md") from None
    if not isinstance(config, dict):
        raise DistributeError("distribute: TF_CONFIG must be a JSON object with keys cluster and task")
    cluster, task = config.get("cluster"), config.get("task")
    if not isinstance(cluster, dict) or not cluster:
        raise DistributeError('distribute: TF_CONFIG has no "cluster" mapping of job names to lists of host:port')
    for job, hosts in cluster.items():
        if job not in ("chief", "worker"):
            raise DistributeError(f"distribute: TF_CONFIG cluster job {job!r} is not used by multi_worker; use chief and worker")
        if not isinstance(hosts, list) or not hosts or not all(isinstance(h, str) and _is_address(h) for h in hosts):
            raise DistributeError(
                f'distribute: TF_CONFIG cluster["{job}"] must be a non-empty list of "host:port" strings, got {hosts!r}'
            )
    if "chief" in cluster and len(cluster["chief"]) != 1:
        raise DistributeError(f'distribute: TF_CONFIG cluster["chief"] must name exactly one host, got {cluster["chief"]!r}')
    if not isinstance(task, dict):
        raise DistributeError('distribute: TF_CONFIG has no "task" mapping ({"type": "worker", "index": N})')
    kind, index = task.get("type"), task.get("index")
    if kind not in cluster:
        raise DistributeError(f"distribute: TF_CONFIG task type {kind!r} is not a job of the cluster ({', '.join(cluster)})")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(cluster[kind]):
        raise DistributeError(
            f"distribute: TF_CONFIG task index {index!r} is not one of the {len(cluster[kind])} {kind} hosts "
            f"(0 to {len(cluster[kind]) - 1})"
        )
    return config


def _is_address(text: str) -> bool:
    host, sep, port = text.rpartition(":")
    return bool(sep and host and port.isdigit() and 0 < int(port) < 65536)


def strategy(name: str | None, timeout: float = WORKER_TIMEOUT):
    """The ``tf.distribute`` strategy called ``name`` (None, "mirrored" or "multi_worker"); the
    same object for the same name within a process. A multi_worker task waits at most
    ``timeout`` seconds for every task of TF_CONFIG to start."""
    import tensorflow as tf

    if name is None:
        return tf.distribute.get_strategy()
    if name not in NAMES:
        raise DistributeError(f"distribute: unknown strategy {name!r}; use null, mirrored or multi_worker")
    if name not in _made:
        if name == "mirrored":
            _made[name] = tf.distribute.MirroredStrategy()
        else:
            config = tf_config()
            _limit_registration(config, timeout)
            try:
                _made[name] = tf.distribute.MultiWorkerMirroredStrategy()
            except tf.errors.DeadlineExceededError:
                raise DistributeError(
                    f"distribute: {_task(config)} waited {timeout:.0f} s for {_others(config)} of TF_CONFIG and the cluster "
                    "did not come together; start the same edgebnn command on every host within that time (or raise "
                    "train.worker_timeout) and check that each host:port is reachable from the others"
                ) from None
            except (RuntimeError, ValueError) as err:
                raise DistributeError(
                    f"distribute: cannot start multi_worker ({str(err).splitlines()[0]}); make the strategy before any other "
                    "TensorFlow work in the process"
                ) from None
    return _made[name]


def _task(config: dict[str, Any]) -> str:
    return f"{config['task']['type']} {config['task']['index']}"


def _others(config: dict[str, Any]) -> str:
    me = (config["task"]["type"], config["task"]["index"])
    others = [f"{job} {i} ({host})" for job, hosts in config["cluster"].items() for i, host in enumerate(hosts) if (job, i) != me]
    return ", ".join(others) or "no other task"


def _limit_registration(config: dict[str, Any], timeout: float) -> None:
    """Bound how long this task waits for the whole cluster to register. TensorFlow's default is
    to wait forever inside a call that holds the interpreter, so neither Ctrl-C nor SIGTERM
    would end a task whose peers never start. MultiWorkerMirroredStrategy keeps a coordination
    service configured before it; this one is its own but for the registration timeout."""
    from .. import progress

    progress.log(f"distribute: {_task(config)} waits up to {timeout:.0f} s for {_others(config)}")
    try:
        from tensorflow.compiler.xla.tsl.protobuf import coordination_config_pb2
        from tensorflow.python.distribute import multi_worker_util
        from tensorflow.python.eager import context
        from tensorflow.python.training.server_lib import ClusterSpec
    except ImportError:  # another TensorFlow layout: its own default (no limit)
        return
    if context.context().coordination_service is not None:
        return
    cluster = ClusterSpec(config["cluster"])
    jobs = [
        coordination_config_pb2.CoordinatedJob(name=job, num_tasks=cluster.num_tasks(job))
        for job in ("chief", "worker")
        if job in cluster.jobs
    ]
    context.context().configure_coordination_service(
        service_type="standalone",
        service_leader=multi_worker_util.coordination_leader(cluster),
        coordinated_jobs=jobs,
        cluster_register_timeout_in_ms=int(timeout * 1000),
    )
    # the leader (chief, or worker 0) waits for the others' registration within that time too
    context.context().coordination_service.cluster_register_with_barrier = True


@contextlib.contextmanager
def scope(name: str | None):
    """``with scope(name): model = build()`` creates the model's variables under the strategy."""
    with strategy(name).scope():
        yield


def is_chief() -> bool:
    """True unless this process is a multi-worker task other than the chief (the chief is the
    ``chief`` task, or worker 0 when the cluster has no chief): only the chief writes the run."""
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        return True
    config = tf_config()
    task = config["task"]
    if "chief" in config["cluster"]:
        return task["type"] == "chief"
    return task["type"] == "worker" and task["index"] == 0


def check_built_under(model, name: str) -> None:
    """Refuse a model whose variables were not created under the strategy ``name``."""
    import tensorflow as tf

    wanted = strategy(name)
    variables = getattr(model, "variables", None) or []
    for v in variables[:1]:
        value = getattr(v, "value", v)
        if not (isinstance(value, tf.distribute.DistributedValues) or getattr(value, "_distribute_strategy", None) is wanted):
            raise DistributeError(
                f"distribute: model {getattr(model, 'name', '?')!r} was built outside the {name} strategy; build it inside "
                f"`with edgebnn.distribute.scope({name!r}):` or pass train() a function that builds it"
            )
