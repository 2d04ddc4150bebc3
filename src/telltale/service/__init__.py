"""``telltale service``: run Telltale as a systemd unit (and timer), a launchd job or a Windows task.

:mod:`.spec` says what to run; :mod:`.systemd`, :mod:`.launchd` and :mod:`.windows` render it in
each init system's own format; :mod:`.manage` writes, enables, removes and inspects it.
"""
