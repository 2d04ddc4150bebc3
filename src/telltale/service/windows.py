"""Windows Task Scheduler: a task definition (the XML ``schtasks /Create /XML`` takes).

``watch`` starts at boot (system, as LocalSystem) or at logon (user) and is restarted on
failure; ``timer`` repeats ``scan --once`` every ``every`` seconds, never two at once.
The element order and types follow the Task Scheduler 1.2 schema
(``http://schemas.microsoft.com/windows/2004/02/mit/task``); tests validate the output
against tests/fixtures/service/task-subset.xsd, a schema of the subset written here.
"""

from __future__ import annotations

import subprocess
from xml.etree import ElementTree as ET

from telltale.service.spec import NAME, ServiceSpec

TASK_NS = "http://schemas.microsoft.com/windows/2004/02/mit/task"
#: LocalSystem's well-known SID: the account a host-wide task runs as.
LOCAL_SYSTEM = "S-1-5-18"
#: A fixed past start for repetition triggers (Task Scheduler needs one; it is not a schedule).
START_BOUNDARY = "2024-01-01T00:00:00"


def _iso(seconds: int) -> str:
    if seconds % 3600 == 0:
        return f"PT{seconds // 3600}H"
    if seconds % 60 == 0:
        return f"PT{seconds // 60}M"
    return f"PT{seconds}S"


def _sub(parent: ET.Element, tag: str, text: str | None = None) -> ET.Element:
    el = ET.SubElement(parent, f"{{{TASK_NS}}}{tag}")
    if text is not None:
        el.text = text
    return el


def task(spec: ServiceSpec, user_id: str | None = None) -> ET.Element:
    ET.register_namespace("", TASK_NS)
    root = ET.Element(f"{{{TASK_NS}}}Task", {"version": "1.2"})
    info = _sub(root, "RegistrationInfo")
    _sub(info, "Description", spec.description)
    _sub(info, "URI", f"\\{NAME}")
    triggers = _sub(root, "Triggers")
    if spec.mode == "watch":
        trigger = _sub(triggers, "BootTrigger" if spec.scope == "system" else "LogonTrigger")
        _sub(trigger, "Enabled", "true")
        if spec.scope == "user" and user_id:
            _sub(trigger, "UserId", user_id)
    else:
        trigger = _sub(triggers, "TimeTrigger")
        repetition = _sub(trigger, "Repetition")
        _sub(repetition, "Interval", _iso(spec.every))
        _sub(repetition, "StopAtDurationEnd", "false")
        _sub(trigger, "StartBoundary", START_BOUNDARY)
        _sub(trigger, "Enabled", "true")
    principal = _sub(_sub(root, "Principals"), "Principal", None)
    principal.set("id", "Author")
    if spec.scope == "system":
        _sub(principal, "UserId", LOCAL_SYSTEM)
        _sub(principal, "RunLevel", "HighestAvailable")
    else:
        if user_id:
            _sub(principal, "UserId", user_id)
        _sub(principal, "LogonType", "InteractiveToken")
        _sub(principal, "RunLevel", "LeastPrivilege")
    settings = _sub(root, "Settings")
    _sub(settings, "MultipleInstancesPolicy", "IgnoreNew")
    _sub(settings, "DisallowStartIfOnBatteries", "false")
    _sub(settings, "StopIfGoingOnBatteries", "false")
    _sub(settings, "StartWhenAvailable", "true")
    if spec.mode == "watch":
        restart = _sub(settings, "RestartOnFailure")
        _sub(restart, "Interval", "PT1M")
        _sub(restart, "Count", "999")
    _sub(settings, "Enabled", "true")
    _sub(settings, "ExecutionTimeLimit", "PT0S" if spec.mode == "watch" else "PT1H")
    _sub(settings, "Priority", "7")
    actions = _sub(root, "Actions")
    actions.set("Context", "Author")
    exec_ = _sub(actions, "Exec")
    argv = spec.argv
    _sub(exec_, "Command", argv[0])
    _sub(exec_, "Arguments", subprocess.list2cmdline(argv[1:]))
    return root


def render(spec: ServiceSpec, user_id: str | None = None) -> bytes:
    """UTF-16 with a BOM, as schtasks writes and reads task files."""
    root = task(spec, user_id)
    ET.indent(root)
    text = ET.tostring(root, encoding="unicode")
    return ('<?xml version="1.0" encoding="UTF-16"?>\n' + text + "\n").encode("utf-16")
