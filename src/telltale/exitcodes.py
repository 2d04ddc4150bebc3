"""The exit codes of every command, in one place (README and ``--help`` show this table).

A scheduler, a service manager or a SIEM's collector decides from the code alone whether
to retry (75), page someone (1), fix a command line (2) or carry on (0).
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    #: The run did its job; warnings (skipped records, failing outputs, discovery issues
    #: with usable stores left) are in the summary and the health events.
    OK = 0
    #: The run could not complete: state damage, disk full, internal error.
    FAILED = 1
    #: Usage or configuration error (bad flags, config or rules, bad ``--root``, refused
    #: log or state path): nothing was written.
    USAGE = 2
    #: Only with ``scan --fail-on-delivery`` (a remote output failed or is blocked) or
    #: ``scan --strict`` (any warning: skipped records, failed stores, discovery issues).
    WARNINGS = 3
    #: The state's writer lock is held by another writer (EX_TEMPFAIL: try again later).
    LOCKED = 75
    #: Interrupted by SIGINT (128 + 2); committed work stays committed.
    SIGINT = 130
    #: Interrupted by SIGTERM (128 + 15); committed work stays committed.
    SIGTERM = 143


#: The table as shown at the end of ``telltale --help`` (and in the README).
EPILOG = """exit codes:
  0    the run did its job; warnings are in the summary and health events
  1    the run could not complete: state damage, disk full, internal error
  2    usage or configuration error (bad flags, config, rules, --root, refused
       log or state path); nothing written
  3    only with --fail-on-delivery or --strict: an output failed or warnings
  75   the state database is locked by another writer (try again, or --wait-lock)
  130  interrupted by SIGINT; 143 by SIGTERM (committed work stays committed)
"""
