"""The checkpoint queue: evaluate checkpoints while training runs, on this or another machine sharing the disk.

- :class:`gnt.checkpoint_queue.callback.QueueCheckpointCallback`: the training side, a TrainerCallback that copies
  every saved checkpoint into the queue (recipe key ``eval_queue_dir``);
- :mod:`gnt.checkpoint_queue.watch`: the evaluation side, a watcher that claims each queued checkpoint once and
  evaluates it (``eval/watch.py``, :mod:`gnt.cli.watch`).

Nothing is imported here: the training callback must not pull the watcher's imports into every training process.
"""
