"""The local index: what the read-side commands answer from, without reading the log.

It lives in the scan's state database and is kept by the scan in the same transaction
that commits cursors (:mod:`telltale.index.upkeep`), so it is exactly as true as the
log; ``telltale index rebuild`` derives it again from the log (:mod:`.rebuild`). One
module per question reads it (:mod:`.sessions`, :mod:`.usage`, :mod:`.detections`,
:mod:`.status`, :mod:`.timeline`), over read-only connections (:mod:`.db`), so reading
never blocks a scan.
"""
