"""The queue folder's file names, shared by the training callback that fills it and the watcher that empties it.

They live apart from both so that the watcher does not import the callback (and with it transformers), and the
callback does not import the watcher.

    <queue>/<run name>/gnt_run.json                  the run record (copied once)
    <queue>/<run name>/checkpoint-<step>/            the adapter + queue_entry.json
    <queue>/<run name>/checkpoint-<step>.claim       written by the watcher that evaluates it
    <queue>/<run name>/checkpoint-<step>.done.json   written when its evaluation finished (or failed)
    <queue>/<run name>/TRAINING_DONE.json            the end marker, written on ``on_train_end``
"""

QUEUE_ENTRY = "queue_entry.json"
"""Inside a queued checkpoint: when, from which run and step it was queued; written last, so it marks it whole."""
END_MARKER = "TRAINING_DONE.json"
"""In a queued run: the training ended (its final step); a watcher stops once every run has one."""
CLAIM_SUFFIX = ".claim"
"""Beside a queued checkpoint: the watcher (host and pid) that evaluates it."""
DONE_SUFFIX = ".done.json"
"""Beside a queued checkpoint: its evaluation finished (status, seconds, result or error)."""
