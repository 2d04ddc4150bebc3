"""Telltale's own configuration: where it lives (:mod:`.roots`) and how its YAML is read (:mod:`.yamlfile`).

Every configuration file is found through :func:`telltale.config.roots.resolve_roots`, so the
profile, ``--config-dir`` and ``--no-local-config`` mean the same thing for every file kind.
"""
