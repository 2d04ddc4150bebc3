"""Which project a Gemini CLI temp directory belongs to (``~/.gemini/tmp/<id>``).

``<id>`` is a short slug registered in ``~/.gemini/projects.json``
(``{"projects": {"<abs path>": "<slug>"}}``) with the path also in
``tmp/<slug>/.project_root``; older builds named the directory ``sha256(<abs path>)``.
Both files are small metadata written by gemini-cli, read bounded and without following
links; nothing else beside the transcripts is opened (never ``oauth_creds.json``).
"""

from __future__ import annotations

import hashlib
import os

import msgspec

from telltale.readers.files import read_small

#: ``.project_root`` holds one path; ``projects.json`` one entry per project.
_ROOT_BOUND = 4_096
_REGISTRY_BOUND = 1 << 20


class _Registry(msgspec.Struct):
    projects: dict[str, str] = {}


def project_path(tmp_root: str, project_id: str) -> str | None:
    """The project path of ``<tmp_root>/<project_id>``, or ``None`` when nothing says."""
    raw = read_small(os.path.join(tmp_root, project_id, ".project_root"), _ROOT_BOUND)
    if raw is not None:
        try:
            text = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            text = ""
        if text and "\n" not in text:
            return text
    data = read_small(os.path.join(os.path.dirname(tmp_root), "projects.json"), _REGISTRY_BOUND)
    if data is None:
        return None
    try:
        registry = msgspec.json.decode(data, type=_Registry)
    except msgspec.DecodeError:
        return None
    hashed = len(project_id) == 64
    for path, slug in registry.projects.items():
        if slug == project_id:
            return path
        if hashed and hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest() == project_id:
            return path
    return None
