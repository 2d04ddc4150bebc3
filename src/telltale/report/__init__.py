"""``telltale report``: one self-contained HTML page built from the read-side index.

``data`` gathers what the page shows (overview, sessions, timelines, detections) through
the index API and the read side's filters, every string passed through the redactor;
``timeline`` turns a session's log lines into compact rows; ``render`` embeds the data
as JSON in a page whose script draws it, with no network request of any kind.
"""
