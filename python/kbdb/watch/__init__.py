"""Watch: keep folders fresh by following their file changes (docs/watch.md)."""

from kbdb.watch.watcher import DEBOUNCE_MS, STEP_MS, Watcher, check_folders

__all__ = ["DEBOUNCE_MS", "STEP_MS", "Watcher", "check_folders"]
