"""The run side: one configuration's run, stage by stage, behind the command line (``edgebnn.cli``).

- ``config``: the run configuration's schema (pydantic; ``config_schema()`` as JSON Schema);
- ``stages``: train, freeze, export, csim, verify, synth, estimate, report, each writing its
  outputs completely or not at all; ``pipeline``: all of them in order;
- ``runfolder``: the run folder, its files and how a stage knows its inputs are current;
- ``report`` and ``plots``: report.html and its charts.

Each keeps its old path too (``edgebnn.config``, ``edgebnn.stages``, ...; see ``edgebnn``).
Importing this package imports none of them.
"""
