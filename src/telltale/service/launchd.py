"""launchd: a LaunchAgent (user) or LaunchDaemon (system) property list.

``watch`` runs at load and is restarted when it exits with a failure (``KeepAlive`` /
``SuccessfulExit: false``); ``timer`` runs ``scan --once`` every ``StartInterval`` seconds.
Output goes to files in the log directory; launchd has no journal, and the unified log does
not take a job's stdout.
"""

from __future__ import annotations

import os
import plistlib
from typing import Any

from telltale.service.spec import LAUNCHD_LABEL, ServiceSpec


def plist(spec: ServiceSpec) -> dict[str, Any]:
    job: dict[str, Any] = {
        "Label": LAUNCHD_LABEL,
        "ProgramArguments": spec.argv,
        "RunAtLoad": True,
        "ProcessType": "Background",
        "LowPriorityIO": True,
        "Nice": 10,
        "Umask": 0o027 if spec.scope == "system" else 0o077,
        "StandardOutPath": os.path.join(spec.log_dir, "service.out.log"),
        "StandardErrorPath": os.path.join(spec.log_dir, "service.err.log"),
        # SIGTERM then this long before SIGKILL: time to commit the batch being read.
        "ExitTimeOut": 60,
    }
    if spec.mode == "watch":
        job["KeepAlive"] = {"SuccessfulExit": False}
        job["ThrottleInterval"] = 30
    else:
        job["StartInterval"] = spec.every
    return job


def render(spec: ServiceSpec) -> bytes:
    return plistlib.dumps(plist(spec), fmt=plistlib.FMT_XML, sort_keys=True)
