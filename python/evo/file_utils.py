"""Kernel Tuner's file_utils calls for results of evo.tune, so a Kernel Tuner script that stores
its results runs with its import changed:

    from evo.file_utils import store_output_file, store_metadata_file

store_output_file writes the T4 results file of the run the results came from (evo export-t4:
Kernel Tuner's format, with evo's status beside each entry); store_metadata_file writes what evo
recorded about the newest tuning's device and run (evo does not query the machine again).
"""
import json
import shutil
from pathlib import Path

from .tune import newest_env


def _json_name(filename):
    name = str(filename)
    return Path(name if name.endswith(".json") else name + ".json")


def store_output_file(output_filename, results, tune_params, objective="time"):
    """The T4 results of the tuning that returned `results` (an evo.tune result list)."""
    if objective != "time":
        raise ValueError(f"objective: {objective}: evo's results have one objective, time")
    env = getattr(results, "env", None)
    if env is None:
        raise ValueError("results: not the results of an evo.tune call in this process (its T4 file is written "
                         "by `evo export-t4 RUN --to FILE`)")
    missing = [k for k in tune_params if results and k not in results[0]]
    if missing:
        raise ValueError(f"tune_params: {', '.join(missing)} not among the tuning's parameters")
    path = _json_name(output_filename)
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(env["results_file"], path)
    return path


def store_metadata_file(metadata_filename):
    """What evo recorded of the newest evo.tune call's run: its device, driver, version and run."""
    env = newest_env()
    if env is None:
        raise ValueError("store_metadata_file: no evo.tune call has finished in this process")
    t4 = json.loads(Path(env["results_file"]).read_text())
    doc = {"schema_version": t4["schema_version"], "metadata": t4["metadata"],
           "evo": {k: env[k] for k in ("command", "workdir", "profile", "db", "run")}}
    path = _json_name(metadata_filename)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path
